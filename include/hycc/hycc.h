/* hycc's C API: codecs, compressed collectives and the compression policy for C and languages
 * with a C foreign-function interface (Python ctypes, Julia, Rust).
 * Library: libhycc_c.so (-lhycc_c). docs/c_api.md has the full description and examples.
 *
 * Conventions:
 * - Every function that can fail returns a hycc_status: HYCC_OK (0) or the kind of failure, and
 *   hycc_last_error() returns the message of the last call of this thread that failed (an empty
 *   string after a call that succeeded). Nothing ever exits, aborts or lets a C++ exception out.
 * - Handles (hycc_codec, hycc_engine) are created by *_create and freed by *_destroy (NULL is
 *   accepted and ignored). A codec handle is immutable and may be used by several threads at once.
 * - Buffers are host memory: count elements of a hycc_dtype, aligned to the element size.
 *   Enumerations travel as int (dtype, op, algorithm), so that any value can be checked: one
 *   that names no enumerator is HYCC_ERR_INVALID_ARGUMENT.
 * - The collectives follow the rules of the C++ API (include/hycc/collectives.h): every rank
 *   passes matching arguments, every rank that receives a result holds a bit-identical copy, and
 *   messages below the threshold go to the native MPI call uncompressed. hycc's messages use tags
 *   in the upper half of [0, MPI_TAG_UB]: keep the application's own tags below MPI_TAG_UB / 2
 *   on communicators it shares with hycc, or give hycc an MPI_Comm_dup of them.
 * - The policy reads a communicator's dimension from its MPI name (MPI_Comm_set_name: "dp",
 *   "tp", "pp", "zero", "embedding"; anything else is "other"). */
#ifndef HYCC_HYCC_H_
#define HYCC_HYCC_H_

/* C++ programs: without these, Open MPI's and MPICH's mpi.h pull in their deprecated C++
 * bindings, which need an extra library (the C API uses the C interface only). */
#if defined(__cplusplus) && !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1
#endif
#if defined(__cplusplus) && !defined(MPICH_SKIP_MPICXX)
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define HYCC_C_API __attribute__((visibility("default")))
#else
#define HYCC_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hycc_status {
  HYCC_OK = 0,
  HYCC_ERR_INVALID_ARGUMENT = 1, /* a bad spec, a NULL or misaligned buffer, a wrong size */
  HYCC_ERR_CORRUPT_STREAM = 2,   /* a malformed, truncated or corrupted compressed stream */
  HYCC_ERR_COMM = 3,             /* MPI failed, MPI is not running, or ranks disagree */
  HYCC_ERR_IO = 4,               /* a file could not be read or written (a policy file) */
  HYCC_ERR_UNAVAILABLE = 5,      /* not in this build */
  HYCC_ERR_NO_MEMORY = 6,        /* an allocation failed */
  HYCC_ERR_INTERNAL = 7          /* anything else; the message says what */
} hycc_status;

typedef enum hycc_dtype {
  HYCC_F32 = 0,  /* IEEE binary32 */
  HYCC_BF16 = 1, /* bfloat16 */
  HYCC_F16 = 2   /* IEEE binary16 */
} hycc_dtype;

typedef enum hycc_reduce_op {
  HYCC_SUM = 0,
  HYCC_AVERAGE = 1 /* sum / number of ranks, in float32 */
} hycc_reduce_op;

typedef enum hycc_algorithm {
  HYCC_ALGO_AUTO = 0,               /* by message size and codec */
  HYCC_ALGO_NATIVE = 1,             /* the MPI call, uncompressed */
  HYCC_ALGO_RING = 2,               /* allreduce, reduce_scatter, allgather */
  HYCC_ALGO_RECURSIVE_DOUBLING = 3, /* allreduce */
  HYCC_ALGO_COMPRESS_ONCE = 4,      /* allreduce */
  HYCC_ALGO_CHAIN = 5,              /* broadcast */
  HYCC_ALGO_PAIRWISE = 6,           /* alltoall */
  HYCC_ALGO_TWO_LEVEL = 7           /* allreduce: native inside nodes, compressed between */
} hycc_algorithm;

/* Whether a call first checks, with a small MPI_Allreduce, that the ranks agree on its arguments
 * (count, dtype, op, root, codec, algorithm, sizes, tag): a mismatch is then HYCC_ERR_COMM on
 * every rank instead of a hang or garbage (hycc/collectives.h, ArgumentCheck). */
