// The names a program gives its communicators, read as the dimension names the policy knows
// (the drop-in library's HYCC_COMM_NAMES; docs/dropin.md): a program whose data-parallel
// communicator is MPI_COMM_WORLD, or is named "data_parallel", gets the dp rules without a
// change to its code.
//
//   CommNames names = CommNames::parse("MPI_COMM_WORLD=dp,model_group=tp", "HYCC_COMM_NAMES");
//   names.apply("MPI_COMM_WORLD");  // "dp"
//   names.apply("other");           // "other": names not listed stay as they are
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace hycc {

class CommNames {
 public:
  CommNames() = default;

  // A comma list of NAME=DIMENSION (blanks around either are ignored): NAME a communicator name
  // (not empty, without ',' or '='), DIMENSION one of dp, tp, pp, zero, embedding. An empty
  // spec lists nothing. Throws InvalidArgument naming `setting` for anything else, or a name
  // listed twice.
  static CommNames parse(std::string_view spec, std::string_view setting);

  // The name the policy reads for a communicator named `name`.
  const std::string& apply(const std::string& name) const;

  bool empty() const { return dimensions_.empty(); }

 private:
  std::map<std::string, std::string, std::less<>> dimensions_;
};

}  // namespace hycc
