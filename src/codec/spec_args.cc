#include "codec/spec_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/text_list.h"
#include "hycc/error.h"

namespace hycc::codec {

SpecArgs SpecArgs::parse(std::string_view spec) {
  SpecArgs args;
  args.spec_ = std::string(spec);
  const size_t colon = spec.find(':');
  args.name_ = std::string(trim_blanks(spec.substr(0, colon)));
  if (args.name_.empty()) {
    throw InvalidArgument(tagged("codec", "empty codec name in spec '", spec, "'"));
  }
  if (colon == std::string_view::npos) return args;
  for (std::string_view item : comma_items(spec.substr(colon + 1))) {
    item = trim_blanks(item);
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos || eq == 0) {
      throw InvalidArgument(tagged("codec", "malformed parameter '", item, "' in spec '", spec,
                                   "': expected KEY=VALUE"));
    }
    std::string key(trim_blanks(item.substr(0, eq)));
    std::string value(trim_blanks(item.substr(eq + 1)));
    if (args.has(key)) {
      throw InvalidArgument(
          tagged("codec", "parameter '", key, "' given twice in spec '", spec, "'"));
    }
    args.kv_.emplace_back(std::move(key), std::move(value));
    args.used_.push_back(false);
  }
  return args;
}

bool SpecArgs::has(std::string_view key) const {
  for (const auto& [k, v] : kv_) {
    if (k == key) return true;
  }
  return false;
}

const std::string* SpecArgs::find(std::string_view key) {
  for (size_t i = 0; i < kv_.size(); ++i) {
    if (kv_[i].first == key) {
      used_[i] = true;
      return &kv_[i].second;
    }
  }
  return nullptr;
}

void SpecArgs::fail(std::string_view key, const std::string& value,
                    std::string_view expected) const {
  throw InvalidArgument(tagged("codec", "bad value '", value, "' for '", key, "' in spec '", spec_,
                               "': expected ", expected));
}

int SpecArgs::get_int(std::string_view key, int fallback, int lo, int hi) {
  const std::string* v = find(key);
  if (v == nullptr) return fallback;
  const std::string expected = detail::concat("an integer in [", lo, ", ", hi, "]");
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0 || parsed < lo || parsed > hi) {
    fail(key, *v, expected);
  }
  return static_cast<int>(parsed);
}

double SpecArgs::get_double(std::string_view key, double fallback, double lo, double hi) {
  return get_optional_double(key, lo, hi).value_or(fallback);
}

std::optional<double> SpecArgs::get_optional_double(std::string_view key, double lo, double hi) {
  const std::string* v = find(key);
  if (v == nullptr) return std::nullopt;
  const std::string expected = detail::concat("a number in [", lo, ", ", hi, "]");
  char* end = nullptr;
  errno = 0;
  const double parsed = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || errno != 0 || !std::isfinite(parsed) || parsed < lo ||
      parsed > hi) {
    fail(key, *v, expected);
  }
  return parsed;
}

std::string SpecArgs::get_choice(std::string_view key, std::string_view fallback,
                                 std::initializer_list<std::string_view> allowed) {
  const std::string* v = find(key);
  if (v == nullptr) return std::string(fallback);
  std::string expected = "one of ";
  for (auto a : allowed) {
    if (*v == a) return *v;
    expected += detail::concat(expected.size() > 7 ? "|" : "", a);
  }
  fail(key, *v, expected);
}

void SpecArgs::finish(std::string_view accepted) const {
  for (size_t i = 0; i < kv_.size(); ++i) {
    if (!used_[i]) {
      throw InvalidArgument(tagged("codec", "unknown parameter '", kv_[i].first, "' in spec '",
                                   spec_, "'; ", name_, " accepts: ", accepted));
    }
  }
}

}  // namespace hycc::codec
