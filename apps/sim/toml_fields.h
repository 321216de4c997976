// Reading the simulator's TOML files: every value is checked for its type and range, every key
// must be known, and every error names the file, the line and the key ("[sim] neox.toml:4: ...").
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace hycc::sim {

class TomlFields {
 public:
  // Parses `text`; `source` names it in errors. Throws InvalidArgument on a syntax error.
  TomlFields(std::string_view text, std::string source);
  // A sub-table of another document (`[dp]`), reported under the same source.
  TomlFields(const toml::table& table, std::string source, std::string prefix);

  const toml::table& table() const { return table_; }
  const std::string& source() const { return source_; }
  bool has(std::string_view key) const { return table_.contains(key); }

  // Throws for the first key not in `known`, listing the known keys.
  void require_known(std::initializer_list<std::string_view> known) const;

  // Typed getters: `key` is required unless a fallback is given. Integers and floats must lie in
  // [min, max].
  std::string text(std::string_view key) const;
  std::string text(std::string_view key, std::string fallback) const;
  long integer(std::string_view key, long min, long max) const;
  long integer(std::string_view key, long min, long max, long fallback) const;
  double number(std::string_view key, double min, double max) const;
  double number(std::string_view key, double min, double max, double fallback) const;
  bool boolean(std::string_view key, bool fallback) const;
  // A bandwidth as a string with its unit: "100 Gbit/s", "75 GB/s", "800 Mbit/s", "500 MB/s"
  // (G = 1e9, M = 1e6). Returns bytes per second.
  double bandwidth(std::string_view key) const;
  // A time as a string with its unit: "5 us", "1.5 ms", "0 s". Returns seconds.
  double duration(std::string_view key) const;
  // A list of strings (a single string is a list of one).
  std::vector<std::string> texts(std::string_view key) const;

  // Throws InvalidArgument "[sim] source:line: <what>" at the line of `key` (or the table).
  [[noreturn]] void fail(std::string_view key, const std::string& what) const;

 private:
  const toml::node& node(std::string_view key) const;
  std::string name(std::string_view key) const;  // "dp.ratio" inside [dp]

  toml::table owned_;
  const toml::table& table_;
  std::string source_;
  std::string prefix_;
};

// A bandwidth such as "100 Gbit/s" in bytes per second; nullopt if `text` is not one.
std::optional<double> to_bandwidth(std::string_view text);
// A duration such as "5 us" in seconds; nullopt if `text` is not one.
std::optional<double> to_duration(std::string_view text);
// The same, throwing InvalidArgument naming `what` (a flag or key) and the accepted units.
double parse_bandwidth(std::string_view text, std::string_view what);
double parse_duration(std::string_view text, std::string_view what);

}  // namespace hycc::sim
