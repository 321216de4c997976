// --dump-tensors DIR: samples of what each parallel dimension sends, as data for the codecs
// (hycc-bench codec --data FILE; docs/codecs.md's table of real traffic). At each dumped step,
// the first tensor of every (dimension, kind) this rank sends is written as raw little-endian
// float32, DIR/rank<R>-step<S>-<dimension>-<kind>.f32, up to a byte budget per rank (the last
// tensor cut to fit); DIR/index-rank<R>.json lists the files with the wire's element type (bf16
// under --precision bf16: the values as computed, which the wire rounds). Dimensions: tp, pp, dp,
// zero_grad, zero_param, embedding; kinds: activation, gradient, parameter, or the tensor-parallel
// reduction's name.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hycc::train {

struct TensorDumpOptions {
  std::string dir;      // empty: no dump
  std::set<int> steps;  // steps (1-based) whose traffic is dumped; empty: the last step
  size_t max_bytes = 16 << 20;
  std::string wire_dtype = "f32";  // what the wire carries ("bf16": these values rounded)
};

class TensorDump {
 public:
  // Creates dir; rank is the world rank, last_step the run's final step.
  TensorDump(TensorDumpOptions options, int rank, int last_step);

  // The step (1-based) whose traffic follows.
  void begin_step(int step);
  // Writes data[0, count) if this step is dumped, (dimension, kind) not yet written in it, and
  // budget is left.
  void record(std::string_view dimension, std::string_view kind, const float* data, size_t count);
  // Bytes written so far.
  size_t bytes() const { return written_; }

 private:
  void write_index() const;

  TensorDumpOptions options_;
  int rank_;
  int step_ = 0;
  bool active_ = false;
  size_t written_ = 0;
  std::set<std::string> done_;  // (dimension, kind) written in this step
  struct Entry {
    std::string file, dimension, kind;
    int step;
    size_t count, total;
  };
  std::vector<Entry> entries_;
};

}  // namespace hycc::train
