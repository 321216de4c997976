// Performance model against measured runs: reading hycc-train's JSON lines (steps used, medians,
// per-rank traffic from the cumulative statistics), the calibration, and the comparison with its
// pass criteria. Fixtures: tests/sim/fixtures (shortened runs in hycc-train's format). No timing.
#include <gtest/gtest.h>

#include <cmath>

#include "compute.h"
#include "experiment.h"
#include "measured_run.h"
#include "sim_test_util.h"
#include "validation.h"

namespace hycc::sim {
namespace {

std::string fixture(const std::string& name) {
  return std::string(HYCC_SOURCE_DIR) + "/tests/sim/fixtures/" + name;
}

// One step line; `run` adds the run description.
std::string step_line(long step, double step_s, bool evaluated, long tp_calls, bool run) {
  std::string s = "{\"step\":" + std::to_string(step) +
                  ",\"loss\":3.0,\"val_loss\":" + (evaluated ? "2.5" : "null") +
                  ",\"step_s\":" + std::to_string(step_s) +
                  ",\"comm_s\":" + std::to_string(step_s / 2) +
                  ",\"compute_s\":" + std::to_string(step_s / 4) +
                  ",\"stats\":{\"tp\":{\"calls\":" + std::to_string(tp_calls) +
                  ",\"raw_bytes\":" + std::to_string(tp_calls * 1000) +
                  ",\"wire_bytes\":" + std::to_string(tp_calls * 250) + "}}";
  if (run) {
    s += ",\"run\":{\"policy\":\"naive\",\"policy_source\":\"naive\",\"dp\":2,\"tp\":2,\"pp\":1,"
         "\"zero\":0,\"layers\":2,\"hidden\":8,\"heads\":2,\"vocabulary\":16,\"seq\":4,"
         "\"batch\":8,\"micro_batches\":2,\"ranks\":4,\"ranks_per_node\":2,"
         "\"network\":{\"emulator\":\"netemu\",\"rate\":\"1gbit\",\"rate_bits_per_s\":1e9,"
         "\"hosts\":2}}";
  }
  return s + "}\n";
}

TEST(SimMeasured, MediansOfTheSteadyStepsWithoutEvaluation) {
  // 20 steps: the first two (a tenth) dropped, step 10 evaluates; step times 1..20 s, but
  // step 10 takes 100 s. Used: 3..9 and 11..20 (17 steps), median 12 s.
  std::string text;
  for (long i = 1; i <= 20; ++i) {
    text += step_line(i, i == 10 ? 100.0 : double(i), i == 10, 4 * i + (i >= 10 ? 2 : 0), i == 1);
  }
  const MeasuredRun r = parse_measured_run(text, "run.jsonl");
  EXPECT_EQ(r.steps, 20);
  EXPECT_EQ(r.steps_used, 17);
  EXPECT_DOUBLE_EQ(r.step_s, 12);
  EXPECT_DOUBLE_EQ(r.comm_s, 6);
  EXPECT_DOUBLE_EQ(r.compute_s, 3);
  EXPECT_EQ(r.run.policy, "naive");
  EXPECT_EQ(r.run.label(), "naive @ 1gbit");
  EXPECT_EQ(r.run.micro_batch(), 2);
  EXPECT_TRUE(r.run.emulated);
  EXPECT_DOUBLE_EQ(r.run.rate_bits_per_s, 1e9);
  // 4 tp calls per step over 4 ranks (the evaluation's 2 extra calls fall into step 10, which
  // is not used; step 11's difference starts after them).
  ASSERT_EQ(r.traffic.count("tp"), 1u);
  EXPECT_DOUBLE_EQ(r.traffic.at("tp").calls, 1);
  EXPECT_DOUBLE_EQ(r.traffic.at("tp").message_bytes, 1000);
  EXPECT_DOUBLE_EQ(r.traffic.at("tp").ratio, 4);
}

TEST(SimMeasured, FixtureRunsHaveTheTrainersTraffic) {
  const MeasuredRun r = load_measured_run(fixture("hybrid-100mbit.jsonl"));
  EXPECT_EQ(r.run.label(), "hybrid @ 100mbit");
  EXPECT_EQ(r.run.hosts, 4);
  EXPECT_EQ(r.run.ranks_per_node, 2);
  EXPECT_EQ(r.steps_used, 9);  // 11 steps, the first and the evaluation at step 10 dropped
  EXPECT_NEAR(r.step_s, 0.9, 1e-12);
  // Per rank and step: 16 tp allreduces of 8 x 64 x 256 floats, one dp bucket of 865280 floats.
  EXPECT_DOUBLE_EQ(r.traffic.at("tp").calls, 16);
  EXPECT_DOUBLE_EQ(r.traffic.at("tp").message_bytes, 524288);
  EXPECT_DOUBLE_EQ(r.traffic.at("dp").message_bytes, 3461120);
  EXPECT_NEAR(r.traffic.at("dp").ratio, 4.571, 1e-6);
}

TEST(SimMeasured, ErrorsNameTheFileAndLine) {
  using testing::invalid_message;
  EXPECT_NE(invalid_message([] {
              parse_measured_run("{\"step\":1,\"st", "a.jsonl");
            }).find("a.jsonl:1: not JSON"),
            std::string::npos);
  EXPECT_NE(invalid_message([] {
              parse_measured_run("{\"step\":1,\"step_s\":1,\"comm_s\":0,\"compute_s\":1}\n",
                                 "b.jsonl");
            }).find("b.jsonl:1: no 'run' description"),
            std::string::npos);
  EXPECT_NE(invalid_message([] {
              parse_measured_run("\n{\"loss\":1}\n", "c.jsonl");
            }).find("c.jsonl:2: expected a hycc-train step"),
            std::string::npos);
  EXPECT_NE(invalid_message([] { parse_measured_run("", "d.jsonl"); }).find("no steps"),
            std::string::npos);
}

TEST(SimMeasured, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

struct Experiment {
  ModelConfig model = load_model("tiny");
  ClusterConfig cluster = load_cluster("netemu-4x2");
  LayoutConfig layout = load_layout("tiny-dp2-tp2-pp2");
};

TEST(SimValidation, CalibrationIsFlopsPerRankOverComputeTime) {
  const Experiment e;
  const Calibration c = calibrate({load_measured_run(fixture("calibration-shm.jsonl"))}, e.model,
                                  e.cluster, e.layout);
  // b m s = 8 x 2 x 64 tokens per replica and step, over tp x pp = 4 ranks.
  const double flops = training_flops_per_token(e.model, false) * 8 * 2 * 64 / 4;
  EXPECT_DOUBLE_EQ(c.flops_per_rank_step, flops);
  EXPECT_NEAR(c.compute_s, 0.2, 1e-12);
  EXPECT_NEAR(c.gpu_flops, flops / 0.2, 1e-3);
  // On the step time: the model of the calibration run (8 ranks on one node) reproduces its
  // median step of 0.5 s.
  const Calibration s = calibrate({load_measured_run(fixture("calibration-shm.jsonl"))}, e.model,
                                  e.cluster, e.layout, CalibrationBasis::kStepTime);
  EXPECT_NEAR(s.measured_s, 0.5, 1e-12);
  ClusterConfig one_node = e.cluster;
  one_node.nodes = 1;
  one_node.gpus_per_node = 8;
  one_node.gpu_flops = s.gpu_flops;
  EXPECT_NEAR(simulate(e.model, one_node, e.layout, SimPolicy::baseline()).time.iteration, 0.5,
              1e-9);
  EXPECT_NEAR(s.compute_s, s.flops_per_rank_step / s.gpu_flops, 1e-12);
  // Several runs: the median of their medians (here 0.5 s, 0.5 s and a slower 0.8 s).
  MeasuredRun slower = load_measured_run(fixture("calibration-shm.jsonl"));
  slower.step_s = 0.8;
  const MeasuredRun run = load_measured_run(fixture("calibration-shm.jsonl"));
  const Calibration three =
      calibrate({run, slower, run}, e.model, e.cluster, e.layout, CalibrationBasis::kStepTime);
  EXPECT_NEAR(three.measured_s, 0.5, 1e-12);
  EXPECT_NEAR(three.gpu_flops, s.gpu_flops, 1e-6 * s.gpu_flops);
  // Only baselines calibrate.
  EXPECT_NE(testing::invalid_message([&] {
              calibrate({load_measured_run(fixture("hybrid-100mbit.jsonl"))}, e.model, e.cluster,
                        e.layout);
            }).find("calibrated on baseline runs"),
            std::string::npos);
  // A baseline on netemu calibrates with its own cluster: the model at its rate reproduces it.
  const MeasuredRun on_netemu = load_measured_run(fixture("baseline-100mbit.jsonl"));
  const Calibration n =
      calibrate({on_netemu}, e.model, e.cluster, e.layout, CalibrationBasis::kStepTime);
  ClusterConfig at_rate = e.cluster;
  at_rate.inter_node.bandwidth = 1e8 / 8;
  at_rate.gpu_flops = n.gpu_flops;
  EXPECT_NEAR(simulate(e.model, at_rate, e.layout, SimPolicy::baseline()).time.iteration, 1.5,
              1e-9);
}

// A policy lookup that knows the fixtures' policies: baseline, and hybrid as fixed figures.
SimPolicy fixture_policy(const RunDescription& run) {
  if (run.policy == "baseline") return SimPolicy::baseline();
  return SimPolicy::parse_figures(
      "name = \"hybrid\"\n[default]\ncodec = \"bf16\"\nratio = 2.0\n"
      "[dp]\ncodec = \"ef+quant\"\nratio = 4.571\n",
      "fixture-hybrid.toml");
}

TEST(SimValidation, PredictsEachRunAtItsRateAndComparesSpeedups) {
  const Experiment e;
  const Calibration c = calibrate({load_measured_run(fixture("calibration-shm.jsonl"))}, e.model,
                                  e.cluster, e.layout);
  const std::vector<MeasuredRun> runs = {load_measured_run(fixture("baseline-100mbit.jsonl")),
                                         load_measured_run(fixture("hybrid-100mbit.jsonl"))};
  const auto rows =
      validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, runs, fixture_policy);
  ASSERT_EQ(rows.size(), 2u);
  // The prediction is the model at the run's rate with the calibrated compute speed.
  ClusterConfig at_rate = e.cluster;
  at_rate.gpu_flops = c.gpu_flops;
  at_rate.inter_node.bandwidth = 1e8 / 8;
  const double base = simulate(e.model, at_rate, e.layout, SimPolicy::baseline()).time.iteration;
  const double hybrid =
      simulate(e.model, at_rate, e.layout, fixture_policy(runs[1].run)).time.iteration;
  EXPECT_DOUBLE_EQ(rows[0].predicted_step, base);
  EXPECT_NEAR(rows[0].predicted_compute, 0.2, 1e-12);  // the calibration run's compute
  EXPECT_NEAR(rows[0].step_error, base / 1.5 - 1, 1e-12);
  EXPECT_FALSE(rows[0].has_speedup);
  ASSERT_TRUE(rows[1].has_speedup);
  EXPECT_NEAR(rows[1].measured_speedup, 1.5 / 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(rows[1].predicted_speedup, base / hybrid);
  EXPECT_NEAR(rows[1].speedup_error, base / hybrid - 1.5 / 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(rows[1].predicted_comm,
                   rows[1].prediction.time.iteration - rows[1].prediction.time.compute);
  // Message sizes: the model's tp and pp messages are the trainer's exactly.
  for (const TrafficCheck& t : rows[1].traffic) {
    if (t.dimension == "tp" || t.dimension == "pp") {
      EXPECT_DOUBLE_EQ(t.predicted_message_bytes, t.measured_message_bytes) << t.dimension;
    }
  }
}

TEST(SimValidation, EachRunTakesTheCalibrationOfItsDirectory) {
  const Experiment e;
  const auto at = [](const std::string& name, const std::string& source) {
    MeasuredRun r = load_measured_run(fixture(name));
    r.source = source;
    return r;
  };
  const MeasuredRun cal_a = at("calibration-shm.jsonl", "/r/a/calibration-shm.jsonl");
  MeasuredRun cal_b = at("calibration-shm.jsonl", "/r/b/calibration-shm.jsonl");
  cal_b.step_s = 0.8;
  const std::vector<MeasuredRun> runs = {at("baseline-100mbit.jsonl", "/r/a/baseline.jsonl"),
                                         at("hybrid-100mbit.jsonl", "/r/b/hybrid.jsonl"),
                                         at("baseline-100mbit.jsonl", "/r/c/baseline.jsonl")};
  const CalibrationSet set =
      calibrate_for({cal_a, cal_b}, runs, CalibrationMatch::kDirectory, e.model, e.cluster,
                    e.layout, CalibrationBasis::kStepTime);
  // 0: all of them (for the run in /r/c, which has none), then one per directory.
  ASSERT_EQ(set.calibrations.size(), 3u);
  EXPECT_EQ(set.of_run, (std::vector<size_t>{1, 2, 0}));
  EXPECT_NEAR(set.calibrations[0].measured_s, 0.65, 1e-12);  // median of 0.5 and 0.8
  EXPECT_NEAR(set.calibrations[1].measured_s, 0.5, 1e-12);
  EXPECT_NEAR(set.calibrations[2].measured_s, 0.8, 1e-12);
  EXPECT_GT(set.calibrations[1].gpu_flops, set.calibrations[2].gpu_flops);
  // Each prediction uses its run's calibration; the speedup compares the two predictions.
  const std::vector<MeasuredRun> pair = {runs[0], runs[1]};
  const CalibrationSet two =
      calibrate_for({cal_a, cal_b}, pair, CalibrationMatch::kDirectory, e.model, e.cluster,
                    e.layout, CalibrationBasis::kStepTime);
  const auto rows = validate(e.model, e.cluster, e.layout, two, pair, fixture_policy);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].calibration, 1u);
  EXPECT_EQ(rows[1].calibration, 2u);
  EXPECT_NEAR(rows[0].predicted_compute, two.calibrations[1].compute_s, 1e-12);
  EXPECT_NEAR(rows[1].predicted_compute, two.calibrations[2].compute_s, 1e-12);
  EXPECT_DOUBLE_EQ(rows[1].predicted_speedup, rows[0].predicted_step / rows[1].predicted_step);
  EXPECT_NE(validation_table(two, rows, {}).find("# calibration 2 on the step time: /r/b/"),
            std::string::npos);
  EXPECT_EQ(validation_json(two, rows, {})["runs"][1]["calibration"], 2);
  // All: one calibration for every run; one directory: the same.
  const CalibrationSet all = calibrate_for({cal_a, cal_b}, runs, CalibrationMatch::kAll, e.model,
                                           e.cluster, e.layout, CalibrationBasis::kStepTime);
  EXPECT_EQ(all.calibrations.size(), 1u);
  EXPECT_EQ(&all.of(2), &all.calibrations[0]);
  EXPECT_EQ(calibrate_for({cal_a}, runs, CalibrationMatch::kDirectory, e.model, e.cluster, e.layout,
                          CalibrationBasis::kStepTime)
                .calibrations.size(),
            1u);
}

TEST(SimValidation, PassCriteriaAreInclusiveBounds) {
  const Experiment e;
  const Calibration c = calibrate({load_measured_run(fixture("calibration-shm.jsonl"))}, e.model,
                                  e.cluster, e.layout);
  std::vector<MeasuredRun> runs = {load_measured_run(fixture("baseline-100mbit.jsonl")),
                                   load_measured_run(fixture("hybrid-100mbit.jsonl"))};
  const auto first =
      validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, runs, fixture_policy);
  const double base = first[0].predicted_step, hybrid = first[1].predicted_step;
  // Measured 20% above the prediction (error -1/6) passes, 30% above does not; the hybrid
  // speedup 0.05 off passes, 0.15 off does not.
  runs[0].step_s = base * 1.2;
  runs[1].step_s = runs[0].step_s / (base / hybrid + 0.05);
  auto rows = validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, runs, fixture_policy);
  EXPECT_TRUE(rows[0].step_pass);
  EXPECT_TRUE(rows[1].speedup_pass);
  EXPECT_NEAR(rows[1].speedup_error, -0.05, 1e-12);
  runs[0].step_s = base * 1.3;
  runs[1].step_s = runs[0].step_s / (base / hybrid + 0.15);
  rows = validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, runs, fixture_policy);
  EXPECT_FALSE(rows[0].step_pass);
  EXPECT_FALSE(rows[1].speedup_pass);
  EXPECT_FALSE(all_pass(rows));
  const std::string table = validation_table(CalibrationSet{{c}, {}}, rows, {});
  EXPECT_NE(table.find("FAIL"), std::string::npos);
  EXPECT_EQ(validation_json(CalibrationSet{{c}, {}}, rows, {})["all_pass"], false);
}