typedef enum hycc_arg_check {
  HYCC_CHECK_AUTO = 0,   /* before hycc's own algorithms; not before calls handed to MPI */
  HYCC_CHECK_ALWAYS = 1, /* before every call with more than one rank */
  HYCC_CHECK_NEVER = 2   /* local checks only: saves the round trip; a mismatch may hang */
} hycc_arg_check;

/* ---- Errors and version ---------------------------------------------------------------- */

/* The message of this thread's last failed call ("" after a success). Valid until the next
 * hycc call on this thread. */
HYCC_C_API const char* hycc_last_error(void);
/* "HYCC_OK", "HYCC_ERR_INVALID_ARGUMENT", ...; "unknown status" for other values. */
HYCC_C_API const char* hycc_status_name(int status);
/* The library's version, e.g. "0.1.0". */
HYCC_C_API const char* hycc_version(void);
/* The layout of the option and statistics structs (hycc_options, hycc_device_options,
 * hycc_call_stats) this header describes; raised whenever one of them changes. The init
 * functions record it in the options, and a library built with another layout refuses the
 * options (HYCC_ERR_INVALID_ARGUMENT naming both versions) instead of misreading them: a program
 * built against one hycc.h and run with another libhycc_c.so fails cleanly. */
#define HYCC_ABI_VERSION 4
/* The layout version this library was built with (HYCC_ABI_VERSION of its hycc.h). */
HYCC_C_API int hycc_abi_version(void);
/* Frees a string the library allocated for the caller (hycc_engine_stats_json). */
HYCC_C_API void hycc_free(void* p);

/* ---- Codecs ------------------------------------------------------------------------------ */

typedef struct hycc_codec hycc_codec;

/* Parses a codec spec ("none", "bf16", "fp16", "quant:bits=4", "eb:abs=1e-4", "zfp:rate=8",
 * "mpc", "zstd", ...; hycc_codec_help() lists them all). */
HYCC_C_API hycc_status hycc_codec_create(const char* spec, hycc_codec** codec);
HYCC_C_API void hycc_codec_destroy(hycc_codec* codec);
/* The canonical spec (every parameter spelled out); valid while the codec lives. */
HYCC_C_API const char* hycc_codec_spec(const hycc_codec* codec);
/* 1 if the codec reproduces its input bit for bit, 0 if it is lossy or codec is NULL. */
HYCC_C_API int hycc_codec_lossless(const hycc_codec* codec);
/* Every codec and its parameters, one per line (a static string). */
HYCC_C_API const char* hycc_codec_help(void);

/* Upper bound of a compressed stream (header included) of count elements: size buffers with it. */
HYCC_C_API hycc_status hycc_max_compressed_bytes(const hycc_codec* codec, int dtype, size_t count,
                                                 size_t* bytes);
/* Compresses count elements at in into out (capacity bytes, at least
 * hycc_max_compressed_bytes); *bytes receives the stream's size. seed drives stochastic
 * rounding: the same input and seed give the same stream. */
HYCC_C_API hycc_status hycc_compress(const hycc_codec* codec, int dtype, size_t count,
                                     const void* in, void* out, size_t capacity, uint64_t seed,
                                     size_t* bytes);

/* What a stream's header says, after its validation (checksum included). */
typedef struct hycc_stream_info {
  int dtype; /* a hycc_dtype */
  uint64_t count;
  uint64_t payload_bytes;
  uint64_t stream_bytes; /* header + payload */
  char spec[128];        /* canonical spec of the codec that wrote the stream */
} hycc_stream_info;

HYCC_C_API hycc_status hycc_stream_inspect(const void* stream, size_t bytes,
                                           hycc_stream_info* info);
/* Decompresses a whole stream into out, which holds count elements of dtype: both must equal
 * the stream's (HYCC_ERR_INVALID_ARGUMENT otherwise). A malformed stream gives
 * HYCC_ERR_CORRUPT_STREAM, after which out may be partly written. */
HYCC_C_API hycc_status hycc_decompress(const void* stream, size_t bytes, int dtype, size_t count,
                                       void* out);

/* ---- The compression policy -------------------------------------------------------------- */

typedef struct hycc_engine hycc_engine;

/* A policy engine: policy is a preset name ("baseline", "naive", "hybrid", "hybrid-mz",
 * "hybrid-z", "auto") or a TOML policy file; NULL or "" reads HYCC_POLICY (baseline when
 * unset). The engine also reads HYCC_LOG and HYCC_SAMPLE_ERROR (docs/policy.md). */
