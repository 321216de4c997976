// The CUDA emulator against CUDA's semantics (built for the emulator only, as the hycc sources
// are): warp intrinsics, __syncthreads with shared memory, the asynchrony of streams and events,
// and the errors a GPU would hit that the emulator turns into clear launch failures.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <cub/device/device_scan.cuh>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Sticky errors end a process's use of a GPU; the tests of error paths clear it after checking.
class CudaEmu : public ::testing::Test {
 protected:
  void TearDown() override { cuda_emu::clear_sticky_error_for_testing(); }

  template <typename T>
  static T* device(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
    return static_cast<T*>(p);
  }
  template <typename T>
  static std::vector<T> host(const T* d, size_t n) {
    std::vector<T> v(n);
    EXPECT_EQ(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  static std::string sticky_message() { return cudaGetErrorString(cudaErrorLaunchFailure); }
};

// out[t * 6 + k]: the k-th intrinsic's result of thread t.
__global__ void warp_kernel(unsigned* out) {
  const unsigned t = threadIdx.x, lane = t % 32;
  unsigned sum = lane;
  for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(kFull, sum, d);
  out[t * 6 + 0] = sum;
  out[t * 6 + 1] = __shfl_down_sync(kFull, lane * 10, 3);
  out[t * 6 + 2] = __shfl_up_sync(kFull, lane * 10, 2, 8);
  out[t * 6 + 3] = __shfl_sync(kFull, lane + 100, 5, 16);
  out[t * 6 + 4] = __ballot_sync(kFull, lane % 2);
  out[t * 6 + 5] = static_cast<unsigned>(__any_sync(kFull, lane == 7)) << 1 |
                   static_cast<unsigned>(__all_sync(kFull, lane < 31));
}

TEST_F(CudaEmu, WarpIntrinsicsFollowCudaSemantics) {
  unsigned* d = device<unsigned>(64 * 6);
  warp_kernel<<<1, 64>>>(d);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<unsigned> out = host(d, 64 * 6);
  for (unsigned t = 0; t < 64; ++t) {
    const unsigned lane = t % 32;
    EXPECT_EQ(out[t * 6 + 0], 496u) << t;  // 0 + 1 + ... + 31
    EXPECT_EQ(out[t * 6 + 1], (lane + 3 < 32 ? lane + 3 : lane) * 10) << t;
    EXPECT_EQ(out[t * 6 + 2], (lane % 8 >= 2 ? lane - 2 : lane) * 10) << t;
    EXPECT_EQ(out[t * 6 + 3], lane / 16 * 16 + 5 + 100) << t;
    EXPECT_EQ(out[t * 6 + 4], 0xaaaaaaaau) << t;
    EXPECT_EQ(out[t * 6 + 5], 2u) << t;  // any: lane 7; all: not lane 31
  }
  cudaFree(d);
}

// Thread t returns what thread n-1-t stored before the barrier.
__global__ void reverse_kernel(const int* in, int* out) {
  __shared__ int tile[256];
  const unsigned t = threadIdx.x, n = blockDim.x;
  tile[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = tile[n - 1 - t];
}

TEST_F(CudaEmu, SyncthreadsOrdersSharedMemory) {
  const int n = 256, blocks = 3;
  std::vector<int> in(n * blocks);
  for (int i = 0; i < n * blocks; ++i) in[static_cast<size_t>(i)] = i * 7 + 1;
  int* d_in = device<int>(in.size());
  int* d_out = device<int>(in.size());
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  reverse_kernel<<<blocks, n>>>(d_in, d_out);
  const std::vector<int> out = host(d_out, in.size());
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < n; ++t) EXPECT_EQ(out[b * n + t], in[b * n + n - 1 - t]) << b << " " << t;
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_F(CudaEmu, ScansAsCub) {
  const std::vector<uint32_t> in = {3, 1, 4, 1, 5, 9, 2, 6};
  uint32_t* d_in = device<uint32_t>(in.size());
  uint32_t* d_out = device<uint32_t>(in.size());
  cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice);
  size_t temp_bytes = 0;
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, d_in, d_out, 8), cudaSuccess);
  void* temp = device<char>(temp_bytes);
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_in, d_out, 8), cudaSuccess);
  EXPECT_EQ(host(d_out, 8), (std::vector<uint32_t>{0, 3, 4, 8, 9, 14, 23, 25}));
  ASSERT_EQ(cub::DeviceScan::InclusiveSum(temp, temp_bytes, d_in, d_out, 8), cudaSuccess);
  EXPECT_EQ(host(d_out, 8), (std::vector<uint32_t>{3, 4, 8, 9, 14, 23, 25, 31}));
  cudaFree(temp);
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_F(CudaEmu, NewDeviceMemoryIsJunk) {
  uint32_t* d = device<uint32_t>(4);
  EXPECT_EQ(host(d, 4), std::vector<uint32_t>(4, 0xa5a5a5a5u));
  cudaFree(d);
}

