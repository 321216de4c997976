// The preset policies: the text of configs/policies/*.toml, built into the library (the build
// generates presets.cc from those files), so presets work wherever the library is.
#pragma once

#include <span>
#include <string_view>

namespace hycc::policy {

struct PresetText {
  std::string_view name;  // the file name without .toml
  std::string_view toml;
};

std::span<const PresetText> presets();

}  // namespace hycc::policy
