// Topology (comm/topology.h) and the two-level allreduce: HYCC_TOPOLOGY's forms and errors,
// detection by shared memory, and the two-level allreduce on every node layout the rank count
// allows (contiguous and interleaved nodes, nodes of unequal size, one node, one rank per node:
// the last three fall back to the ring and say so), against the reference, within the documented
// bound, bit-identical on every rank.
#include <cstdlib>
#include <functional>
#include <map>

#include "coll_test_util.h"
#include "comm/topology.h"
#include "hycc/stats.h"

namespace hycc::test {
namespace {

using comm::make_topology;
using comm::parse_topology;
using comm::Topology;

TEST(Topology, ParsesEveryForm) {
  EXPECT_TRUE(parse_topology("", 4).empty());
  EXPECT_TRUE(parse_topology("shared", 4).empty());
  EXPECT_EQ(parse_topology("flat", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_topology("ranks-per-node=2", 5), (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(parse_topology("nodes=3,0,3,0", 4), (std::vector<int>{3, 0, 3, 0}));
}

TEST(Topology, RejectsMalformedText) {
  for (const char* bad : {"nodes=0,1", "nodes=0,,1,1", "nodes=0,x,1,1", "nodes=-1,0,0,0",
                          "ranks-per-node=0", "ranks-per-node=two", "sharde", "racks=1"}) {
    expect_outcome(Outcome::kInvalid, bad, "HYCC_TOPOLOGY", [&] { parse_topology(bad, 4); });
  }
  expect_outcome(Outcome::kInvalid, "count", "names the nodes of 2 ranks, the world has 4",
                 [] { parse_topology("nodes=0,1", 4); });
}

TEST(Topology, NormalizesNodesInRankOrder) {
  const Topology t = make_topology({7, 7, 2, 9, 2}, "test");
  EXPECT_EQ(t.node_of, (std::vector<int>{0, 0, 1, 2, 1}));
  EXPECT_EQ(t.nodes(), 3);
  EXPECT_EQ(t.ranks_of(1), (std::vector<int>{2, 4}));
  EXPECT_EQ(t.local_rank(4), 1);
  EXPECT_FALSE(t.uniform());
  EXPECT_FALSE(t.two_level());
  EXPECT_EQ(t.describe(), "3 nodes of 2, 2, 1 ranks (test)");
  const Topology u = make_topology({1, 0, 1, 0}, "test");
  EXPECT_TRUE(u.two_level());
  EXPECT_EQ(u.describe(), "2 nodes x 2 ranks (test)");
  EXPECT_FALSE(make_topology({0, 0, 0}, "t").two_level());  // one node
  EXPECT_FALSE(make_topology({0, 1, 2}, "t").two_level());  // one rank per node
}

// Shared-memory detection groups the ranks by the machine they run on.
TEST(Topology, SharedMemoryNodesAreTheMachines) {
  const Communicator c = world().dup("topology");
  const Topology& t = comm::topology(c);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(MPI_MAX_PROCESSOR_NAME * c.size()));
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, c.mpi());
  std::map<std::string, int> machines;
  for (int r = 0; r < c.size(); ++r) {
    const std::string host(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    const auto [it, added] = machines.try_emplace(host, t.node_of[static_cast<size_t>(r)]);
    EXPECT_EQ(it->second, t.node_of[static_cast<size_t>(r)]) << "rank " << r << " on " << host;
  }
  EXPECT_EQ(t.nodes(), static_cast<int>(machines.size()));
  EXPECT_EQ(t.source, "MPI_COMM_TYPE_SHARED");
}

// HYCC_TOPOLOGY applies to the world ranks of a communicator; ranks that disagree fail.
TEST(Topology, EnvironmentNamesWorldRanks) {
  const int p = world().size();
  ::setenv("HYCC_TOPOLOGY", "ranks-per-node=4", 1);
  // The ranks of this rank's parity, in reverse order: comm rank i is world rank
  // parity + 2 (m - 1 - i), on node (that) / 4.
  const int parity = world().rank() % 2;
  const Communicator same = world().split(parity, -world().rank(), "parity");
  const int m = same.size();
  std::vector<int> want;
  for (int i = 0; i < m; ++i) want.push_back((parity + 2 * (m - 1 - i)) / 4);
  EXPECT_EQ(comm::topology(same).node_of, make_topology(want, "").node_of);
  EXPECT_EQ(comm::topology(same).source, "HYCC_TOPOLOGY=ranks-per-node=4");
  ::setenv("HYCC_TOPOLOGY", world().rank() == 0 && p > 1 ? "flat" : "ranks-per-node=2", 1);
  const Communicator c = world().dup();
  expect_outcome(p > 1 ? Outcome::kComm : Outcome::kOk, "mismatch", p > 1 ? "differs" : "",
                 [&] { comm::topology(c); });
  ::unsetenv("HYCC_TOPOLOGY");
}

// ---- the two-level allreduce -------------------------------------------------------------------

// A node layout for p ranks: the node of each rank.
struct Layout {
  const char* name;
  std::function<int(int rank, int p)> node;
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"pairs", [](int r, int) { return r / 2; }},
      {"interleaved", [](int r, int) { return r % 2; }},
      {"one_node", [](int, int) { return 0; }},
      {"rank_per_node", [](int r, int) { return r; }},
      {"unequal", [](int r, int p) { return r < p - 1 ? 0 : 1; }},
  };
  return all;
}

// The bound of docs/algorithms.md: the ring over N nodes whose inputs are sums of L inputs.
double two_level_error(const std::string& spec, int nodes, int per_node) {
  double e = compression_error(spec, nodes * per_node);
  for (int k = 1; k < nodes; ++k) e += compression_error(spec, k * per_node);
  return e;
}

// The options of a two-level call in these tests.
CollectiveOptions two_level_options(const std::string& spec, CollectiveStats* stats) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.algorithm = Algorithm::kTwoLevel;
  o.threshold_bytes = 0;
  o.segment_bytes = 1024;
  o.seed = 7;
  o.stats = stats;
  return o;
}

// A layout's communicator with its topology set, and what that topology allows.
struct LayoutComm {
  Communicator comm;
  bool two = false;  // the two-level algorithms run (else they fall back)
  int nodes = 1;     // nodes of the two-level algorithms (p where they fall back)
  int per_node = 1;
};

LayoutComm layout_comm(const Layout& layout) {
  const int p = world().size();
  std::vector<int> ids;
  for (int j = 0; j < p; ++j) ids.push_back(layout.node(j, p));
  const Communicator c = world().dup(layout.name);
  comm::set_topology(c, ids, "test");
  const Topology& t = comm::topology(c);
  const int nodes = t.two_level() ? t.nodes() : p;
  return {c, t.two_level(), nodes, p / nodes};
}

// A two-level call ran (or fell back to `flat`) as the topology allows.
void expect_ran(const CollectiveStats& stats, bool two, Algorithm flat, const std::string& what) {
  if (world().size() == 1) return;
  EXPECT_EQ(stats.algorithm, two ? Algorithm::kTwoLevel : flat) << what;
  EXPECT_EQ(stats.topology_fallback, !two) << what;
}

// `got` is `want` as one compression with `spec` leaves it (bit for bit when lossless).
void expect_copy_of(const Buffer& got, const Buffer& want, const std::string& spec,
                    const std::string& what) {
  if (spec == "none" || spec == "mpc") {
    expect_bits_equal(got, want, what);
  } else {
    expect_within(got, as_doubles(want.to_floats(), 0, want.count()), compression_error(spec, 1), 1,
                  what);
  }
}

TEST(TwoLevelAllreduce, MatchesReferenceOnEveryLayout) {
  const int p = world().size(), r = world().rank();
  for (const Layout& layout : layouts()) {
    const auto [c, two, n_nodes, per] = layout_comm(layout);
    for (const std::string spec : {"none", "mpc", "quant:bits=8", "eb:abs=1e-3"}) {
      for (const DType d : {DType::kF32, DType::kBF16}) {
        // 40000 elements: several pieces (docs/algorithms.md) with these 1 KiB segments.
        for (const size_t n : {size_t{1}, size_t{7}, size_t{4099}, size_t{40000}}) {
          if (n == 40000 && spec != "quant:bits=8" && spec != "mpc") continue;
          const bool lossless = spec == "none" || spec == "mpc";
          const bool in_place = n == 7;
          const ReduceOp op = n == 4099 ? ReduceOp::kAverage : ReduceOp::kSum;
          const std::string what = std::string(layout.name) + " " + spec + " " +
                                   std::string(dtype_name(d)) + " n=" + std::to_string(n);
          CollectiveStats stats;
          const Buffer input = make_input(d, n, r, lossless);
          Buffer in = clone(input), out(d, n);
          allreduce(c, in.view(), in_place ? in.view() : out.view(), op,
                    two_level_options(spec, &stats));
          const Buffer& got = in_place ? in : out;
          expect_ran(stats, two, Algorithm::kRing, what);
          if (p > 1) {
            EXPECT_EQ(stats.intra_bytes > 0, two) << what;
          }
          const auto inputs = gather_all(input);
          if (lossless) {
            expect_bits_equal(got, reference_reduce(inputs, d, op), what);
          } else {
            const double bound =
                two ? two_level_error(spec, n_nodes, per)
                    : ring_reduce_scatter_error(spec, p) + compression_error(spec, p);
            // The sum's bound covers the average too (allreduce_test.cc does the same).
            expect_within(got, exact_reduce(inputs, op), bound, 2 * n_nodes, what);
          }
          expect_identical_across_ranks(got, what);
        }
      }
    }
  }
}

TEST(TwoLevelReduceScatter, MatchesReferenceOnEveryLayout) {
  const int p = world().size(), r = world().rank();
  for (const Layout& layout : layouts()) {
    const auto [c, two, n_nodes, per] = layout_comm(layout);
    for (const std::string spec : {"none", "mpc", "quant:bits=8"}) {
      for (const DType d : {DType::kF32, DType::kBF16}) {
        for (const size_t n : {size_t{7}, size_t{4099}}) {
          const bool lossless = spec != "quant:bits=8", in_place = n == 7;
          const ReduceOp op = n == 7 ? ReduceOp::kSum : ReduceOp::kAverage;
          const std::string what = std::string(layout.name) + " reduce_scatter " + spec + " " +
                                   std::string(dtype_name(d)) + " n=" + std::to_string(n);
          CollectiveStats stats;
          const ChunkRange mine = chunk_range(n, p, r);
          const Buffer input = make_input(d, n, r, lossless);
          Buffer in = clone(input), out(d, mine.count);
          reduce_scatter(c, in.view(), in_place ? view_of(in, mine.offset, mine.count) : out.view(),
                         op, two_level_options(spec, &stats));
          const Buffer got = in_place ? part_of(in, mine.offset, mine.count) : clone(out);
          expect_ran(stats, two, Algorithm::kRing, what);
          const auto inputs = gather_all(input);
          if (lossless) {
            expect_bits_equal(
                got, part_of(reference_reduce(inputs, d, op), mine.offset, mine.count), what);
          } else {
            double bound = 0;  // hops of the ring between nodes: partial sums of L, 2L, ...
            for (int k = 1; k < n_nodes; ++k) bound += compression_error(spec, k * per);
            const std::vector<double> exact = exact_reduce(inputs, op);
            expect_within(got,
                          {exact.begin() + static_cast<std::ptrdiff_t>(mine.offset),
                           exact.begin() + static_cast<std::ptrdiff_t>(mine.offset + mine.count)},
                          bound, n_nodes, what);
          }
          if (in_place) {  // the rest of the buffer keeps the input's bits
            const size_t end = mine.offset + mine.count;
            EXPECT_TRUE(part_of(in, 0, mine.offset).bits_equal(part_of(input, 0, mine.offset)) &&
                        part_of(in, end, n - end).bits_equal(part_of(input, end, n - end)))
                << what << ": wrote outside its chunk";
          }
        }
      }
    }
  }
}

TEST(TwoLevelAllgather, MatchesInputsOnEveryLayout) {
  const int p = world().size(), r = world().rank();
  for (const Layout& layout : layouts()) {
    const LayoutComm lc = layout_comm(layout);
    const Communicator& c = lc.comm;
    for (const std::string spec : {"none", "mpc", "quant:bits=8"}) {
      for (const DType d : {DType::kF32, DType::kBF16}) {
        for (const size_t n : {size_t{1}, size_t{1000}}) {
          const bool lossless = spec != "quant:bits=8", in_place = n == 1;
          const std::string what = std::string(layout.name) + " allgather " + spec + " " +
                                   std::string(dtype_name(d)) + " n=" + std::to_string(n);
          CollectiveStats stats;
          const Buffer input = make_input(d, n, r, lossless);
          Buffer out(d, n * static_cast<size_t>(p));
          const CollectiveOptions o = two_level_options(spec, &stats);
          if (in_place) {
            const TensorView own = view_of(out, static_cast<size_t>(r) * n, n);
            std::memcpy(own.data, input.view().data, input.view().bytes());
            allgather(c, own, out.view(), o);
          } else {
            allgather(c, input.view(), out.view(), o);
          }
          expect_ran(stats, lc.two, Algorithm::kRing, what);
          for (int j = 0; j < p; ++j) {
            expect_copy_of(part_of(out, static_cast<size_t>(j) * n, n),
                           make_input(d, n, j, lossless), spec,
                           what + " block " + std::to_string(j));
          }
          expect_identical_across_ranks(out, what);
        }
      }
    }
  }
}

TEST(TwoLevelBroadcast, MatchesTheRootOnEveryLayout) {
  const int p = world().size(), r = world().rank();
  for (const Layout& layout : layouts()) {
    const LayoutComm lc = layout_comm(layout);
    for (const std::string spec : {"none", "quant:bits=8"}) {
      for (const int root : {0, p - 1}) {
        const bool lossless = spec == "none";
        const size_t n = 3000;
        const std::string what =
            std::string(layout.name) + " broadcast " + spec + " root " + std::to_string(root);
        CollectiveStats stats;
        Buffer buffer = make_input(DType::kBF16, n, r == root ? root : root + 1, lossless);
        broadcast(lc.comm, buffer.view(), root, two_level_options(spec, &stats));
        expect_ran(stats, lc.two, Algorithm::kChain, what);
        expect_copy_of(buffer, make_input(DType::kBF16, n, root, lossless), spec, what);
        expect_identical_across_ranks(buffer, what);
      }
    }
  }
}

// kAuto takes the two-level algorithm above recursive doubling's range where the ring would cross
// between nodes more than once per node (interleaved nodes), the ring where nodes are contiguous.
TEST(TwoLevelAllreduce, AutoChoosesItWhereTheRingCrossesNodesOften) {
  const int p = world().size();
  EXPECT_EQ(make_topology({0, 0, 1, 1}, "t").ring_crossings(), 2);
  EXPECT_EQ(make_topology({0, 1, 0, 1}, "t").ring_crossings(), 4);
  EXPECT_EQ(make_topology({0, 0}, "t").ring_crossings(), 0);
  for (const Layout& layout : layouts()) {
    const Communicator c = layout_comm(layout).comm;
    const Topology& t = comm::topology(c);
    const bool two = t.two_level() && t.ring_crossings() > t.nodes();
    const size_t n = 100000;  // 400 KB: above recursive doubling's 256 KiB
    CollectiveStats stats;
    CollectiveOptions o;
    o.codec = CodecConfig::parse("quant:bits=8");
    o.stats = &stats;
    const Buffer in = make_input(DType::kF32, n, world().rank(), false);
    Buffer out(DType::kF32, n);
    allreduce(c, in.view(), out.view(), ReduceOp::kSum, o);
    if (p > 1) {
      EXPECT_EQ(stats.algorithm, two ? Algorithm::kTwoLevel : Algorithm::kRing) << layout.name;
    }
    EXPECT_FALSE(stats.topology_fallback) << layout.name;
    expect_identical_across_ranks(out, layout.name);
    // reduce_scatter follows the same rule; allgather stays on the ring (not overlapped yet).
    const ChunkRange mine = chunk_range(n, p, world().rank());
    Buffer chunk(DType::kF32, mine.count), all(DType::kF32, n * static_cast<size_t>(p));
    reduce_scatter(c, in.view(), chunk.view(), ReduceOp::kSum, o);
    if (p > 1) {
      EXPECT_EQ(stats.algorithm, two ? Algorithm::kTwoLevel : Algorithm::kRing) << layout.name;
    }
    allgather(c, in.view(), all.view(), o);
    if (p > 1) {
      EXPECT_EQ(stats.algorithm, Algorithm::kRing) << layout.name;
    }
    Buffer copy = clone(in);
    broadcast(c, copy.view(), 0, o);
    if (p > 1) {
      EXPECT_EQ(stats.algorithm, two ? Algorithm::kTwoLevel : Algorithm::kChain) << layout.name;
    }
  }
}

// The statistics count two-level calls and the calls the topology kept on the ring.
TEST(TwoLevelAllreduce, StatisticsSayWhatRan) {
  CommStats stats;
  CollectiveStats two, fell_back, ring;
  two.algorithm = Algorithm::kTwoLevel;
  fell_back.algorithm = ring.algorithm = Algorithm::kRing;
  fell_back.topology_fallback = true;
  for (const CollectiveStats* call : {&two, &two, &fell_back, &ring}) {
    stats.record(Dimension::kDp, Operation::kAllreduce, *call);
  }
  const StatsEntry* e = stats.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->two_level_calls, 2u);
  EXPECT_EQ(e->topology_fallbacks, 1u);
  EXPECT_NE(stats.table().find("#two-level calls: dp/allreduce 2 of 4 (1 asked for and not "
                               "possible on the topology: ring)"),
            std::string::npos)
      << stats.table();
  EXPECT_NE(stats.json().find("\"two_level_calls\": 2, \"topology_fallbacks\": 1"),
            std::string::npos)
      << stats.json();
}

}  // namespace
}  // namespace hycc::test
