// The names a program gives its communicators, read as the dimension names the policy knows
// (the drop-in library's HYCC_COMM_NAMES; docs/dropin.md): a program whose data-parallel
// communicator is MPI_COMM_WORLD, or is named "data_parallel", gets the dp rules without a
// change to its code.
//
//   CommNames names = CommNames::parse("MPI_COMM_WORLD=dp,model_group=tp", "HYCC_COMM_NAMES");
//   names.apply("MPI_COMM_WORLD");  // "dp"
//   names.apply("other");           // "other": names not listed stay as they are
//
// `@world` stands for the communicators over all of MPI_COMM_WORLD's ranks that have no name of
// their own: MPI_COMM_WORLD and its unnamed duplicates (Horovod reduces on one), which no name
// can reach.
//
//   CommNames w = CommNames::parse("@world=dp", "HYCC_COMM_NAMES");
//   w.apply("", /*spans_world=*/true);   // "dp": an unnamed duplicate of MPI_COMM_WORLD
//   w.apply("", /*spans_world=*/false);  // "": an unnamed communicator of some of the ranks
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
  // (not empty, without ',' or '=') or @world, DIMENSION one of dp, tp, pp, zero, embedding. An
  // empty spec lists nothing. Throws InvalidArgument naming `setting` for anything else (another
  // name that starts with '@'), or a name listed twice.
  static CommNames parse(std::string_view spec, std::string_view setting);

  // The name the policy reads for a communicator named `name`; `spans_world`: its ranks are all
  // of MPI_COMM_WORLD's (what @world asks about; a listed name wins over @world).
  const std::string& apply(const std::string& name, bool spans_world = false) const;

  // True when the list has @world (only then need a caller find out whether a communicator
  // spans MPI_COMM_WORLD).
  bool has_world() const { return !world_.empty(); }

  bool empty() const { return dimensions_.empty() && world_.empty(); }

 private:
  std::map<std::string, std::string, std::less<>> dimensions_;
  std::string world_;  // @world's dimension; empty: not listed
};

}  // namespace hycc
