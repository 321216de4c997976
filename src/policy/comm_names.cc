#include "policy/comm_names.h"

#include "common/text_list.h"
#include "hycc/error.h"
#include "hycc/policy.h"

namespace hycc {

CommNames CommNames::parse(std::string_view spec, std::string_view setting) {
  CommNames out;
  for (const std::string_view item : comma_items(spec)) {
    if (trim_blanks(item).empty()) continue;
    const size_t equals = item.find('=');
    const std::string_view name = trim_blanks(item.substr(0, equals));
    const std::string_view dimension = equals == std::string_view::npos
                                           ? std::string_view{}
                                           : trim_blanks(item.substr(equals + 1));
    if (equals == std::string_view::npos || name.empty() || dimension.empty() ||
        dimension.find('=') != std::string_view::npos) {
      throw InvalidArgument(tagged("policy", setting, ": '", trim_blanks(item),
                                   "' is not NAME=DIMENSION (a communicator name, then one of "
                                   "dp, tp, pp, zero, embedding)"));
    }
    // A name dimension_of() reads as a dimension ("zero" as zero_grad or zero_param).
    if (dimension_of(dimension, Operation::kAllreduce) == Dimension::kOther) {
      throw InvalidArgument(tagged("policy", setting, ": '", name, "=", dimension, "': '",
                                   dimension,
                                   "' is not a dimension; expected dp, tp, pp, zero or embedding"));
    }
    if (name.front() == '@') {
      if (name != "@world") {
        throw InvalidArgument(
            tagged("policy", setting, ": '", name,
                   "' is not a group of communicators; @world is the one there is"));
      }
      if (!out.world_.empty()) {
        throw InvalidArgument(tagged("policy", setting, ": the name '", name, "' is listed twice"));
      }
      out.world_ = std::string(dimension);
    } else if (!out.dimensions_.emplace(std::string(name), std::string(dimension)).second) {
      throw InvalidArgument(tagged("policy", setting, ": the name '", name, "' is listed twice"));
    }
  }
  return out;
}

const std::string& CommNames::apply(const std::string& name, bool spans_world) const {
  const auto it = dimensions_.find(name);
  if (it != dimensions_.end()) return it->second;
  // MPI_COMM_WORLD's own name is MPI's, not the program's: @world covers it too.
  const bool unnamed = name.empty() || name == "MPI_COMM_WORLD";
  return spans_world && unnamed && !world_.empty() ? world_ : name;
}

}  // namespace hycc
