#include "report.h"

#include "../bench/bench_util.h"
#include "compute.h"

namespace hycc::sim {

using bench::format;
using bench::Table;

std::vector<PolicyRun> compare_policies(const ModelConfig& model, const ClusterConfig& cluster,
                                        const LayoutConfig& layout,
                                        const std::vector<SimPolicy>& policies) {
  const double baseline = simulate(model, cluster, layout, SimPolicy::baseline()).time.iteration;
  std::vector<PolicyRun> runs;
  for (const SimPolicy& p : policies) {
    PolicyRun run{p.name(), p.description(), simulate(model, cluster, layout, p), 1};
    run.speedup = baseline / run.result.time.iteration;
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string describe_setup(const ModelConfig& model, const ClusterConfig& cluster,
                           const LayoutConfig& layout, const IterationResult& any_run) {
  std::string s;
  const double n = total_parameters(model);
  s += format(
      "# model %s: %ld layers, hidden %ld, %ld heads, sequence %ld, vocabulary %ld, "
      "%.4g %s parameters\n",
      model.name.c_str(), model.layers, model.hidden, model.heads, model.sequence, model.vocabulary,
      n >= 1e9 ? n / 1e9 : n / 1e6, n >= 1e9 ? "B" : "M");
  const auto payload = [](const LinkClass& l) {
    return l.efficiency < 1 ? format(" (x %.3g payload)", l.efficiency) : std::string();
  };
  s += format(
      "# cluster %s: %ld nodes x %ld GPUs, %.4g TFLOPS achieved per GPU; intra-node "
      "%.3g GB/s per GPU%s, %.3g us; inter-node %.3g GB/s per node%s, %.3g us\n",
      cluster.name.c_str(), cluster.nodes, cluster.gpus_per_node, cluster.gpu_flops / 1e12,
      cluster.intra_node.bandwidth / 1e9, payload(cluster.intra_node).c_str(),
      cluster.intra_node.latency * 1e6, cluster.inter_node.bandwidth / 1e9,
      payload(cluster.inter_node).c_str(), cluster.inter_node.latency * 1e6);
  s += format(
      "# layout %s: tp %ld x pp %ld x dp %ld (ranks %s,%s,%s), ZeRO-%d, %s, micro-batch "
      "%ld x %ld micro-batches = global batch %.0f, recompute %s, dp overlap %s\n",
      layout.name.c_str(), layout.tp, layout.pp, layout.dp, axis_name(layout.order[0]),
      axis_name(layout.order[1]), axis_name(layout.order[2]), layout.zero_stage,
      std::string(dtype_name(layout.dtype)).c_str(), layout.micro_batch, layout.micro_batches,
      any_run.samples_per_iteration, layout.activation_recompute ? "on" : "off",
      layout.overlap_dp ? "on" : "off");
  s += format("# per micro-batch compute %.4g s, 1F1B bubble fraction %.4f; placement:",
              any_run.micro_batch_compute, any_run.bubble_fraction);
  for (const DimensionTraffic& t : any_run.traffic) {
    if (t.calls == 0) continue;
    s += format(" %s %s (%ld ranks, %ld flows/node)", dimension_name(t.dimension),
                link_kind_name(t.links.kind), t.links.group_size, t.links.flows_per_node);
  }
  return s + "\n";
}

std::string breakdown_table(const std::vector<PolicyRun>& runs) {
  const Table table({{"policy", 18},
                     {"iteration", 10, "s"},
                     {"compute", 9, "s"},
                     {"bubble", 8, "s"},
                     {"tp", 8, "s"},
                     {"pp", 8, "s"},
                     {"dp+zero", 8, "s"},
                     {"codec", 8, "s"},
                     {"dp hidden", 10, "s"},
                     {"TFLOPS/GPU", 11},
                     {"samples/s", 10},
                     {"speedup", 8}});
  std::string s = table.header() + "\n";
  for (const PolicyRun& r : runs) {
    const Breakdown& b = r.result.time;
    s += table.row({r.policy, format("%.4g", b.iteration), format("%.4g", b.compute),
                    format("%.4g", b.bubble), format("%.4g", b.tp), format("%.4g", b.pp),
                    format("%.4g", b.dp), format("%.4g", b.codec), format("%.4g", b.dp_hidden),
                    format("%.4g", r.result.tflops_per_gpu),
                    format("%.4g", r.result.samples_per_second), format("%.3f", r.speedup)}) +
         "\n";
  }
  return s;
}

std::string traffic_table(const std::vector<PolicyRun>& runs) {
  const Table table({{"policy", 18},
                     {"dim", 11},
                     {"op", 15},
                     {"calls", 7},
                     {"msg", 9, "MB"},
                     {"codec", 38},
                     {"ratio", 7},
                     {"link", 11},
                     {"raw", 10, "MB/GPU"},
                     {"wire", 10, "MB/GPU"},
                     {"transfer", 9, "s"},
                     {"codec", 8, "s"}});
  std::string s = table.header() + "\n";
  for (const PolicyRun& r : runs) {
    for (const DimensionTraffic& t : r.result.traffic) {
      if (t.calls == 0) continue;
      s += table.row({r.policy, dimension_name(t.dimension),
                      collective_name(collective_of(t.dimension)), format("%ld", t.calls),
                      format("%.4g", t.message_bytes / 1e6), t.codec.codec,
                      format("%.3f", t.codec.ratio), link_kind_name(t.links.kind),
                      format("%.5g", t.raw_bytes / 1e6), format("%.5g", t.wire_bytes / 1e6),
                      format("%.4g", double(t.calls) * t.per_call.transfer),
                      format("%.4g", double(t.calls) * t.per_call.codec)}) +
           "\n";
    }
  }
  return s;
}

nlohmann::json to_json(const ModelConfig& model, const ClusterConfig& cluster,
                       const LayoutConfig& layout, const std::vector<PolicyRun>& runs) {
  nlohmann::json j;
  j["model"] = {{"name", model.name},
                {"layers", model.layers},
                {"hidden", model.hidden},
                {"heads", model.heads},
                {"sequence", model.sequence},
                {"vocabulary", model.vocabulary},
                {"ffn_hidden", model.ffn_hidden},
                {"parameters", total_parameters(model)}};
  j["cluster"] = {{"name", cluster.name},
                  {"nodes", cluster.nodes},
                  {"gpus_per_node", cluster.gpus_per_node},
                  {"gpu_tflops", cluster.gpu_flops / 1e12},
                  {"intra_node_bytes_per_s", cluster.intra_node.bandwidth},
                  {"intra_node_latency_s", cluster.intra_node.latency},
                  {"intra_node_efficiency", cluster.intra_node.efficiency},
                  {"inter_node_bytes_per_s", cluster.inter_node.bandwidth},
                  {"inter_node_latency_s", cluster.inter_node.latency},
                  {"inter_node_efficiency", cluster.inter_node.efficiency}};
  j["layout"] = {{"name", layout.name},
                 {"tp", layout.tp},
                 {"pp", layout.pp},
                 {"dp", layout.dp},
                 {"zero_stage", layout.zero_stage},
                 {"micro_batch", layout.micro_batch},
                 {"micro_batches", layout.micro_batches},
                 {"activation_recompute", layout.activation_recompute},
                 {"overlap_dp", layout.overlap_dp},
                 {"dtype", std::string(dtype_name(layout.dtype))}};
  j["policies"] = nlohmann::json::array();
  for (const PolicyRun& r : runs) {
    const Breakdown& b = r.result.time;
    nlohmann::json p = {{"policy", r.policy},
                        {"description", r.description},
                        {"iteration_s", b.iteration},
                        {"compute_s", b.compute},
                        {"bubble_s", b.bubble},
                        {"tp_s", b.tp},
                        {"pp_s", b.pp},
                        {"dp_s", b.dp},
                        {"codec_s", b.codec},
                        {"dp_hidden_s", b.dp_hidden},
                        {"tflops_per_gpu", r.result.tflops_per_gpu},
                        {"samples_per_s", r.result.samples_per_second},
                        {"speedup", r.speedup}};
    p["dimensions"] = nlohmann::json::array();
    for (const DimensionTraffic& t : r.result.traffic) {
      if (t.calls == 0) continue;
      p["dimensions"].push_back({{"dimension", dimension_name(t.dimension)},
                                 {"operation", collective_name(collective_of(t.dimension))},
                                 {"calls", t.calls},
                                 {"message_bytes", t.message_bytes},
                                 {"codec", t.codec.codec},
                                 {"ratio", t.codec.ratio},
                                 {"compress_bytes_per_s", t.codec.compress_bandwidth},
                                 {"decompress_bytes_per_s", t.codec.decompress_bandwidth},
                                 {"link", link_kind_name(t.links.kind)},
                                 {"group_size", t.links.group_size},
                                 {"flows_per_node", t.links.flows_per_node},
                                 {"raw_bytes", t.raw_bytes},
                                 {"wire_bytes", t.wire_bytes},
                                 {"transfer_s", double(t.calls) * t.per_call.transfer},
                                 {"codec_s", double(t.calls) * t.per_call.codec}});
    }
    j["policies"].push_back(std::move(p));
  }
  return j;
}

}  // namespace hycc::sim