HYCC_C_API hycc_status hycc_engine_create(const char* policy, hycc_engine** engine);
HYCC_C_API void hycc_engine_destroy(hycc_engine* engine);
/* The policy's name. Valid while the engine lives. */
HYCC_C_API const char* hycc_engine_policy_name(const hycc_engine* engine);
/* The end of a run, collective over comm: what HYCC_LOG asked for (summary table on rank 0,
 * JSON file). */
HYCC_C_API hycc_status hycc_engine_finish(hycc_engine* engine, MPI_Comm comm);
/* The statistics as JSON ({"entries": [...], "total": {...}}) in a string the caller frees with
 * hycc_free: this rank's with comm == MPI_COMM_NULL, else summed over comm (collective). */
HYCC_C_API hycc_status hycc_engine_stats_json(const hycc_engine* engine, MPI_Comm comm,
                                              char** json);
/* Adaptive rules (docs/policy.md, "Adaptive rules"): measures comm's links now, collective over
 * comm; latency (seconds per message) and bandwidth (bytes per second) are written where not
 * NULL. */
HYCC_C_API hycc_status hycc_engine_calibrate(hycc_engine* engine, MPI_Comm comm, double* latency,
                                             double* bandwidth);
/* Sets comm's link figures instead of measuring them (the same figures on every rank). */
HYCC_C_API hycc_status hycc_engine_set_link(hycc_engine* engine, MPI_Comm comm, double latency,
                                            double bandwidth);

/* ---- Collectives ------------------------------------------------------------------------- */

/* What one call did on this rank (hycc_options.stats). */
typedef struct hycc_call_stats {
  int algorithm;        /* the hycc_algorithm that ran (HYCC_ALGO_NATIVE: the MPI call) */
  int compressed;       /* 1 if streams of a codec other than none were sent */
  size_t message_bytes; /* uncompressed size of the tensor */
  size_t raw_bytes;     /* uncompressed bytes of the streams sent */
  size_t wire_bytes;    /* bytes sent, stream headers included */
  size_t streams;
  double codec_seconds;
  double seconds;
  uint64_t host_syncs; /* device calls: the host's synchronizations with the device (docs/gpu.md) */
} hycc_call_stats;

typedef struct hycc_options {
  int abi_version;         /* set by hycc_options_init (HYCC_ABI_VERSION); do not change it */
  const hycc_codec* codec; /* NULL: none (uncompressed) */
  hycc_engine* engine;     /* when set, its policy chooses codec and threshold, and may run a
                              gradient compressor with error feedback (keyed by key) */
  int algorithm;           /* a hycc_algorithm */
  size_t threshold_bytes;  /* below it, the native MPI call; default 64 KiB */
  size_t segment_bytes;    /* pipelining segment, default 1 MiB */
  uint64_t seed;           /* stochastic rounding; vary it per step */
  int tag;                 /* a separate set of internal tags (send/recv take theirs apart) */
  uint64_t key;            /* stable tensor id for error feedback; 0: from the buffer address */
  hycc_call_stats* stats;  /* when set, overwritten with what the call did */
  /* A bucket of tensors laid end to end, for a gradient compressor the policy chooses (PowerSGD
   * compresses each matrix among them): for each tensor in order, its number of dimensions, then
   * its dimensions, e.g. {2, 768, 3072, 1, 768} for a 768 x 3072 matrix and a vector of 768.
   * NULL (default): one flat tensor (PowerSGD: its most square matrix, unless flat=plain). */
  const size_t* pieces;
  size_t pieces_length; /* elements of pieces */
  int check_arguments;  /* a hycc_arg_check, default HYCC_CHECK_AUTO (gradient rules of the
                           engine's policy too) */
} hycc_options;

/* The defaults above. Passing NULL options to a collective means the same. Options not made by
 * it (abi_version 0) are refused by the calls. hycc_options_init is a macro that passes the
 * header's HYCC_ABI_VERSION; a library of another version writes only abi_version. */
HYCC_C_API void hycc_options_init_abi(hycc_options* options, int abi_version);
#define hycc_options_init(options) hycc_options_init_abi((options), HYCC_ABI_VERSION)

/* Elements [*offset, *offset + *count) of a tensor of total elements owned by rank of size in
 * hycc_reduce_scatter. */
HYCC_C_API hycc_status hycc_chunk_range(size_t total, int size, int rank, size_t* offset,
                                        size_t* count);

