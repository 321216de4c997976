// The device side of the CUDA emulator: what kernel code sees (threadIdx and friends, warp
// intrinsics, atomics, float4) and the launch of `kernel<<<grid, block, shared, stream>>>(args)`,
// which the build rewrites to `kernel * ::cuda_emu::LaunchConfig(__FILE__, __LINE__, grid,
// block, shared, stream)(args)` (tests/cuda_emu/translate.cmake).
//
// Every thread of a block runs on a fiber of its own; a warp intrinsic waits until every lane of
// its mask has reached it, so warp-synchronous code behaves as on a GPU, and a lane of the mask
// that exited or waits elsewhere is reported as an error of the launch instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

// Qualifiers of CUDA C++: no meaning on the CPU. __shared__ variables are per block; the blocks
// of a launch run one after another on the stream's worker thread, so thread_local (implicitly
// static at block scope) gives every block of a kernel the same storage, as a GPU does.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ thread_local
#define __launch_bounds__(...)

struct CUstream_st;
using cudaStream_t = CUstream_st*;

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

struct alignas(16) float4 {
  float x, y, z, w;
};

namespace cuda_emu {

// The indices of the thread running now (set by the block scheduler for the current fiber).
struct ThreadIndex {
  uint3 thread, block;
  dim3 block_dim, grid_dim;
};
ThreadIndex& current();

// Warp intrinsics: every lane of `mask` deposits a value; once all have, each gets the value of
// its source lane (computed by `kind`).
enum class WarpOp { kSync, kShflIdx, kShflXor, kShflDown, kShflUp, kBallot, kAny, kAll };
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width);
void sync_block();

template <typename T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <typename T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// ---- launches --------------------------------------------------------------------------------

struct LaunchConfig;

template <typename... Args>
struct PendingLaunch {
  const LaunchConfig* config;
  std::tuple<Args...> args;
};

// What `<<<grid, block, shared, stream>>>` holds, and where the launch is in the source.
struct LaunchConfig {
  const char* file;
  int line;
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;

  LaunchConfig(const char* at_file, int at_line, dim3 g, dim3 b, size_t shared = 0,
               cudaStream_t s = nullptr)
      : file(at_file), line(at_line), grid(g), block(b), shared_bytes(shared), stream(s) {}

  template <typename... Args>
  PendingLaunch<std::decay_t<Args>...> operator()(Args&&... args) const {
    return {this, std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)};
  }
};

// Queues the grid on the stream (errors of the configuration are returned by cudaGetLastError).
void launch(const LaunchConfig& config, std::function<void()> body);
// Whether a pointer argument of a kernel points into device memory (or pinned host memory);
// reports the launch's error if not.
bool pointer_argument_ok(const LaunchConfig& config, size_t index, const void* p);

template <typename T>
bool argument_ok(const LaunchConfig& config, size_t index, const T& value) {
  if constexpr (std::is_pointer_v<T>) {
    return value == nullptr || pointer_argument_ok(config, index, value);
  } else {
    return true;
  }
}

// kernel * LaunchConfig(...)(args): the arguments are converted to the kernel's parameter types
// and copied, as a CUDA launch does; pointer arguments must point to memory a GPU can reach.
template <typename... Params, typename... Args>
void operator*(void (*kernel)(Params...), PendingLaunch<Args...>&& pending) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with a wrong arity");
  std::tuple<std::decay_t<Params>...> params =
      std::apply([](auto&&... a) { return std::tuple<std::decay_t<Params>...>(std::move(a)...); },
                 std::move(pending.args));
  bool ok = true;
  size_t index = 0;
  std::apply(
      [&](const auto&... p) { ((ok = argument_ok(*pending.config, index++, p) && ok), ...); },
      params);
  if (ok) launch(*pending.config, [kernel, params] { std::apply(kernel, params); });
}

}  // namespace cuda_emu

#define threadIdx (::cuda_emu::current().thread)
#define blockIdx (::cuda_emu::current().block)
#define blockDim (::cuda_emu::current().block_dim)
#define gridDim (::cuda_emu::current().grid_dim)
inline constexpr int warpSize = 32;

// ---- warp intrinsics -------------------------------------------------------------------------

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::cuda_emu::warp_collective(::cuda_emu::WarpOp::kSync, mask, 0, 0, 32);
}
inline void __syncthreads() { ::cuda_emu::sync_block(); }

template <typename T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return ::cuda_emu::from_bits<T>(::cuda_emu::warp_collective(
      ::cuda_emu::WarpOp::kShflIdx, mask, ::cuda_emu::to_bits(v), src_lane, width));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::cuda_emu::from_bits<T>(::cuda_emu::warp_collective(
      ::cuda_emu::WarpOp::kShflXor, mask, ::cuda_emu::to_bits(v), lane_mask, width));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::cuda_emu::from_bits<T>(::cuda_emu::warp_collective(
      ::cuda_emu::WarpOp::kShflDown, mask, ::cuda_emu::to_bits(v), static_cast<int>(delta), width));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::cuda_emu::from_bits<T>(::cuda_emu::warp_collective(
      ::cuda_emu::WarpOp::kShflUp, mask, ::cuda_emu::to_bits(v), static_cast<int>(delta), width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(
      ::cuda_emu::warp_collective(::cuda_emu::WarpOp::kBallot, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      ::cuda_emu::warp_collective(::cuda_emu::WarpOp::kAny, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      ::cuda_emu::warp_collective(::cuda_emu::WarpOp::kAll, mask, predicate != 0, 0, 32));
}

// ---- atomics (the threads of a launch run on one host thread: plain read-modify-write) -------

namespace cuda_emu {
template <typename T, typename F>
T read_modify_write(T* p, F f) {
  const T old = *p;
  *p = static_cast<T>(f(old));
  return old;
}
}  // namespace cuda_emu

template <typename T>
T atomicAdd(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T old) { return old + v; });
}
template <typename T>
T atomicOr(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T old) { return old | v; });
}
template <typename T>
T atomicAnd(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T old) { return old & v; });
}
template <typename T>
T atomicMin(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T old) { return v < old ? v : old; });
}
template <typename T>
T atomicMax(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T old) { return v > old ? v : old; });
}
template <typename T>
T atomicExch(T* p, T v) {
  return ::cuda_emu::read_modify_write(p, [v](T) { return v; });
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  return ::cuda_emu::read_modify_write(p, [compare, v](T old) { return old == compare ? v : old; });
}

// The blocks of a launch run on the stream's worker thread; the host reads what a kernel wrote to
// pinned memory from another: a release fence, as a GPU's system-scope fence.
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_RELEASE); }

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(unsigned v) { return v == 0 ? 32 : __builtin_clz(v); }
inline int __clzll(unsigned long long v) { return v == 0 ? 64 : __builtin_clzll(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