TEST(SimValidation, RejectsRunsOfAnotherSetupAndRepeats) {
  const Experiment e;
  const Calibration c = calibrate({load_measured_run(fixture("calibration-shm.jsonl"))}, e.model,
                                  e.cluster, e.layout);
  MeasuredRun other = load_measured_run(fixture("baseline-100mbit.jsonl"));
  other.run.hosts = 8;
  other.run.ranks_per_node = 1;
  EXPECT_NE(
      testing::invalid_message([&] {
        validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, {other}, fixture_policy);
      }).find("hosts 8, but cluster netemu-4x2 has 4"),
      std::string::npos);
  const MeasuredRun base = load_measured_run(fixture("baseline-100mbit.jsonl"));
  EXPECT_NE(testing::invalid_message([&] {
              validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, {base, base},
                       fixture_policy);
            }).find("two measured runs of baseline @ 100mbit"),
            std::string::npos);
  const MeasuredRun shm = load_measured_run(fixture("calibration-shm.jsonl"));
  EXPECT_NE(
      testing::invalid_message([&] {
        validate(e.model, e.cluster, e.layout, CalibrationSet{{c}, {}}, {shm}, fixture_policy);
      }).find("did not run on tools/netemu"),
      std::string::npos);
}

}  // namespace
}  // namespace hycc::sim
