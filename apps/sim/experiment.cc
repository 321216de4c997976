#include "experiment.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "embedded_configs.h"
#include "hycc/error.h"
#include "toml_fields.h"

namespace hycc::sim {
namespace {

std::string_view extension_of(std::string_view kind) {
  return kind == "codec-figures" ? ".json" : ".toml";
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(tagged("sim", "cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> config_names(std::string_view kind) {
  std::vector<std::string> names;
  const std::string prefix = std::string(kind) + "/";
  for (const EmbeddedConfig& c : embedded_configs()) {
    if (!c.path.starts_with(prefix)) continue;
    std::string_view name = c.path.substr(prefix.size());
    name.remove_suffix(extension_of(kind).size());
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_config(std::string_view kind, const std::string& name_or_path,
                        std::string& source) {
  if (is_file(name_or_path)) {
    source = name_or_path;
    return read_text_file(name_or_path);
  }
  const std::string path = std::string(kind) + "/" + name_or_path + std::string(extension_of(kind));
  for (const EmbeddedConfig& c : embedded_configs()) {
    if (c.path == path) {
      source = "configs/" + path;
      return std::string(c.text);
    }
  }
  std::string known;
  for (const auto& n : config_names(kind)) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument(tagged("sim", "no file '", name_or_path, "' and no built-in ", kind,
                               " of that name; built in: ", known.empty() ? "none" : known));
}

ExperimentSpec parse_experiment(std::string_view toml, std::string source) {
  const TomlFields f(toml, std::move(source));
  f.require_known(
      {"name", "description", "model", "cluster", "layout", "codec_figures", "policies"});
  ExperimentSpec e;
  e.name = f.text("name", f.source());
  e.description = f.text("description", "");
  e.model = f.text("model");
  e.cluster = f.text("cluster");
  e.layout = f.text("layout");
  if (f.has("codec_figures")) e.codec_figures = f.texts("codec_figures");
  e.policies = f.has("policies") ? f.texts("policies") : std::vector<std::string>{"baseline"};
  return e;
}

ExperimentSpec load_experiment(const std::string& name_or_path) {
  std::string source;
  const std::string text = read_config("experiments", name_or_path, source);
  return parse_experiment(text, source);
}

ModelConfig load_model(const std::string& name_or_path) {
  std::string source;
  const std::string text = read_config("models", name_or_path, source);
  return parse_model(text, source);
}

ClusterConfig load_cluster(const std::string& name_or_path) {
  std::string source;
  const std::string text = read_config("clusters", name_or_path, source);
  return parse_cluster(text, source);
}

LayoutConfig load_layout(const std::string& name_or_path) {
  std::string source;
  const std::string text = read_config("layouts", name_or_path, source);
  return parse_layout(text, source);
}

CodecTable load_codec_figures(const std::vector<std::string>& names_or_paths) {
  CodecTable table;
  for (const auto& n : names_or_paths) {
    std::string source;
    const std::string text = read_config("codec-figures", n, source);
    table.add_json(text, source);
  }
  return table;
}

namespace {

// A policy's text: a hycc policy has [[rule]] tables, a figures file per-dimension tables.
SimPolicy parse_sim_policy(const std::string& text, const std::string& source,
                           const CodecTable& codecs) {
  const TomlFields probe(text, source);
  if (probe.has("rule")) return SimPolicy::from_policy(Policy::parse_toml(text, source), codecs);
  return SimPolicy::parse_figures(text, source);
}

}  // namespace

SimPolicy load_policy(const std::string& name_or_path, const CodecTable& codecs) {
  const auto builtin = config_names("sim-policies");
  if (!is_file(name_or_path) &&
      std::find(builtin.begin(), builtin.end(), name_or_path) != builtin.end()) {
    std::string source;
    const std::string text = read_config("sim-policies", name_or_path, source);
    return parse_sim_policy(text, source, codecs);
  }
  if (!is_file(name_or_path)) {
    const auto presets = Policy::preset_names();
    if (std::find(presets.begin(), presets.end(), name_or_path) == presets.end()) {
      std::string known;
      for (const auto& n : presets) known += (known.empty() ? "" : ", ") + n;
      for (const auto& n : builtin) known += ", " + n;
      throw InvalidArgument(
          tagged("sim", "policy '", name_or_path,
                 "' is no file, hycc preset or built-in sim policy; known: ", known));
    }
    return SimPolicy::from_policy(Policy::preset(name_or_path), codecs);
  }
  return parse_sim_policy(read_text_file(name_or_path), name_or_path, codecs);
}

}  // namespace hycc::sim
