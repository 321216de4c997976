// Kernel launches of the CUDA emulator: the grid runs block after block on the stream's worker
// thread; the threads of a block run on fibers, scheduled round robin; a thread leaves the run
// queue at a warp intrinsic or __syncthreads until its partners arrive. When no thread can run
// and some have not finished, the block is stuck (a lane of a warp intrinsic's mask exited or
// waits at a different intrinsic): the launch fails with a description instead of hanging.
#include <array>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "fiber.h"
#include "runtime_internal.h"

namespace cuda_emu {
namespace {

constexpr unsigned kWarp = 32;

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kSync:
      return "__syncwarp";
    case WarpOp::kShflIdx:
      return "__shfl_sync";
    case WarpOp::kShflXor:
      return "__shfl_xor_sync";
    case WarpOp::kShflDown:
      return "__shfl_down_sync";
    case WarpOp::kShflUp:
      return "__shfl_up_sync";
    case WarpOp::kBallot:
      return "__ballot_sync";
    case WarpOp::kAny:
      return "__any_sync";
    default:
      return "__all_sync";
  }
}

// A warp intrinsic some lanes of its mask have reached.
struct PendingWarpOp {
  WarpOp op;
  unsigned mask;
  int width;
  unsigned arrived = 0;
  std::array<uint64_t, kWarp> value{};
  std::array<int, kWarp> arg{};
};

enum class LaneState { kRunnable, kWarpWait, kBarrier, kDone };

class BlockRunner;

struct Lane {
  BlockRunner* runner = nullptr;
  std::unique_ptr<Fiber> fiber;
  LaneState state = LaneState::kDone;
  ThreadIndex index{};
  unsigned linear = 0;
};

// Runs the blocks of the launches of one worker thread; keeps its fibers between launches.
class BlockRunner {
 public:
  // Runs block `block` of the grid; "" or what went wrong.
  std::string run(const LaunchConfig& c, uint3 block, const std::function<void()>& body) {
    const unsigned threads = c.block.x * c.block.y * c.block.z;
    while (lanes_.size() < threads) {
      auto lane = std::make_unique<Lane>();
      lane->runner = this;
      lane->fiber = std::make_unique<Fiber>(&BlockRunner::lane_main, lane.get());
      lanes_.push_back(std::move(lane));
    }
    body_ = &body;
    error_.clear();
    pending_.assign((threads + kWarp - 1) / kWarp, {});
    results_.assign(pending_.size(), {});
    for (unsigned t = 0; t < threads; ++t) {
      Lane& l = *lanes_[t];
      l.state = LaneState::kRunnable;
      l.linear = t;
      l.index = {{t % c.block.x, t / c.block.x % c.block.y, t / (c.block.x * c.block.y)},
                 block,
                 c.block,
                 c.grid};
    }
    threads_ = threads;
    const bool reverse = reverse_order();
    for (;;) {
      bool ran = false, all_done = true;
      for (unsigned i = 0; i < threads && error_.empty(); ++i) {
        Lane& l = *lanes_[reverse ? threads - 1 - i : i];
        if (l.state == LaneState::kRunnable) {
          running_ = &l;
          l.fiber->resume();
          running_ = nullptr;
          ran = true;
        }
        all_done = all_done && l.state == LaneState::kDone;
      }
      if (!error_.empty()) break;
      if (all_done) return "";
      if (!ran && !release_barrier()) {
        error_ = describe_stuck();
        break;
      }
    }
    // Abandon the lanes left inside the kernel.
    for (unsigned t = 0; t < threads; ++t) {
      if (lanes_[t]->state != LaneState::kDone) {
        lanes_[t]->fiber->reset();
        lanes_[t]->state = LaneState::kDone;
      }
    }
    return error_;
  }

  Lane& running() { return *running_; }

  uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
    Lane& me = running();
    const unsigned warp = me.linear / kWarp, lane = me.linear % kWarp;
    const unsigned warp_lanes = std::min(kWarp, threads_ - warp * kWarp);
    const unsigned existing = warp_lanes == kWarp ? ~0u : (1u << warp_lanes) - 1;
    if ((mask >> lane & 1u) == 0) {
      set_error(describe(op, mask, warp) + ": the mask excludes the calling lane " +
                std::to_string(lane));
      stall(me);
    }
    if ((mask & ~existing) != 0) {
      set_error(describe(op, mask, warp) + ": the mask names lanes the block does not have");
      stall(me);
    }
    if (width <= 0 || width > static_cast<int>(kWarp) || (width & (width - 1)) != 0) {
      set_error(describe(op, mask, warp) + ": width " + std::to_string(width) +
                " is not a power of 2 up to 32");
      stall(me);
    }
    std::vector<PendingWarpOp>& pending = pending_[warp];
    PendingWarpOp* p = nullptr;
    for (auto& candidate : pending) {
      if (candidate.mask == mask) p = &candidate;
    }
    if (p == nullptr) {
      pending.push_back({op, mask, width});
      p = &pending.back();
    } else if (p->op != op || p->width != width) {
      set_error(describe(op, mask, warp) + ": other lanes of the mask wait at " + op_name(p->op) +
                " (width " + std::to_string(p->width) + ")");
      stall(me);
    }
    p->value[lane] = value;
    p->arg[lane] = arg;
    p->arrived |= 1u << lane;
    if (p->arrived == mask) {
      complete(warp, *p);
      pending.erase(pending.begin() + (p - pending.data()));
    } else {
      me.state = LaneState::kWarpWait;
      me.fiber->yield();
    }
    return results_[warp][lane];
  }

  void sync_block() {
    Lane& me = running();
    me.state = LaneState::kBarrier;
    me.fiber->yield();
  }

 private:
  static void lane_main(void* arg) {
    auto* lane = static_cast<Lane*>(arg);
    for (;;) {
      try {
        (*lane->runner->body_)();
      } catch (const std::exception& e) {
        lane->runner->set_error(std::string("a thread threw: ") + e.what());
      }
      lane->state = LaneState::kDone;
      lane->fiber->yield();
    }
  }

  static std::string describe(WarpOp op, unsigned mask, unsigned warp) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s(mask 0x%08x) in warp %u", op_name(op), mask, warp);
    return buf;
  }

  void set_error(const std::string& what) {
    if (error_.empty()) error_ = what;
  }

  // Parks the running lane for good (the runner stops and resets the fiber). Called after the
  // message's temporaries are gone: the frames of a reset fiber are never unwound.
  [[noreturn]] void stall(Lane& me) {
    me.state = LaneState::kWarpWait;
    for (;;) me.fiber->yield();
  }

  // The results of a warp intrinsic every lane of its mask has reached; lanes leave the wait.
  void complete(unsigned warp, const PendingWarpOp& p) {
    uint64_t ballot = 0;
    for (unsigned l = 0; l < kWarp; ++l) {
      if ((p.mask >> l & 1u) != 0 && p.value[l] != 0) ballot |= uint64_t{1} << l;
    }
    for (unsigned l = 0; l < kWarp; ++l) {
      if ((p.mask >> l & 1u) == 0) continue;
      const unsigned w = static_cast<unsigned>(p.width), segment = l / w * w;
      const unsigned a = static_cast<unsigned>(p.arg[l]);
      unsigned src = l;
      switch (p.op) {
        case WarpOp::kShflIdx:
          src = segment + a % w;
          break;
        case WarpOp::kShflXor:
          src = (l ^ a) < segment + w ? l ^ a : l;
          break;
        case WarpOp::kShflDown:
          src = l % w + a < w ? l + a : l;
          break;
        case WarpOp::kShflUp:
          src = l % w >= a ? l - a : l;
          break;
        default:
          break;
      }
      if ((p.mask >> src & 1u) == 0) {
        if (error_.empty()) {
          error_ = describe(p.op, p.mask, warp) + ": lane " + std::to_string(l) + " reads lane " +
                   std::to_string(src) + ", which is not in the mask";
        }
        return;
      }
      uint64_t r = p.value[src];
      if (p.op == WarpOp::kSync) r = 0;
      if (p.op == WarpOp::kBallot) r = ballot;
      if (p.op == WarpOp::kAny) r = ballot != 0;
      if (p.op == WarpOp::kAll) r = ballot == p.mask;
      results_[warp][l] = r;
      Lane& lane = *lanes_[warp * kWarp + l];
      if (lane.state == LaneState::kWarpWait) lane.state = LaneState::kRunnable;
    }
  }

  // __syncthreads: when every thread still running waits at it, they all go on.
  bool release_barrier() {
    bool any = false;
    for (unsigned t = 0; t < threads_; ++t) {
      const LaneState s = lanes_[t]->state;
      if (s == LaneState::kWarpWait) return false;
      any = any || s == LaneState::kBarrier;
    }
    for (unsigned t = 0; t < threads_; ++t) {
      if (lanes_[t]->state == LaneState::kBarrier) lanes_[t]->state = LaneState::kRunnable;
    }
    return any;
  }

  std::string describe_stuck() const {
    std::ostringstream s;
    s << "threads wait forever:";
    for (size_t w = 0; w < pending_.size(); ++w) {
      for (const PendingWarpOp& p : pending_[w]) {
        unsigned exited = 0;
        for (unsigned l = 0; l < kWarp; ++l) {
          const size_t t = w * kWarp + l;
          if (t < threads_ && lanes_[t]->state == LaneState::kDone) exited |= 1u << l;
        }
        char buf[160];
        std::snprintf(buf, sizeof(buf),
                      " %s(mask 0x%08x) in warp %zu reached by lanes 0x%08x, exited 0x%08x;",
                      op_name(p.op), p.mask, w, p.arrived, exited & p.mask);
        s << buf;
      }
    }
    return s.str();
  }

  std::vector<std::unique_ptr<Lane>> lanes_;
  const std::function<void()>* body_ = nullptr;
  unsigned threads_ = 0;
  Lane* running_ = nullptr;
  std::string error_;
  std::vector<std::vector<PendingWarpOp>> pending_;
  std::vector<std::array<uint64_t, kWarp>> results_;
};

