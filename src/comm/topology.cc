#include "comm/topology.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "comm/comm_attribute.h"

namespace hycc::comm {
namespace {

constexpr std::string_view kVariable = "HYCC_TOPOLOGY";

// What a communicator keeps of its topology (comm_attribute).
struct TopologyState {
  std::optional<Topology> topology;
  std::optional<LevelComms> levels;
};

[[noreturn]] void bad_text(std::string_view text, const std::string& why) {
  throw InvalidArgument(tagged("comm", kVariable, " '", text, "': ", why,
                               " (expected shared, flat, ranks-per-node=K or nodes=A,B,...)"));
}

int parse_non_negative(std::string_view text, std::string_view whole, const char* what) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0) {
    bad_text(whole, std::string(what) + " '" + std::string(text) + "' is not a number >= 0");
  }
  return value;
}

// The world rank of each rank of an MPI communicator.
std::vector<int> world_ranks(MPI_Comm comm, int size) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  HYCC_CHECK_MPI(MPI_Comm_group(comm, &group));
  HYCC_CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  std::vector<int> ranks(static_cast<size_t>(size)), out(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<size_t>(r)] = r;
  const int rc = MPI_Group_translate_ranks(group, size, ranks.data(), world, out.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  HYCC_CHECK_MPI(rc);
  return out;
}

// Every rank's node by shared memory: the lowest world rank of each rank's shared-memory group.
std::vector<int> shared_memory_nodes(MPI_Comm comm, int rank, int size) {
  MPI_Comm local = MPI_COMM_NULL;
  HYCC_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  int leader = rank;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  HYCC_CHECK_MPI(rc);
  std::vector<int> ids(static_cast<size_t>(size));
  HYCC_CHECK_MPI(MPI_Allgather(&leader, 1, MPI_INT, ids.data(), 1, MPI_INT, comm));
  return ids;
}

Topology detect(const Communicator& comm) {
  const int size = comm.size();
  if (!comm.is_mpi()) {
    std::vector<int> own(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) own[static_cast<size_t>(r)] = r;
    return make_topology(own, "not known for " + comm.group()->describe());
  }
  const char* env = std::getenv(std::string(kVariable).c_str());
  const std::string_view text = env != nullptr ? env : "";
  int world_size = 1;
  HYCC_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  const std::vector<int> by_world = parse_topology(text, world_size);
  if (by_world.empty()) {
    return make_topology(shared_memory_nodes(comm.mpi(), comm.rank(), size),
                         "MPI_COMM_TYPE_SHARED");
  }
  std::vector<int> ids;
  for (const int w : world_ranks(comm.mpi(), size)) ids.push_back(by_world[static_cast<size_t>(w)]);
  // Ranks started with different values would run different algorithms: a hang, not an error.
  int64_t digest[2] = {0, 0};
  for (const int id : ids) digest[0] = digest[0] * 1000003 + id;
  digest[1] = -digest[0];
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, digest, 2, MPI_INT64_T, MPI_MIN, comm.mpi()));
  if (digest[0] != -digest[1]) {
    throw CommError(tagged("comm", kVariable, " differs across the ranks of communicator '",
                           comm.name(), "' (this rank has '", text, "')"));
  }
  return make_topology(ids, std::string(kVariable) + "=" + std::string(text));
}

}  // namespace

int Topology::nodes() const {
  return node_of.empty() ? 0 : *std::max_element(node_of.begin(), node_of.end()) + 1;
}

std::vector<int> Topology::ranks_of(int node) const {
  std::vector<int> ranks;
  for (int r = 0; r < size(); ++r) {
    if (node_of[static_cast<size_t>(r)] == node) ranks.push_back(r);
  }
  return ranks;
}

int Topology::local_rank(int rank) const {
  const int node = node_of.at(static_cast<size_t>(rank));
  return static_cast<int>(std::count(node_of.begin(), node_of.begin() + rank, node));
}

bool Topology::uniform() const {
  const int n = nodes();
  for (int node = 1; node < n; ++node) {
    if (std::count(node_of.begin(), node_of.end(), node) !=
        std::count(node_of.begin(), node_of.end(), 0)) {
      return false;
    }
  }
  return true;
}