// Streams run asynchronously to the host: a gate holds one until the test opens it.
TEST_F(CudaEmu, StreamsAndEventsAreAsynchronous) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  uint32_t* d = device<uint32_t>(1);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 4, cudaHostAllocDefault), cudaSuccess);
  *static_cast<uint32_t*>(pinned) = 77;
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  cuda_emu::enqueue(s, [opened] { opened.wait(); });
  ASSERT_EQ(cudaMemsetAsync(d, 0x11, 4, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d, 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
  cudaEvent_t done = nullptr;
  cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  cudaEventRecord(done, s);
  // A second stream ordered after the event.
  cudaStream_t t = nullptr;
  cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
  cudaStreamWaitEvent(t, done, 0);
  ASSERT_EQ(cudaMemsetAsync(d, 0x22, 4, t), cudaSuccess);

  EXPECT_EQ(*static_cast<volatile uint32_t*>(pinned), 77u) << "a pinned copy ran before its turn";
  EXPECT_EQ(cudaEventQuery(done), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(t), cudaErrorNotReady) << "the waiting stream ran ahead";
  gate.set_value();
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  EXPECT_EQ(*static_cast<uint32_t*>(pinned), 0x11111111u);
  ASSERT_EQ(cudaStreamSynchronize(t), cudaSuccess);
  EXPECT_EQ(host(d, 1)[0], 0x22222222u);
  cudaEventDestroy(done);
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_F(CudaEmu, EventsTimeTheStream) {
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, end), cudaErrorInvalidResourceHandle) << "unrecorded";
  cudaEventRecord(start);
  cuda_emu::enqueue(nullptr, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  cudaEventRecord(end);
  cudaEventRecord(untimed);
  ASSERT_EQ(cudaEventSynchronize(end), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 19.0f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaEventDestroy(untimed);
}

TEST_F(CudaEmu, LegacyStreamWaitsForBlockingStreams) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  cuda_emu::enqueue(s, [opened] { opened.wait(); });
  uint32_t* d = device<uint32_t>(1);
  ASSERT_EQ(cudaMemsetAsync(d, 0x33, 4, nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady);
  gate.set_value();
  EXPECT_EQ(host(d, 1)[0], 0x33333333u);
  cudaStreamDestroy(s);
  cudaFree(d);
}

TEST_F(CudaEmu, CopiesCheckTheirPointers) {
  uint32_t* d = device<uint32_t>(4);
  std::vector<uint32_t> h(8);
  EXPECT_EQ(cudaMemcpy(h.data(), h.data() + 4, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue)
      << "32 bytes from a 16-byte block";
  EXPECT_EQ(cudaMemcpy(d, h.data(), 16, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky";
  EXPECT_EQ(cudaFree(h.data()), cudaErrorInvalidValue);
  cudaFree(d);
}

__global__ void store_kernel(unsigned* out) { out[threadIdx.x] = threadIdx.x; }

TEST_F(CudaEmu, BadConfigurationsFailTheLaunchOnly) {
  unsigned* d = device<unsigned>(2048);
  store_kernel<<<0, 32>>>(d);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  store_kernel<<<1, 2048>>>(d);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "a configuration error is not sticky";
  cudaFree(d);
}

TEST_F(CudaEmu, HostPointerArgumentFailsTheLaunch) {
  std::vector<unsigned> h(32);
  store_kernel<<<1, 32>>>(h.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(sticky_message().find("argument 0"), std::string::npos) << sticky_message();
  EXPECT_NE(sticky_message().find("emu_test.cu:"), std::string::npos) << sticky_message();
  EXPECT_EQ(cudaMemset(h.data(), 0, 4), cudaErrorLaunchFailure) << "sticky";
}

// Lanes 16..31 leave before a shuffle whose mask names them: undefined on a GPU.
__global__ void early_exit_kernel(unsigned* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(kFull, threadIdx.x, 1);
}

TEST_F(CudaEmu, ShuffleWithExitedLanesFailsTheLaunch) {
  unsigned* d = device<unsigned>(32);
  early_exit_kernel<<<2, 32>>>(d);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(sticky_message().find("__shfl_xor_sync(mask 0xffffffff) in warp 0 reached by lanes "
                                  "0x0000ffff, exited 0xffff0000"),
            std::string::npos)
      << sticky_message();
  cuda_emu::clear_sticky_error_for_testing();
  cudaFree(d);
}

// Half the warp at __syncwarp, half at a shuffle with the same mask.
__global__ void divergent_kernel(unsigned* out) {
  if (threadIdx.x % 2 == 0) {
    __syncwarp();
  } else {
    out[threadIdx.x] = __shfl_sync(kFull, 1u, 0);
  }
}

TEST_F(CudaEmu, DifferentIntrinsicsOnOneMaskFailTheLaunch) {
  unsigned* d = device<unsigned>(32);
  divergent_kernel<<<1, 32>>>(d);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(sticky_message().find("other lanes of the mask wait at"), std::string::npos)
      << sticky_message();
  cuda_emu::clear_sticky_error_for_testing();
  cudaFree(d);
}

}  // namespace
