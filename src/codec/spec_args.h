// Parser of codec spec strings: NAME[:KEY=VALUE[,KEY=VALUE...]].
// Getters validate values and ranges; finish() rejects keys that no getter asked for, so a typo
// ("quant:bit=4") is an error that names the spec and the accepted keys, never a silent default.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hycc::codec {

class SpecArgs {
 public:
  // Splits the spec; throws InvalidArgument for empty names, missing '=', duplicate keys.
  static SpecArgs parse(std::string_view spec);

  const std::string& name() const { return name_; }
  const std::string& spec() const { return spec_; }
  bool has(std::string_view key) const;

  int get_int(std::string_view key, int fallback, int lo, int hi);
  double get_double(std::string_view key, double fallback, double lo, double hi);
  std::optional<double> get_optional_double(std::string_view key, double lo, double hi);
  std::string get_choice(std::string_view key, std::string_view fallback,
                         std::initializer_list<std::string_view> allowed);

  // Throws InvalidArgument if a key was not consumed; `accepted` describes the valid keys.
  void finish(std::string_view accepted) const;

 private:
  const std::string* find(std::string_view key);
  [[noreturn]] void fail(std::string_view key, const std::string& value,
                         std::string_view expected) const;

  std::string spec_;
  std::string name_;
  std::vector<std::pair<std::string, std::string>> kv_;
  std::vector<bool> used_;
};

}  // namespace hycc::codec
