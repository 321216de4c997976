// The simulator's configuration files (configs/models, clusters, layouts, experiments,
// sim-policies and codec-figures), built into the program so that presets work wherever it runs.
// The build generates embedded_configs.cc from those folders (cmake/EmbedSimConfigs.cmake).
#pragma once

#include <span>
#include <string_view>

namespace hycc::sim {

struct EmbeddedConfig {
  std::string_view path;  // relative to configs/: "models/neox20b.toml"
  std::string_view text;
};

std::span<const EmbeddedConfig> embedded_configs();

}  // namespace hycc::sim
