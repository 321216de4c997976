/* hycc from C (hycc.h, libhycc_c): a tensor compressed into a stream and decoded, then a
 * compressed allreduce with the hybrid policy choosing by the communicator's name. Run under
 * mpirun (2 or more ranks); rank 0 prints; exits with 1 on an error. */
#include <hycc/hycc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TRY(call)                                                   \
  do {                                                              \
    if ((call) != HYCC_OK) {                                        \
      fprintf(stderr, "c_api: %s: %s\n", #call, hycc_last_error()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                 \
    }                                                               \
  } while (0)

enum { kCount = 1 << 20 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float* grad = malloc(sizeof(float) * kCount);
  float* back = malloc(sizeof(float) * kCount);
  if (grad == NULL || back == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int i = 0; i < kCount; ++i) grad[i] = sinf(0.001f * (float)i + (float)rank);

  /* A stream: self-describing and checksummed; any rank or program can decode it. */
  hycc_codec* codec = NULL;
  size_t capacity = 0, bytes = 0;
  TRY(hycc_codec_create("quant:bits=4", &codec));
  TRY(hycc_max_compressed_bytes(codec, HYCC_F32, kCount, &capacity));
  unsigned char* stream = malloc(capacity);
  if (stream == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  TRY(hycc_compress(codec, HYCC_F32, kCount, grad, stream, capacity, 0, &bytes));
  TRY(hycc_decompress(stream, bytes, HYCC_F32, kCount, back));
  double worst = 0;
  for (int i = 0; i < kCount; ++i) worst = fmax(worst, fabs((double)back[i] - grad[i]));
  if (rank == 0) {
    printf("c_api: %s: %zu bytes for %zu (%.2fx), largest error %.3g\n", hycc_codec_spec(codec),
           bytes, sizeof(float) * (size_t)kCount, (double)(sizeof(float) * kCount) / (double)bytes,
           worst);
  }

  /* The policy chooses: on a communicator named "dp", hybrid's gradient compressor (6-bit
   * quantization with error feedback, keyed by the tensor's id). */
  MPI_Comm dp;
  MPI_Comm_dup(MPI_COMM_WORLD, &dp);
  MPI_Comm_set_name(dp, "dp");
  hycc_engine* engine = NULL;
  TRY(hycc_engine_create("hybrid", &engine));
  hycc_call_stats stats;
  hycc_options options;
  hycc_options_init(&options);
  options.engine = engine;
  options.key = 1;
  options.stats = &stats;
  TRY(hycc_allreduce(MPI_IN_PLACE, grad, kCount, HYCC_F32, HYCC_SUM, dp, &options));
  if (rank == 0) {
    printf("c_api: allreduce on dp under hybrid: %zu bytes sent for %zu, %.1f ms\n",
           stats.wire_bytes, stats.raw_bytes, stats.seconds * 1e3);
  }
  TRY(hycc_engine_finish(engine, dp)); /* rank 0: the engine's statistics on stderr */
  hycc_engine_destroy(engine);
  hycc_codec_destroy(codec);
  MPI_Comm_free(&dp);
  free(stream);
  free(grad);
  free(back);
  if (rank == 0) printf("c_api: OK\n");
  MPI_Finalize();
  return 0;
}