/* recv = op over ranks of send (count elements each). send == recv or MPI_IN_PLACE: in place. */
HYCC_C_API hycc_status hycc_allreduce(const void* send, void* recv, size_t count, int dtype, int op,
                                      MPI_Comm comm, const hycc_options* options);
/* recv = this rank's chunk (hycc_chunk_range) of op over ranks of send (send_count elements). In
 * place: recv pointing at this rank's chunk of send. */
HYCC_C_API hycc_status hycc_reduce_scatter(const void* send, size_t send_count, void* recv,
                                           int dtype, int op, MPI_Comm comm,
                                           const hycc_options* options);
/* recv (size * send_count elements) = every rank's send, in rank order. send == MPI_IN_PLACE:
 * this rank's block is already in place in recv. */
HYCC_C_API hycc_status hycc_allgather(const void* send, size_t send_count, void* recv, int dtype,
                                      MPI_Comm comm, const hycc_options* options);
/* buffer on every rank = buffer of root. */
HYCC_C_API hycc_status hycc_broadcast(void* buffer, size_t count, int dtype, int root,
                                      MPI_Comm comm, const hycc_options* options);
/* Block j of send (count / size elements) goes to rank j; block i of recv comes from rank i.
 * count is a multiple of the number of ranks. send == recv or MPI_IN_PLACE: in place. */
HYCC_C_API hycc_status hycc_alltoall(const void* send, void* recv, size_t count, int dtype,
                                     MPI_Comm comm, const hycc_options* options);
/* Point to point, blocking; tag in [0, 2047] at least (see collectives.h). The receiver learns
 * the codec from the message: recv takes no options, and source may be MPI_ANY_SOURCE
 * (*source_out, when not NULL, receives the sender). */
HYCC_C_API hycc_status hycc_send(const void* data, size_t count, int dtype, int dest, int tag,
                                 MPI_Comm comm, const hycc_options* options);
HYCC_C_API hycc_status hycc_recv(void* data, size_t count, int dtype, int source, int tag,
                                 MPI_Comm comm, int* source_out);

/* ---- Device buffers (CUDA) ----------------------------------------------------------------
 * The codecs and collectives on device memory (docs/gpu.md). A stream is a cudaStream_t passed
 * as void* (NULL: the legacy default stream). A build without CUDA, or a machine without a GPU,
 * gives HYCC_ERR_UNAVAILABLE with the reason, except for the collectives with the host emulation
 * backend, which take host memory and run everywhere (the tests' device). */

typedef enum hycc_device_backend {
  HYCC_DEVICE_CUDA = 0,          /* the CUDA device current on the calling thread */
  HYCC_DEVICE_HOST_EMULATION = 1 /* "device memory" is host memory, the CPU codecs run */
} hycc_device_backend;

typedef enum hycc_device_transport {
  HYCC_TRANSPORT_AUTO = 0,       /* NCCL when every rank has its own GPU, staged MPI otherwise */
  HYCC_TRANSPORT_STAGED_MPI = 1, /* through pinned host memory and MPI */
  HYCC_TRANSPORT_NCCL = 2        /* ncclSend/ncclRecv */
} hycc_device_transport;

/* The number of CUDA devices hycc can use (0 without CUDA or without a GPU). */
HYCC_C_API int hycc_device_count(void);
/* 1 if the codec runs in device kernels; 0 if it takes the host path (zstd, zfp:accuracy with
 * non-finite values), which works on device buffers too, at the CPU codec's speed. */
HYCC_C_API int hycc_codec_device_kernels(const hycc_codec* codec);
/* Upper bound of a payload (the stream without its 48-byte header) of count elements. */
HYCC_C_API hycc_status hycc_max_payload_bytes(const hycc_codec* codec, int dtype, size_t count,
                                              size_t* bytes);
/* Encodes count elements of device memory at in into the payload at out (device memory,
 * capacity bytes); *bytes receives its size. The payload is exactly the bytes after the header
 * of the stream hycc_compress writes for the same input and seed. Ordered on stream; returns when
 * the size is known. */
HYCC_C_API hycc_status hycc_encode_device(const hycc_codec* codec, int dtype, size_t count,
                                          const void* in, void* out, size_t capacity, uint64_t seed,
                                          void* stream, size_t* bytes);