bool Topology::two_level() const { return uniform() && nodes() >= 2 && nodes() < size(); }

int Topology::ring_crossings() const {
  int crossings = 0;
  for (int r = 0; r < size(); ++r) {
    crossings += node_of[static_cast<size_t>(r)] != node_of[static_cast<size_t>((r + 1) % size())];
  }
  return crossings;
}

std::string Topology::describe() const {
  std::ostringstream s;
  const int n = nodes();
  if (uniform()) {
    s << n << (n == 1 ? " node x " : " nodes x ") << size() / std::max(n, 1) << " ranks";
  } else {
    s << n << " nodes of ";
    for (int node = 0; node < n; ++node) {
      s << (node > 0 ? ", " : "") << std::count(node_of.begin(), node_of.end(), node);
    }
    s << " ranks";
  }
  s << " (" << source << ")";
  return s.str();
}

Topology make_topology(const std::vector<int>& node_ids, std::string source) {
  Topology t;
  t.source = std::move(source);
  std::map<int, int> number;  // given id -> normalized node
  for (const int id : node_ids) {
    if (id < 0) throw InvalidArgument(tagged("comm", "topology: node id ", id, " is negative"));
    const auto [it, added] = number.try_emplace(id, static_cast<int>(number.size()));
    t.node_of.push_back(it->second);
  }
  return t;
}

std::vector<int> parse_topology(std::string_view text, int world_size) {
  if (text.empty() || text == "shared") return {};
  std::vector<int> nodes(static_cast<size_t>(world_size));
  if (text == "flat") {
    for (int w = 0; w < world_size; ++w) nodes[static_cast<size_t>(w)] = w;
    return nodes;
  }
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) bad_text(text, "unknown form");
  const std::string_view key = text.substr(0, eq), value = text.substr(eq + 1);
  if (key == "ranks-per-node") {
    const int k = parse_non_negative(value, text, "ranks per node");
    if (k == 0) bad_text(text, "ranks per node must be at least 1");
    for (int w = 0; w < world_size; ++w) nodes[static_cast<size_t>(w)] = w / k;
    return nodes;
  }
  if (key != "nodes") bad_text(text, "unknown key '" + std::string(key) + "'");
  nodes.clear();
  size_t at = 0;
  while (at <= value.size()) {
    const size_t comma = std::min(value.find(',', at), value.size());
    nodes.push_back(parse_non_negative(value.substr(at, comma - at), text, "node"));
    at = comma + 1;
  }
  if (nodes.size() != static_cast<size_t>(world_size)) {
    bad_text(text, "names the nodes of " + std::to_string(nodes.size()) + " ranks, the world has " +
                       std::to_string(world_size));
  }
  return nodes;
}

const Topology& topology(const Communicator& comm) {
  TopologyState& state = comm_attribute<TopologyState>(comm);
  if (!state.topology) state.topology = detect(comm);
  return *state.topology;
}

void set_topology(const Communicator& comm, const std::vector<int>& node_ids, std::string source) {
  if (node_ids.size() != static_cast<size_t>(comm.size())) {
    throw InvalidArgument(
        tagged("comm", "set_topology: ", node_ids.size(), " node ids for ", comm.size(), " ranks"));
  }
  TopologyState& state = comm_attribute<TopologyState>(comm);
  state.topology = make_topology(node_ids, std::move(source));
  state.levels.reset();
}

const LevelComms& level_comms(const Communicator& comm) {
  const Topology& t = topology(comm);
  if (!t.two_level()) {
    throw InvalidArgument(tagged("comm", "two-level communicators of ", t.describe()));
  }
  TopologyState& state = comm_attribute<TopologyState>(comm);
  if (!state.levels) {
    const int node = t.node_of[static_cast<size_t>(comm.rank())];
    const int local = t.local_rank(comm.rank());
    Communicator intra = comm.split(node, comm.rank(), comm.name() + ".intra");
    Communicator inter = comm.split(local, node, comm.name() + ".inter");
    state.levels.emplace(LevelComms{std::move(intra), std::move(inter)});
  }
  return *state.levels;
}

}  // namespace hycc::comm
