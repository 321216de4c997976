/* A C program on hycc's C API (include/hycc/hycc.h): compiled as C11 with strict warnings and
 * linked with libhycc_c only. Run under mpirun on 2 or more ranks; prints "capi: OK" on rank 0
 * when every check passed. What each call computes is checked against the C++ API in
 * tests/unit/capi_codec_test.cc and tests/mpi/capi_collectives_test.cc; this program shows that
 * the header and library work from C. */
#include <hycc/hycc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "capi: %s:%d: ", __FILE__, __LINE__);      \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, " (last error: %s)\n", hycc_last_error()); \
      ++failures;                                                \
    }                                                            \
  } while (0)

enum { kCount = 4096 };

static void codec_round_trips(void) {
  float in[kCount], out[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = sinf(0.01f * (float)i) * (float)(i % 13);
  hycc_codec* mpc = NULL;
  CHECK(hycc_codec_create("mpc", &mpc) == HYCC_OK, "create mpc");
  size_t capacity = 0, bytes = 0;
  CHECK(hycc_max_compressed_bytes(mpc, HYCC_F32, kCount, &capacity) == HYCC_OK, "max bytes");
  unsigned char* stream = malloc(capacity);
  CHECK(stream != NULL, "malloc");
  CHECK(hycc_compress(mpc, HYCC_F32, kCount, in, stream, capacity, 0, &bytes) == HYCC_OK,
        "compress");
  hycc_stream_info info;
  CHECK(hycc_stream_inspect(stream, bytes, &info) == HYCC_OK, "inspect");
  CHECK(info.count == kCount && info.stream_bytes == bytes && strcmp(info.spec, "mpc:dim=1") == 0,
        "inspect says count %llu, %llu bytes, spec %s", (unsigned long long)info.count,
        (unsigned long long)info.stream_bytes, info.spec);
  CHECK(hycc_decompress(stream, bytes, HYCC_F32, kCount, out) == HYCC_OK, "decompress");
  CHECK(memcmp(in, out, sizeof in) == 0, "mpc is lossless");
  stream[bytes / 2] ^= 0x40;
  CHECK(hycc_decompress(stream, bytes, HYCC_F32, kCount, out) == HYCC_ERR_CORRUPT_STREAM,
        "a flipped bit is a corrupt stream");
  CHECK(strlen(hycc_last_error()) > 0, "with a message");
  free(stream);
  hycc_codec_destroy(mpc);

  hycc_codec* bad = NULL;
  CHECK(hycc_codec_create("quant:bits=12", &bad) == HYCC_ERR_INVALID_ARGUMENT && bad == NULL,
        "quant:bits=12 is refused");
  CHECK(strstr(hycc_last_error(), "bits") != NULL, "the message names the parameter");
}

/* Small integers: every sum of them is exact in float32. */
static void fill_input(float* data, int rank) {
  for (int i = 0; i < kCount; ++i) data[i] = (float)((rank + i) % 5);
}

/* The largest |data[i] - sum over ranks of fill_input|. */
static double largest_error(const float* data, int size) {
  double worst = 0;
  for (int i = 0; i < kCount; ++i) {
    float want = 0;
    for (int r = 0; r < size; ++r) want += (float)((r + i) % 5);
    worst = fmax(worst, fabs((double)data[i] - (double)want));
  }
  return worst;
}

static void collectives(int rank, int size) {
  float data[kCount];
  hycc_codec* quant = NULL;
  CHECK(hycc_codec_create("quant:bits=8", &quant) == HYCC_OK, "create quant");
  hycc_options options;
  hycc_options_init(&options);
  options.codec = quant;
  options.threshold_bytes = 0;
  options.algorithm = HYCC_ALGO_RING; /* only compressed streams on the wire */
  hycc_call_stats stats;
  options.stats = &stats;

  /* Exact without a codec (small integers), within quant's bound with it. */
  fill_input(data, rank);
  CHECK(hycc_allreduce(MPI_IN_PLACE, data, kCount, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, NULL) ==
            HYCC_OK,
        "allreduce");
  CHECK(largest_error(data, size) == 0, "uncompressed allreduce is exact");
  fill_input(data, rank);
  CHECK(hycc_allreduce(MPI_IN_PLACE, data, kCount, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, &options) ==
            HYCC_OK,
        "compressed allreduce");
  const double worst = largest_error(data, size);
  /* 8-bit steps of a range of at most 4 * size, once per hop: a loose bound. */
  CHECK(worst <= 4.0 * size * size / 255.0, "largest error %g", worst);
  CHECK(stats.compressed == 1 && stats.wire_bytes < stats.raw_bytes / 3,
        "8 bits of 32: %zu of %zu bytes on the wire", stats.wire_bytes, stats.raw_bytes);

  /* The policy by communicator name: "dp" takes the hybrid preset's gradient compressor. */
  MPI_Comm dp;
  MPI_Comm_dup(MPI_COMM_WORLD, &dp);
  MPI_Comm_set_name(dp, "dp");
  hycc_engine* engine = NULL;
  CHECK(hycc_engine_create("hybrid", &engine) == HYCC_OK, "engine");
  hycc_options policy_options;
  hycc_options_init(&policy_options);
  policy_options.engine = engine;
  policy_options.key = 1;
  float grad[kCount];
  for (int i = 0; i < kCount; ++i) grad[i] = 0.001f * (float)((i * 7 + rank) % 100);
  CHECK(hycc_allreduce(MPI_IN_PLACE, grad, kCount, HYCC_F32, HYCC_AVERAGE, dp, &policy_options) ==
            HYCC_OK,
        "dp allreduce through the policy");
  char* json = NULL;
  CHECK(hycc_engine_stats_json(engine, dp, &json) == HYCC_OK && json != NULL, "stats");
  if (json != NULL) {
    CHECK(strstr(json, "\"dimension\": \"dp\"") != NULL, "the call was recorded as dp: %s", json);
    hycc_free(json);
  }
  hycc_engine_destroy(engine);
  MPI_Comm_free(&dp);

  /* Every rank gets the same failure for a bad root. */
  CHECK(hycc_broadcast(data, kCount, HYCC_F32, size, MPI_COMM_WORLD, &options) ==
            HYCC_ERR_INVALID_ARGUMENT,
        "root out of range");
  hycc_codec_destroy(quant);
}

int main(int argc, char** argv) {
  float before_init[4] = {1, 2, 3, 4};
  const hycc_status early =
      hycc_allreduce(MPI_IN_PLACE, before_init, 4, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, NULL);
  MPI_Init(&argc, &argv);
  CHECK(early == HYCC_ERR_COMM && strstr(hycc_last_error(), "not initialized") != NULL,
        "a collective before MPI_Init: %s", hycc_status_name(early));
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  codec_round_trips();
  collectives(rank, size);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) printf("capi: OK (hycc %s, %d ranks)\n", hycc_version(), size);
  if (rank == 0 && total != 0) printf("capi: %d checks FAILED\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