/* Decodes a payload of the codec (device memory) into count elements at out (device memory). */
HYCC_C_API hycc_status hycc_decode_device(const hycc_codec* codec, const void* payload,
                                          size_t bytes, int dtype, size_t count, void* out,
                                          void* stream);

typedef struct hycc_device_options {
  int abi_version;         /* set by hycc_device_options_init (HYCC_ABI_VERSION) */
  const hycc_codec* codec; /* NULL: none */
  hycc_engine* engine;     /* when set, its policy chooses the codec (and gradient compressor) */
  size_t segment_bytes;    /* pipelining segment, default 1 MiB */
  size_t threshold_bytes;  /* below it, the native MPI call on staged copies; default 0 */
  uint64_t seed;
  int tag;
  void* stream;           /* a cudaStream_t; NULL: the default stream */
  int backend;            /* a hycc_device_backend, default HYCC_DEVICE_CUDA */
  int transport;          /* a hycc_device_transport, default HYCC_TRANSPORT_AUTO */
  int checksum;           /* 1 (default): every payload carries a checksum checked on arrival */
  uint64_t key;           /* stable tensor id for error feedback; 0: from the buffer address */
  hycc_call_stats* stats; /* when set, overwritten with what the call did */
  const size_t* pieces;   /* a bucket of tensors, as hycc_options.pieces */
  size_t pieces_length;
  int check_arguments; /* a hycc_arg_check, default HYCC_CHECK_AUTO: the device calls check before
                          every call with more than one rank unless HYCC_CHECK_NEVER */
  int stream_ordered;  /* 1: return once the call is queued on `stream` (NCCL's contract; work
                          queued after it on the stream sees the result); 0 (default): return
                          when the result is in place */
} hycc_device_options;

/* The defaults above. Passing NULL options to a device collective means the same. A macro, as
 * hycc_options_init. */
HYCC_C_API void hycc_device_options_init_abi(hycc_device_options* options, int abi_version);
#define hycc_device_options_init(options) hycc_device_options_init_abi((options), HYCC_ABI_VERSION)

/* The collectives of the section above on device buffers (collectives_device.h): the same
 * arguments, MPI_IN_PLACE included, and the results of the host calls with the ring (chain,
 * pairwise) algorithms bit for bit. */
HYCC_C_API hycc_status hycc_allreduce_device(const void* send, void* recv, size_t count, int dtype,
                                             int op, MPI_Comm comm,
                                             const hycc_device_options* options);
HYCC_C_API hycc_status hycc_reduce_scatter_device(const void* send, size_t send_count, void* recv,
                                                  int dtype, int op, MPI_Comm comm,
                                                  const hycc_device_options* options);
HYCC_C_API hycc_status hycc_allgather_device(const void* send, size_t send_count, void* recv,
                                             int dtype, MPI_Comm comm,
                                             const hycc_device_options* options);
HYCC_C_API hycc_status hycc_broadcast_device(void* buffer, size_t count, int dtype, int root,
                                             MPI_Comm comm, const hycc_device_options* options);
HYCC_C_API hycc_status hycc_alltoall_device(const void* send, void* recv, size_t count, int dtype,
                                            MPI_Comm comm, const hycc_device_options* options);
/* Point to point; recv takes the backend, stream and transport of options (may be NULL). */
HYCC_C_API hycc_status hycc_send_device(const void* data, size_t count, int dtype, int dest,
                                        int tag, MPI_Comm comm, const hycc_device_options* options);
HYCC_C_API hycc_status hycc_recv_device(void* data, size_t count, int dtype, int source, int tag,
                                        MPI_Comm comm, const hycc_device_options* options,
                                        int* source_out);

/* ---- Engine state (checkpoints) ------------------------------------------------------------
 * The state of every gradient compressor the engine made, host and device (error-feedback
 * residuals, PowerSGD's Q, step counters), as one checksummed blob: a run that loads it continues
 * with the same bits. Call them between steps. *blob (free it with hycc_free) and *size receive
 * the blob. load_state makes the compressors the blob names; device ones load onto the backend
 * and stream of device (NULL: CUDA, the default stream). A damaged blob is
 * HYCC_ERR_CORRUPT_STREAM, and nothing is loaded. */
HYCC_C_API hycc_status hycc_engine_save_state(const hycc_engine* engine, void** blob, size_t* size);
HYCC_C_API hycc_status hycc_engine_load_state(hycc_engine* engine, const void* blob, size_t size,
                                              const hycc_device_options* device);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HYCC_HYCC_H_ */
