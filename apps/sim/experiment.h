// An experiment: which model, cluster, layout, codec figures and policies to compare. Each is
// named (a file built in from configs/, see embedded_configs.h) or given as a path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codec_table.h"
#include "config.h"
#include "sim_policy.h"

namespace hycc::sim {

struct ExperimentSpec {
  std::string name, description;
  std::string model, cluster, layout;      // names or paths
  std::vector<std::string> codec_figures;  // hycc-bench codec --json outputs: names or paths
  std::vector<std::string> policies;       // sim-policies, hycc presets, or paths
};

// configs/experiments/*.toml: name, description, model, cluster, layout, codec_figures, policies.
ExperimentSpec parse_experiment(std::string_view toml, std::string source);

// The text of a configuration: `name_or_path` is a file when one exists at that path, otherwise
// the name of a built-in file of `kind` ("models", "clusters", "layouts", "experiments",
// "sim-policies", "codec-figures") without its extension. `source` receives what to call it in
// errors. Throws InvalidArgument listing the built-in names of that kind.
std::string read_config(std::string_view kind, const std::string& name_or_path,
                        std::string& source);
// The whole text of a file; throws InvalidArgument naming it when it cannot be read.
std::string read_text_file(const std::string& path);
// Built-in names of a kind, sorted.
std::vector<std::string> config_names(std::string_view kind);

ExperimentSpec load_experiment(const std::string& name_or_path);
ModelConfig load_model(const std::string& name_or_path);
ClusterConfig load_cluster(const std::string& name_or_path);
LayoutConfig load_layout(const std::string& name_or_path);
CodecTable load_codec_figures(const std::vector<std::string>& names_or_paths);
// A policy: a built-in sim policy (configs/sim-policies, either format), a hycc preset, or a path
// to a figures file or a hycc policy file (one with [[rule]] tables).
SimPolicy load_policy(const std::string& name_or_path, const CodecTable& codecs);

}  // namespace hycc::sim
