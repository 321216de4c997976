#include "toml_fields.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "hycc/error.h"

namespace hycc::sim {
namespace {

constexpr const char* kBandwidthUnits = "a number and Gbit/s, Mbit/s, GB/s or MB/s";
constexpr const char* kDurationUnits = "a number and s, ms, us or ns";

toml::table parse_document(std::string_view text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw InvalidArgument(tagged("sim", source, ":", e.source().begin.line, ": ", e.description()));
  }
}

// Splits "100 Gbit/s" into 100 and "Gbit/s" (the space is optional).
bool split_number_unit(std::string_view text, double& value, std::string_view& unit) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return false;
  unit = std::string_view(ptr, static_cast<size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  while (!unit.empty() && unit.back() == ' ') unit.remove_suffix(1);
  return true;
}

}  // namespace

std::optional<double> to_bandwidth(std::string_view text) {
  double v = 0;
  std::string_view unit;
  if (!split_number_unit(text, v, unit)) return std::nullopt;
  if (unit == "Gbit/s") return v * 1e9 / 8;
  if (unit == "Mbit/s") return v * 1e6 / 8;
  if (unit == "GB/s") return v * 1e9;
  if (unit == "MB/s") return v * 1e6;
  return std::nullopt;
}

std::optional<double> to_duration(std::string_view text) {
  double v = 0;
  std::string_view unit;
  if (!split_number_unit(text, v, unit)) return std::nullopt;
  if (unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  return std::nullopt;
}

double parse_bandwidth(std::string_view text, std::string_view what) {
  if (const auto v = to_bandwidth(text)) return *v;
  throw InvalidArgument(
      tagged("sim", "bad bandwidth '", text, "' for ", what, ": expected ", kBandwidthUnits));
}

double parse_duration(std::string_view text, std::string_view what) {
  if (const auto v = to_duration(text)) return *v;
  throw InvalidArgument(
      tagged("sim", "bad duration '", text, "' for ", what, ": expected ", kDurationUnits));
}

TomlFields::TomlFields(std::string_view text, std::string source)
    : owned_(parse_document(text, source)), table_(owned_), source_(std::move(source)) {}

TomlFields::TomlFields(const toml::table& table, std::string source, std::string prefix)
    : table_(table), source_(std::move(source)), prefix_(std::move(prefix)) {}

std::string TomlFields::name(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

void TomlFields::fail(std::string_view key, const std::string& what) const {
  const toml::node* n = table_.get(key);
  const auto line = n != nullptr ? n->source().begin.line : table_.source().begin.line;
  throw InvalidArgument(tagged("sim", source_, ":", line, ": ", what));
}

void TomlFields::require_known(std::initializer_list<std::string_view> known) const {
  for (auto&& [key, value] : table_) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key.str() == k;
    if (ok) continue;
    std::ostringstream list;
    for (std::string_view k : known) list << (list.tellp() > 0 ? ", " : "") << k;
    const auto line = key.source().begin.line;
    throw InvalidArgument(tagged("sim", source_, ":", line, ": unknown key '", name(key.str()),
                                 "'; expected ", list.str()));
  }
}

const toml::node& TomlFields::node(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (n == nullptr) fail(key, detail::concat("missing key '", name(key), "'"));
  return *n;
}

std::string TomlFields::text(std::string_view key) const {
  const toml::node& n = node(key);
  if (!n.is_string()) fail(key, detail::concat("'", name(key), "' must be a string"));
  return std::string(*n.value<std::string_view>());
}

std::string TomlFields::text(std::string_view key, std::string fallback) const {
  return has(key) ? text(key) : fallback;
}

long TomlFields::integer(std::string_view key, long min, long max) const {
  const toml::node& n = node(key);
  if (!n.is_integer()) fail(key, detail::concat("'", name(key), "' must be an integer"));
  const int64_t v = *n.value<int64_t>();
  if (v < min || v > max) {
    fail(key, detail::concat("'", name(key), "' = ", v, " is outside [", min, ", ", max, "]"));
  }
  return static_cast<long>(v);
}

long TomlFields::integer(std::string_view key, long min, long max, long fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

double TomlFields::number(std::string_view key, double min, double max) const {
  const toml::node& n = node(key);
  if (!n.is_number()) fail(key, detail::concat("'", name(key), "' must be a number"));
  const double v = *n.value<double>();
  if (!(v >= min && v <= max)) {
    fail(key, detail::concat("'", name(key), "' = ", v, " is outside [", min, ", ", max, "]"));
  }
  return v;
}

double TomlFields::number(std::string_view key, double min, double max, double fallback) const {
  return has(key) ? number(key, min, max) : fallback;
}

bool TomlFields::boolean(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const toml::node& n = node(key);
  if (!n.is_boolean()) fail(key, detail::concat("'", name(key), "' must be true or false"));
  return *n.value<bool>();
}

double TomlFields::bandwidth(std::string_view key) const {
  const std::string s = text(key);
  if (const auto v = to_bandwidth(s)) return *v;
  fail(key,
       detail::concat("bad bandwidth '", s, "' for ", name(key), ": expected ", kBandwidthUnits));
}

double TomlFields::duration(std::string_view key) const {
  const std::string s = text(key);
  if (const auto v = to_duration(s)) return *v;
  fail(key,
       detail::concat("bad duration '", s, "' for ", name(key), ": expected ", kDurationUnits));
}

std::vector<std::string> TomlFields::texts(std::string_view key) const {
  const toml::node& n = node(key);
  if (n.is_string()) return {text(key)};
  const toml::array* a = n.as_array();
  std::vector<std::string> out;
  if (a != nullptr) {
    for (const toml::node& item : *a) {
      if (!item.is_string()) break;
      out.emplace_back(*item.value<std::string_view>());
    }
    if (out.size() == a->size()) return out;
  }
  fail(key, detail::concat("'", name(key), "' must be a string or a list of strings"));
}

}  // namespace hycc::sim