thread_local BlockRunner* active = nullptr;

BlockRunner& runner() {
  thread_local BlockRunner r;
  return r;
}

std::string check_config(const LaunchConfig& c) {
  const uint64_t threads = uint64_t{c.block.x} * c.block.y * c.block.z;
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || threads == 0) return "an empty grid";
  if (threads > 1024 || c.block.z > 64) return "more than 1024 threads per block";
  if (c.grid.x > 0x7fffffffu || c.grid.y > 65535 || c.grid.z > 65535) return "a grid too large";
  if (c.shared_bytes > 48 * 1024) return "more than 48 KiB of dynamic shared memory";
  return "";
}

std::string where(const LaunchConfig& c) {
  return std::string(c.file) + ":" + std::to_string(c.line);
}

}  // namespace

ThreadIndex& current() {
  thread_local ThreadIndex host{};
  return active != nullptr ? active->running().index : host;
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
  if (active == nullptr) {
    fail("a warp intrinsic called outside a kernel");
    return 0;
  }
  return active->warp_collective(op, mask, value, arg, width);
}

void sync_block() {
  if (active == nullptr) {
    fail("__syncthreads called outside a kernel");
    return;
  }
  active->sync_block();
}

bool pointer_argument_ok(const LaunchConfig& c, size_t index, const void* p) {
  const std::string problem = describe_kernel_access(p);
  if (problem.empty()) return true;
  fail(("kernel launched at " + where(c) + ": argument " + std::to_string(index) + " (" + problem +
        ")")
           .c_str());
  return false;
}

void launch(const LaunchConfig& c, std::function<void()> body) {
  if (const std::string bad = check_config(c); !bad.empty()) {
    std::fprintf(stderr, "cuda-emu: launch at %s: %s\n", where(c).c_str(), bad.c_str());
    record(cudaErrorInvalidConfiguration);
    return;
  }
  std::string label = where(c);
  enqueue(c.stream, [c, label, body = std::move(body)] {
    const bool reverse = reverse_order();
    const uint64_t blocks = uint64_t{c.grid.x} * c.grid.y * c.grid.z;
    BlockRunner& r = runner();
    active = &r;
    for (uint64_t i = 0; i < blocks; ++i) {
      const uint64_t b = reverse ? blocks - 1 - i : i;
      const uint3 block{static_cast<unsigned>(b % c.grid.x),
                        static_cast<unsigned>(b / c.grid.x % c.grid.y),
                        static_cast<unsigned>(b / (uint64_t{c.grid.x} * c.grid.y))};
      const std::string error = r.run(c, block, body);
      if (!error.empty()) {
        char where_block[64];
        std::snprintf(where_block, sizeof(where_block), " (block %u,%u,%u)", block.x, block.y,
                      block.z);
        fail(("kernel launched at " + label + where_block + ": " + error).c_str());
        break;
      }
    }
    active = nullptr;
  });
}

}  // namespace cuda_emu
