#include "policy/comm_names.h"

#include <array>

#include "common/text_list.h"
#include "hycc/error.h"

namespace hycc {
namespace {

// The communicator names dimension_of() turns into dimensions.
constexpr std::array<std::string_view, 5> kDimensionNames = {"dp", "tp", "pp", "zero", "embedding"};

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

CommNames CommNames::parse(std::string_view spec, std::string_view setting) {
  CommNames out;
  for (const std::string_view item : comma_items(spec)) {
    if (trimmed(item).empty()) continue;
    const size_t equals = item.find('=');
    const std::string_view name = trimmed(item.substr(0, equals));
    const std::string_view dimension =
        equals == std::string_view::npos ? std::string_view{} : trimmed(item.substr(equals + 1));
    if (equals == std::string_view::npos || name.empty() || dimension.empty() ||
        dimension.find('=') != std::string_view::npos) {
      throw InvalidArgument(tagged("policy", setting, ": '", trimmed(item),
                                   "' is not NAME=DIMENSION (a communicator name, then one of "
                                   "dp, tp, pp, zero, embedding)"));
    }
    bool known = false;
    for (std::string_view d : kDimensionNames) known = known || d == dimension;
    if (!known) {
      throw InvalidArgument(tagged("policy", setting, ": '", name, "=", dimension, "': '",
                                   dimension,
                                   "' is not a dimension; expected dp, tp, pp, zero or embedding"));
    }
    if (!out.dimensions_.emplace(std::string(name), std::string(dimension)).second) {
      throw InvalidArgument(tagged("policy", setting, ": the name '", name, "' is listed twice"));
    }
  }
  return out;
}

const std::string& CommNames::apply(const std::string& name) const {
  const auto it = dimensions_.find(name);
  return it == dimensions_.end() ? name : it->second;
}

}  // namespace hycc
