/* A CUDA-aware MPI program, written without hycc, for libhycc_mpi.so's device buffers: every
 * call the library compresses under the hybrid policy runs twice, on host buffers and on device
 * buffers holding the same values, and the results must be the same bits on every rank. The
 * device memory comes from fake_cuda.c, a stand-in for the CUDA driver whose device memory the
 * CPU cannot touch (mapped PROT_NONE): a library that read or wrote it directly would end this
 * program with SIGSEGV. The gradient allreduce runs two steps on the same buffers (its
 * error-feedback residual must follow the device buffer as it follows the host buffer), and a
 * short message into a longer device buffer must leave the rest of it as it was. The nonblocking
 * collectives hybrid compresses (bf16 allgather, alltoall, bcast) and the vector variants with
 * counts one apart (MPI_Reduce_scatter, MPI_Allgatherv and their nonblocking forms) run on both
 * kinds too.
 * The same program runs on the CUDA emulator (emu_driver.cc serves its driver calls) and, under
 * tools/gpu-check, on a GPU with the CUDA driver itself.
 * Prints "dropin device: OK" on rank 0; exits with 1 on a difference.
 * Usage: mpirun -n 4 -x LD_PRELOAD=libhycc_mpi.so -x HYCC_POLICY=hybrid dropin_device_program */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr* p, size_t bytes);
int cuMemFree_v2(CUdeviceptr p);
int cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes);
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes);

enum { N = 300000 }; /* 1.2 MB: above the policy's thresholds */

static int rank, size, failures;
static MPI_Comm dp, tp, pp, zero;

/* With the CUDA driver itself (tools/gpu-check), device memory needs a current context: the
 * primary context of device 0, the one the CUDA runtime uses. The stand-ins need none and have
 * no cuInit. */
static void use_primary_context(void) {
  int (*init)(unsigned) = NULL;
  int (*device_get)(int*, int) = NULL;
  int (*retain)(void**, int) = NULL;
  int (*set_current)(void*) = NULL;
  *(void**)&init = dlsym(RTLD_DEFAULT, "cuInit");
  if (init == NULL) return;
  *(void**)&device_get = dlsym(RTLD_DEFAULT, "cuDeviceGet");
  *(void**)&retain = dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain");
  *(void**)&set_current = dlsym(RTLD_DEFAULT, "cuCtxSetCurrent");
  int device = 0;
  void* context = NULL;
  if (device_get == NULL || retain == NULL || set_current == NULL || init(0) != 0 ||
      device_get(&device, 0) != 0 || retain(&context, device) != 0 || set_current(context) != 0) {
    fprintf(stderr, "dropin device: no CUDA context on device 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static float input(int r, long i) { return (float)(sin(0.001 * (double)i + r) + 0.01 * r); }

static float* host_alloc(long n) {
  float* p = malloc(sizeof(float) * (size_t)n);
  if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static float* device_alloc(long n) {
  CUdeviceptr p;
  if (cuMemAlloc_v2(&p, sizeof(float) * (size_t)n) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  return (float*)(uintptr_t)p;
}

static void to_device(float* device, const float* host, long n) {
  if (cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)device, host, sizeof(float) * (size_t)n) != 0) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

/* One buffer of the test, on the host and on the device with the same contents. */
struct Buffer {
  float* host;
  float* device;
  long n;
};

/* A buffer holding this rank's inputs, shifted by `seed`. */
static struct Buffer buffer(long n, int seed) {
  struct Buffer b = {host_alloc(n), device_alloc(n), n};
  for (long i = 0; i < n; ++i) b.host[i] = input(rank + seed, i);
  to_device(b.device, b.host, n);
  return b;
}

static void release(struct Buffer* b) {
  free(b->host);
  cuMemFree_v2((CUdeviceptr)(uintptr_t)b->device);
}

/* The device buffer must hold the host buffer's bits, on every rank. */
static void expect_same(const char* what, const struct Buffer* b) {
  float* back = host_alloc(b->n);
  if (cuMemcpyDtoH_v2(back, (CUdeviceptr)(uintptr_t)b->device, sizeof(float) * (size_t)b->n)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int same = memcmp(back, b->host, sizeof(float) * (size_t)b->n) == 0;
  free(back);
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("%-44s %s\n", what, same ? "same bits" : "DIFFERENT");
  failures += !same;
}

/* A copy of the host buffer from element `from` on: what an in-place reduce-scatter whose
 * result is `from` elements long must leave as it is. */
static float* copy_from(const struct Buffer* b, long from) {
  float* copy = host_alloc(b->n - from + 1);
  memcpy(copy, b->host + from, sizeof(float) * (size_t)(b->n - from));
  return copy;
}

/* The host buffer from element `from` on must still hold `before` (copy_from), on every rank;
 * expect_same then holds the device buffer to the same bits. Frees `before`. */
static void expect_kept(const char* what, const struct Buffer* b, long from, float* before) {
  int kept = memcmp(before, b->host + from, sizeof(float) * (size_t)(b->n - from)) == 0;
  free(before);
  MPI_Allreduce(MPI_IN_PLACE, &kept, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("%-44s %s\n", what, kept ? "kept" : "CHANGED");
  failures += !kept;
}

static MPI_Comm named_dup(const char* name) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_name(c, name);
  return c;
}

static void collectives(void) {
  /* dp: the gradient compressor (error feedback), two steps on the same buffers. */
  struct Buffer send = buffer(N, 0), recv = buffer(N, 5);
  for (int step = 1; step <= 2; ++step) {
    if (step == 2) {
      for (long i = 0; i < N; ++i) send.host[i] = input(rank + 3, i);
      to_device(send.device, send.host, N);
    }
    MPI_Allreduce(send.host, recv.host, N, MPI_FLOAT, MPI_SUM, dp);
    MPI_Allreduce(send.device, recv.device, N, MPI_FLOAT, MPI_SUM, dp);
    expect_same(step == 1 ? "dp allreduce, step 1" : "dp allreduce, step 2 (residual)", &recv);
  }
  release(&send);
  release(&recv);

  struct Buffer inout = buffer(N, 1);
  MPI_Allreduce(MPI_IN_PLACE, inout.host, N, MPI_FLOAT, MPI_SUM, tp);
  MPI_Allreduce(MPI_IN_PLACE, inout.device, N, MPI_FLOAT, MPI_SUM, tp);
  expect_same("tp allreduce, in place", &inout);
  release(&inout);

  const long chunk = N / size;
  struct Buffer all = buffer(chunk * size, 2), mine = buffer(chunk, 7);
  MPI_Reduce_scatter_block(all.host, mine.host, (int)chunk, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter_block(all.device, mine.device, (int)chunk, MPI_FLOAT, MPI_SUM, zero);
  expect_same("zero reduce_scatter_block", &mine);
  float* rest = copy_from(&all, chunk);
  MPI_Reduce_scatter_block(MPI_IN_PLACE, all.host, (int)chunk, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter_block(MPI_IN_PLACE, all.device, (int)chunk, MPI_FLOAT, MPI_SUM, zero);
  expect_kept("  past the result", &all, chunk, rest);
  expect_same("zero reduce_scatter_block, in place", &all);

  MPI_Allgather(mine.host, (int)chunk, MPI_FLOAT, all.host, (int)chunk, MPI_FLOAT, zero);
  MPI_Allgather(mine.device, (int)chunk, MPI_FLOAT, all.device, (int)chunk, MPI_FLOAT, zero);
  expect_same("zero allgather", &all);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.host, (int)chunk, MPI_FLOAT, zero);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.device, (int)chunk, MPI_FLOAT, zero);
  expect_same("zero allgather, in place", &all);

  struct Buffer exchanged = buffer(chunk * size, 9);
  MPI_Alltoall(all.host, (int)chunk, MPI_FLOAT, exchanged.host, (int)chunk, MPI_FLOAT, tp);
  MPI_Alltoall(all.device, (int)chunk, MPI_FLOAT, exchanged.device, (int)chunk, MPI_FLOAT, tp);
  expect_same("tp alltoall", &exchanged);
  release(&exchanged);
  release(&all);
  release(&mine);

  struct Buffer broadcast = buffer(N, 4);
  MPI_Bcast(broadcast.host, N, MPI_FLOAT, size - 1, pp);
  MPI_Bcast(broadcast.device, N, MPI_FLOAT, size - 1, pp);
  expect_same("pp bcast", &broadcast);
  release(&broadcast);
}

/* MPI_Reduce_scatter and MPI_Allgatherv with counts one apart: the chunk_range layout and the
 * padded one, out of place and in place; the allgather's blocks lie apart, and the floats
 * between them must stay as they were on the device too. */
static void vector_variants(void) {
  const long total = N + size - 1;
  int* first = malloc(sizeof(int) * (size_t)size); /* the longer chunks first */
  int* last = malloc(sizeof(int) * (size_t)size);  /* the longer chunks last */
  int* displs = malloc(sizeof(int) * (size_t)size);
  const long stride = total / size + 4;
  for (int r = 0; r < size; ++r) {
    first[r] = (int)(total / size + (r < total % size));
    last[r] = (int)(total / size + (r >= size - total % size));
    displs[r] = (int)(r * stride);
  }
  struct Buffer all = buffer(total, 3), mine = buffer(total / size + 1, 8);
  MPI_Reduce_scatter(all.host, mine.host, first, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter(all.device, mine.device, first, MPI_FLOAT, MPI_SUM, zero);
  expect_same("zero reduce_scatter, counts one apart", &mine);
  float* rest = copy_from(&all, last[rank]);
  MPI_Reduce_scatter(MPI_IN_PLACE, all.host, last, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter(MPI_IN_PLACE, all.device, last, MPI_FLOAT, MPI_SUM, zero);
  expect_kept("  past the result", &all, last[rank], rest);
  expect_same("zero reduce_scatter, padded, in place", &all);
  rest = copy_from(&all, first[rank]);
  MPI_Reduce_scatter(MPI_IN_PLACE, all.host, first, MPI_FLOAT, MPI_SUM, zero);
  MPI_Reduce_scatter(MPI_IN_PLACE, all.device, first, MPI_FLOAT, MPI_SUM, zero);
  expect_kept("  past the result", &all, first[rank], rest);
  expect_same("zero reduce_scatter, in place", &all);

  struct Buffer gathered = buffer(stride * size, 6);
  MPI_Allgatherv(mine.host, last[rank], MPI_FLOAT, gathered.host, last, displs, MPI_FLOAT, zero);
  MPI_Allgatherv(mine.device, last[rank], MPI_FLOAT, gathered.device, last, displs, MPI_FLOAT,
                 zero);
  expect_same("zero allgatherv, blocks apart", &gathered);
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered.host, first, displs, MPI_FLOAT, zero);
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered.device, first, displs, MPI_FLOAT,
                 zero);
  expect_same("zero allgatherv, blocks apart, in place", &gathered);
  release(&gathered);
  release(&all);
  release(&mine);
  free(displs);
  free(last);
  free(first);
}

/* The nonblocking collectives hybrid compresses at 4 ranks (bf16 slots: allgather, bcast,
 * alltoall; its allreduces would go to MPI, which cannot read this device memory). */
static void nonblocking_collectives(void) {
  const long chunk = N / size;
  struct Buffer mine = buffer(chunk, 3), all = buffer(chunk * size, 8), b = buffer(N, 4);
  MPI_Request r[2];
  MPI_Iallgather(mine.host, (int)chunk, MPI_FLOAT, all.host, (int)chunk, MPI_FLOAT, zero, &r[0]);
  MPI_Iallgather(mine.device, (int)chunk, MPI_FLOAT, all.device, (int)chunk, MPI_FLOAT, zero,
                 &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("zero Iallgather", &all);
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.host, (int)chunk, MPI_FLOAT, zero, &r[0]);
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.device, (int)chunk, MPI_FLOAT, zero,
                 &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("zero Iallgather, in place", &all);

  struct Buffer exchanged = buffer(chunk * size, 9);
  MPI_Ialltoall(all.host, (int)chunk, MPI_FLOAT, exchanged.host, (int)chunk, MPI_FLOAT, tp, &r[0]);
  MPI_Ialltoall(all.device, (int)chunk, MPI_FLOAT, exchanged.device, (int)chunk, MPI_FLOAT, tp,
                &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("tp Ialltoall", &exchanged);

  /* The vector variants, counts one apart: blocks 4 floats apart, the floats between kept. */
  const long total = N + size - 1, stride = total / size + 4;
  int* counts = malloc(sizeof(int) * (size_t)size);
  int* displs = malloc(sizeof(int) * (size_t)size);
  for (int j = 0; j < size; ++j) {
    counts[j] = (int)(total / size + (j < total % size));
    displs[j] = (int)(j * stride);
  }
  struct Buffer shard = buffer(counts[0], 5), gathered = buffer(stride * size, 6);
  MPI_Iallgatherv(shard.host, counts[rank], MPI_FLOAT, gathered.host, counts, displs, MPI_FLOAT,
                  zero, &r[0]);
  MPI_Iallgatherv(shard.device, counts[rank], MPI_FLOAT, gathered.device, counts, displs, MPI_FLOAT,
                  zero, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("zero Iallgatherv, blocks apart", &gathered);
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, gathered.host, counts, displs, MPI_FLOAT, zero,
                  &r[0]);
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, gathered.device, counts, displs, MPI_FLOAT, zero,
                  &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("zero Iallgatherv, blocks apart, in place", &gathered);
  struct Buffer grads = buffer(total, 2);
  MPI_Ireduce_scatter(grads.host, shard.host, counts, MPI_FLOAT, MPI_SUM, zero, &r[0]);
  MPI_Ireduce_scatter(grads.device, shard.device, counts, MPI_FLOAT, MPI_SUM, zero, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("zero Ireduce_scatter (ef2+)", &shard);
  float* rest = copy_from(&grads, counts[rank]);
  MPI_Ireduce_scatter(MPI_IN_PLACE, grads.host, counts, MPI_FLOAT, MPI_SUM, zero, &r[0]);
  MPI_Ireduce_scatter(MPI_IN_PLACE, grads.device, counts, MPI_FLOAT, MPI_SUM, zero, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_kept("  past the result", &grads, counts[rank], rest);
  expect_same("zero Ireduce_scatter (ef2+), in place", &grads);
  release(&grads);
  release(&gathered);
  release(&shard);
  free(displs);
  free(counts);

  MPI_Ibcast(b.host, N, MPI_FLOAT, size - 1, pp, &r[0]);
  MPI_Ibcast(b.device, N, MPI_FLOAT, size - 1, pp, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("pp Ibcast", &b);
  release(&exchanged);
  release(&mine);
  release(&all);
  release(&b);
}

static void point_to_point(void) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  struct Buffer out = buffer(N, 0), in = buffer(N, 6);

  /* Pairs 0 -> 1, 2 -> 3, ...: half a buffer into a whole one (the rest must stay). */
  if (size % 2 == 0) {
    for (int pass = 0; pass < 2; ++pass) {
      float* o = pass == 0 ? out.host : out.device;
      float* i = pass == 0 ? in.host : in.device;
      if (rank % 2 == 0) {
        MPI_Send(o, N / 2, MPI_FLOAT, rank + 1, 11, pp);
      } else {
        MPI_Status st;
        MPI_Recv(i, N, MPI_FLOAT, rank - 1, 11, pp, &st);
        int count = 0;
        MPI_Get_count(&st, MPI_FLOAT, &count);
        if (count != N / 2) {
          printf("rank %d: MPI_Recv counted %d floats, not %d\n", rank, count, N / 2);
          failures += 1;
        }
      }
    }
    expect_same("pp send/recv, a short message", &in);
  }

  MPI_Request r[2];
  MPI_Irecv(in.host, N, MPI_FLOAT, prev, 12, pp, &r[0]);
  MPI_Isend(out.host, N, MPI_FLOAT, next, 12, pp, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  MPI_Irecv(in.device, N, MPI_FLOAT, prev, 12, pp, &r[0]);
  MPI_Isend(out.device, N, MPI_FLOAT, next, 12, pp, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  expect_same("pp isend/irecv round the ring", &in);

  MPI_Sendrecv(out.host, N, MPI_FLOAT, next, 13, in.host, N, MPI_FLOAT, prev, 13, pp,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(out.device, N, MPI_FLOAT, next, 13, in.device, N, MPI_FLOAT, prev, 13, pp,
               MPI_STATUS_IGNORE);
  expect_same("pp sendrecv", &in);

  MPI_Sendrecv_replace(out.host, N, MPI_FLOAT, next, 14, prev, 14, pp, MPI_STATUS_IGNORE);
  MPI_Sendrecv_replace(out.device, N, MPI_FLOAT, next, 14, prev, 14, pp, MPI_STATUS_IGNORE);
  expect_same("pp sendrecv_replace", &out);
  release(&out);
  release(&in);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  use_primary_context();
  dp = named_dup("dp");
  tp = named_dup("tp");
  pp = named_dup("pp");
  zero = named_dup("zero");
  collectives();
  vector_variants();
  nonblocking_collectives();
  point_to_point();
  MPI_Comm_free(&dp);
  MPI_Comm_free(&tp);
  MPI_Comm_free(&pp);
  MPI_Comm_free(&zero);
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("dropin device: %s\n", failures == 0 ? "OK" : "FAILED");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
