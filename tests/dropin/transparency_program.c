/* What an MPI program can observe of every call libhycc_mpi.so intercepts, written down so that a
 * run under the library can be compared byte for byte with a run without it
 * (transparency_test.sh). Under a lossless policy the library must change nothing of it.
 *
 * Each rank writes PREFIX.rankN: one line per observation, numbered, naming the call, its
 * communicator, datatype, count and form, with
 *  - the error class the call returned (the communicators return errors: MPI_ERRORS_RETURN);
 *  - a hash (XXH3) of every byte of every buffer the call was given, the parts outside its
 *    results included (guard bytes around them, the send buffer, the rest of an in-place
 *    buffer), read after the call completed;
 *  - for receives: the status's source, tag and count (MPI_Get_count), and whether it was
 *    cancelled; for completions of several requests, each request's status by its index.
 * Calls: the collectives (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Reduce_scatter,
 * MPI_Allgather, MPI_Allgatherv, MPI_Bcast, MPI_Alltoall), blocking, nonblocking (completed by
 * MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall, MPI_Request_get_status) and, with an MPI 4
 * library, persistent, in place and not, on float, int and double data, MPI_SUM and MPI_MAX;
 * point to point in every send mode, blocking, nonblocking and persistent (MPI_Start,
 * MPI_Startall), MPI_Sendrecv, MPI_Sendrecv_replace, receives from MPI_ANY_SOURCE with
 * MPI_ANY_TAG and into MPI_STATUS_IGNORE, receives longer than the message, MPI_Probe,
 * MPI_Iprobe, MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv, MPI_Request_free of a send, a
 * cancelled receive, MPI_Waitany, MPI_Waitsome, MPI_Testany, MPI_Testsome; and calls with bad
 * arguments (a count of -1, a rank or root outside the communicator, a negative tag); with an
 * MPI 4 library also the large-count forms and MPI_Isendrecv(_replace). Each at
 * counts 0, 1, 7 and 300001 (several of the library's segments), on MPI_COMM_WORLD, one of
 * MPI_Comm_split_type named "pp" (so that its point-to-point traffic is the library's), a
 * duplicate of a split named "dp" (two halves, ranks in reverse order) and an unnamed one of
 * MPI_Comm_create. Nothing depends on timing: only one
 * message at a time can match a wildcard receive, and polled completions are recorded once
 * complete. The data are small integers, whose sums every reduction order gives exactly.
 *
 * Usage: transparency_program PREFIX */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { kComms = 4, kCounts = 4, kGuard = 3 }; /* kGuard: elements of guard on each side */
static const long kCountsOf[kCounts] = {0, 1, 7, 300001};

static int world_rank;
static FILE* trace;
static long line_number;

/* One observation: its number, then the text. */
static void note(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(trace, "%ld ", ++line_number);
  vfprintf(trace, format, args);
  fputc('\n', trace);
  va_end(args);
}

/* XXH3 (libxxhash): a byte-at-a-time hash took half the program's time. */
static uint64_t hash(const void* p, size_t bytes) { return XXH3_64bits(p, bytes); }

static size_t size_of(MPI_Datatype type) {
  int bytes = 0;
  MPI_Type_size(type, &bytes);
  return (size_t)bytes;
}

static const char* type_name(MPI_Datatype type) {
  return type == MPI_FLOAT ? "float" : type == MPI_INT ? "int" : "double";
}

/* A buffer of n elements with kGuard elements of guard bytes on each side. */
typedef struct {
  unsigned char* base;
  size_t bytes; /* guards included */
  void* data;   /* the elements */
  MPI_Datatype type;
} Buffer;

/* The buffer with its guards set (its elements are left to fill). */
static Buffer make(MPI_Datatype type, long n) {
  const size_t element = size_of(type), guard = element * kGuard;
  Buffer b = {NULL, element * (size_t)n + 2 * guard, NULL, type};
  b.base = malloc(b.bytes);
  if (b.base == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  memset(b.base, 0xA5, guard);
  memset(b.base + b.bytes - guard, 0xA5, guard);
  b.data = b.base + guard;
  return b;
}

/* Elements from .. from + n - 1 of the buffer: element from + i is the small integer
 * (7r + 3(from + i) + salt + i) mod 9 - 4, whose residue steps by 4 from one element to the next,
 * so the values repeat every 9 elements: the first 9 are computed, the rest copied from them in
 * spans that double (computing every element took a quarter of the program's time). */
static void fill(Buffer* b, long from, long n, int r, long salt) {
  enum { kPeriod = 9 };
  unsigned residue =
      (unsigned)(((unsigned long)r * 7 + (unsigned long)from * 3 + (unsigned long)salt) % 9u);
  const long head = n < kPeriod ? n : kPeriod;
  for (long i = 0; i < head; ++i) {
    const int v = (int)residue - 4;
    if (b->type == MPI_FLOAT)
      ((float*)b->data)[from + i] = (float)v;
    else if (b->type == MPI_INT)
      ((int*)b->data)[from + i] = v;
    else
      ((double*)b->data)[from + i] = (double)v;
    residue = residue + 4 >= 9 ? residue + 4 - 9 : residue + 4;
  }
  const size_t element = size_of(b->type), total = element * (size_t)n;
  unsigned char* start = (unsigned char*)b->data + element * (size_t)from;
  for (size_t done = element * (size_t)head; done < total;) {
    const size_t span = done < total - done ? done : total - done;
    memcpy(start + done, start, span); /* done is a whole number of periods */
    done += span;
  }
}

static Buffer filled(MPI_Datatype type, long n, int r, long salt) {
  Buffer b = make(type, n);
  fill(&b, 0, n, r, salt);
  return b;
}

static uint64_t digest(const Buffer* b) { return hash(b->base, b->bytes); }

static int error_class(int rc) {
  int c = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
  return c;
}

/* The status of a receive of `type`: source, tag, count, cancelled. */
static void note_status(const char* what, const MPI_Status* s, MPI_Datatype type) {
  int count = -1, cancelled = -1;
  MPI_Get_count(s, type, &count);
  MPI_Test_cancelled(s, &cancelled);
  note("  %s: source %d tag %d count %d cancelled %d", what, s->MPI_SOURCE, s->MPI_TAG, count,
       cancelled);
}

typedef struct {
  MPI_Comm comm;
  const char* name;
  int rank, size;
} Comm;

static Comm comms[kComms];

/* ---- collectives ---------------------------------------------------------------------- */

enum Form { kBlocking, kNonblockingWait, kNonblockingTest, kNonblockingStatus, kPersistent };
static const char* form_names[] = {"blocking", "wait", "test", "get_status", "persistent"};

/* Completes a nonblocking or persistent collective's request the form's way. */
static void complete(MPI_Request* request, enum Form form) {
  int flag = 0;
  switch (form) {
    case kNonblockingTest:
      while (!flag) MPI_Test(request, &flag, MPI_STATUS_IGNORE);
      break;
    case kNonblockingStatus:
      while (!flag) MPI_Request_get_status(*request, &flag, MPI_STATUS_IGNORE);
      MPI_Wait(request, MPI_STATUS_IGNORE);
      break;
    case kPersistent:
      MPI_Wait(request, MPI_STATUS_IGNORE);
      MPI_Request_free(request);
      break;
    default:
      MPI_Wait(request, MPI_STATUS_IGNORE);
  }
}

/* Runs a collective in `form`: the `blocking` call, or the `nonblocking` one (or for kPersistent
 * `persistent_init`, then MPI_Start) on the request r_, completed the form's way; sets rc. */
#define COLLECTIVE(form, blocking, nonblocking, persistent_init) \
  do {                                                           \
    MPI_Request r_ = MPI_REQUEST_NULL;                           \
    if ((form) == kBlocking) {                                   \
      rc = blocking;                                             \
    } else if ((form) == kPersistent) {                          \
      rc = persistent_init;                                      \
      if (rc == MPI_SUCCESS) rc = MPI_Start(&r_);                \
      if (rc == MPI_SUCCESS) complete(&r_, form);                \
    } else {                                                     \
      rc = nonblocking;                                          \
      if (rc == MPI_SUCCESS) complete(&r_, form);                \
    }                                                            \
  } while (0)

#if MPI_VERSION >= 4
#define INIT(call) call
#else
#define INIT(call) MPI_ERR_OTHER
#endif

static void note_call(const char* call, const Comm* c, MPI_Datatype type, long n, int in_place,
                      enum Form form, int rc, const Buffer* send, const Buffer* recv) {
  note("%s %s %s count %ld %s %s: error %d send %016llx recv %016llx", call, c->name,
       type_name(type), n, in_place ? "in-place" : "apart", form_names[form], error_class(rc),
       (unsigned long long)(send != NULL ? digest(send) : 0),
       (unsigned long long)(recv != NULL ? digest(recv) : 0));
}

static void allreduce(const Comm* c, MPI_Datatype type, MPI_Op op, long n, int in_place,
                      enum Form form) {
  Buffer send = filled(type, n, c->rank, 1), recv = filled(type, n, c->rank, 2);
  if (in_place) fill(&recv, 0, n, c->rank, 1);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  int rc;
  COLLECTIVE(form, MPI_Allreduce(s, recv.data, (int)n, type, op, c->comm),
             MPI_Iallreduce(s, recv.data, (int)n, type, op, c->comm, &r_),
             INIT(MPI_Allreduce_init(s, recv.data, (int)n, type, op, c->comm, MPI_INFO_NULL, &r_)));
  note_call(op == MPI_SUM ? "allreduce" : "allreduce(max)", c, type, n, in_place, form, rc,
            in_place ? NULL : &send, &recv);
  free(send.base);
  free(recv.base);
}

/* Hashes what the MPI standard defines after an in-place reduce-scatter: all of the buffer, but
 * under MPICH only the result (its own algorithms write partial sums past it, which the
 * library does not; Open MPI leaves that part as it was, and so must the library). */
static uint64_t reduce_scatter_digest(const Buffer* b, long result, int in_place) {
#ifdef MPICH_VERSION
  if (in_place) return hash(b->data, size_of(b->type) * (size_t)result);
#else
  (void)result;
  (void)in_place;
#endif
  return digest(b);
}

static void reduce_scatter_block(const Comm* c, MPI_Datatype type, long n, int in_place,
                                 enum Form form) {
  const long total = n * c->size;
  Buffer send = filled(type, total, c->rank, 3), recv = filled(type, in_place ? total : n, 0, 4);
  if (in_place) fill(&recv, 0, total, c->rank, 3);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  int rc;
  COLLECTIVE(form, MPI_Reduce_scatter_block(s, recv.data, (int)n, type, MPI_SUM, c->comm),
             MPI_Ireduce_scatter_block(s, recv.data, (int)n, type, MPI_SUM, c->comm, &r_),
             INIT(MPI_Reduce_scatter_block_init(s, recv.data, (int)n, type, MPI_SUM, c->comm,
                                                MPI_INFO_NULL, &r_)));
  note("reduce_scatter_block %s %s count %ld %s %s: error %d send %016llx recv %016llx", c->name,
       type_name(type), n, in_place ? "in-place" : "apart", form_names[form], error_class(rc),
       (unsigned long long)(in_place ? 0 : digest(&send)),
       (unsigned long long)reduce_scatter_digest(&recv, n, in_place));
  free(send.base);
  free(recv.base);
}

/* Counts of a vector call about n each: layout 0 hycc's chunks (the first rank's one longer), 1
 * the last rank's one longer (padded by the library), 2 further apart (left to MPI by it). */
static int* vector_counts(const Comm* c, long n, int layout, long* total) {
  int* counts = malloc(sizeof(int) * (size_t)c->size);
  *total = 0;
  for (int q = 0; q < c->size; ++q) {
    long k = n;
    if (layout == 0 && q < 1) k = n + 1;
    if (layout == 1 && q == c->size - 1) k = n + 1;
    if (layout == 2) k = n + 3 * q;
    counts[q] = (int)k;
    *total += k;
  }
  return counts;
}

static void reduce_scatter(const Comm* c, MPI_Datatype type, long n, int layout, int in_place,
                           enum Form form) {
#ifdef MPICH_VERSION
  /* MPICH 4.0.2's own in-place MPI_Reduce_scatter stops with an internal error ("memcpy
   * argument memory ranges overlap"), with or without the library. */
  if (in_place) return;
#endif
  long total = 0;
  int* counts = vector_counts(c, n, layout, &total);
  const long mine = counts[c->rank];
  Buffer send = filled(type, total, c->rank, 5), recv = filled(type, in_place ? total : mine, 0, 6);
  if (in_place) fill(&recv, 0, total, c->rank, 5);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  int rc;
  COLLECTIVE(form, MPI_Reduce_scatter(s, recv.data, counts, type, MPI_SUM, c->comm),
             MPI_Ireduce_scatter(s, recv.data, counts, type, MPI_SUM, c->comm, &r_),
             INIT(MPI_Reduce_scatter_init(s, recv.data, counts, type, MPI_SUM, c->comm,
                                          MPI_INFO_NULL, &r_)));
  note("reduce_scatter %s %s count %ld layout %d %s %s: error %d send %016llx recv %016llx",
       c->name, type_name(type), n, layout, in_place ? "in-place" : "apart", form_names[form],
       error_class(rc), (unsigned long long)(in_place ? 0 : digest(&send)),
       (unsigned long long)reduce_scatter_digest(&recv, mine, in_place));
  free(counts);
  free(send.base);
  free(recv.base);
}

static void allgather(const Comm* c, MPI_Datatype type, long n, int in_place, enum Form form) {
  const long total = n * c->size;
  Buffer send = filled(type, n, c->rank, 7), recv = filled(type, total, 0, 8);
  if (in_place) fill(&recv, n * c->rank, n, c->rank, 7);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  const int sn = in_place ? 0 : (int)n;
  const MPI_Datatype st = in_place ? MPI_DATATYPE_NULL : type;
  int rc;
  COLLECTIVE(
      form, MPI_Allgather(s, sn, st, recv.data, (int)n, type, c->comm),
      MPI_Iallgather(s, sn, st, recv.data, (int)n, type, c->comm, &r_),
      INIT(MPI_Allgather_init(s, sn, st, recv.data, (int)n, type, c->comm, MPI_INFO_NULL, &r_)));
  note_call("allgather", c, type, n, in_place, form, rc, in_place ? NULL : &send, &recv);
  free(send.base);
  free(recv.base);
}

/* Blocks of the vector layout placed with a gap of `gap` elements after each. */
static void allgatherv(const Comm* c, MPI_Datatype type, long n, int layout, int gap, int in_place,
                       enum Form form) {
  long total = 0;
  int* counts = vector_counts(c, n, layout, &total);
  int* displs = malloc(sizeof(int) * (size_t)c->size);
  long at = 0;
  for (int q = 0; q < c->size; ++q) {
    displs[q] = (int)at;
    at += counts[q] + gap;
  }
  const long mine = counts[c->rank];
  Buffer send = filled(type, mine, c->rank, 9), recv = filled(type, at, 0, 10);
  if (in_place) fill(&recv, displs[c->rank], mine, c->rank, 9);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  const int sn = in_place ? 0 : (int)mine;
  const MPI_Datatype st = in_place ? MPI_DATATYPE_NULL : type;
  int rc;
  COLLECTIVE(form, MPI_Allgatherv(s, sn, st, recv.data, counts, displs, type, c->comm),
             MPI_Iallgatherv(s, sn, st, recv.data, counts, displs, type, c->comm, &r_),
             INIT(MPI_Allgatherv_init(s, sn, st, recv.data, counts, displs, type, c->comm,
                                      MPI_INFO_NULL, &r_)));
  note("allgatherv %s %s count %ld layout %d gap %d %s %s: error %d send %016llx recv %016llx",
       c->name, type_name(type), n, layout, gap, in_place ? "in-place" : "apart", form_names[form],
       error_class(rc), (unsigned long long)(in_place ? 0 : digest(&send)),
       (unsigned long long)digest(&recv));
  free(counts);
  free(displs);
  free(send.base);
  free(recv.base);
}

static void bcast(const Comm* c, MPI_Datatype type, long n, int root, enum Form form) {
  Buffer b = filled(type, n, c->rank == root ? 100 : c->rank, 11);
  int rc;
  COLLECTIVE(form, MPI_Bcast(b.data, (int)n, type, root, c->comm),
             MPI_Ibcast(b.data, (int)n, type, root, c->comm, &r_),
             INIT(MPI_Bcast_init(b.data, (int)n, type, root, c->comm, MPI_INFO_NULL, &r_)));
  note("bcast %s %s count %ld root %d %s: error %d buffer %016llx", c->name, type_name(type), n,
       root, form_names[form], error_class(rc), (unsigned long long)digest(&b));
  free(b.base);
}

static void alltoall(const Comm* c, MPI_Datatype type, long n, int in_place, enum Form form) {
  const long total = n * c->size;
  Buffer send = filled(type, total, c->rank, 12), recv = filled(type, total, 0, 13);
  if (in_place) fill(&recv, 0, total, c->rank, 12);
  const void* s = in_place ? MPI_IN_PLACE : send.data;
  const int sn = in_place ? 0 : (int)n;
  const MPI_Datatype st = in_place ? MPI_DATATYPE_NULL : type;
  int rc;
  COLLECTIVE(
      form, MPI_Alltoall(s, sn, st, recv.data, (int)n, type, c->comm),
      MPI_Ialltoall(s, sn, st, recv.data, (int)n, type, c->comm, &r_),
      INIT(MPI_Alltoall_init(s, sn, st, recv.data, (int)n, type, c->comm, MPI_INFO_NULL, &r_)));
  note_call("alltoall", c, type, n, in_place, form, rc, in_place ? NULL : &send, &recv);
  free(send.base);
  free(recv.base);
}

static void collectives(const Comm* c, long n) {
  const MPI_Datatype types[] = {MPI_FLOAT, MPI_INT, MPI_DOUBLE};
  const int forms = MPI_VERSION >= 4 ? 5 : 4;
  for (int t = 0; t < 3; ++t) {
    const MPI_Datatype type = types[t];
    /* Every form on float data; int and double data (which the library leaves to MPI) in
     * blocking and one nonblocking form. */
    for (int f = 0; f < (type == MPI_FLOAT ? forms : 2); ++f) {
      const enum Form form = (enum Form)f;
      for (int in_place = 0; in_place < 2; ++in_place) {
        allreduce(c, type, MPI_SUM, n, in_place, form);
        reduce_scatter_block(c, type, n, in_place, form);
        for (int layout = 0; layout < 3; ++layout) {
          reduce_scatter(c, type, n, layout, in_place, form);
          allgatherv(c, type, n, layout, layout, in_place, form);
        }
        allgather(c, type, n, in_place, form);
        alltoall(c, type, n, in_place, form);
      }
      bcast(c, type, n, c->size - 1, form);
    }
  }
  allreduce(c, MPI_FLOAT, MPI_MAX, n, 0, kBlocking);
}

/* ---- point to point ------------------------------------------------------------------- */

/* A message of n elements of `type` to the next rank, received from the previous one, each
 * send mode and receive form in turn. The receive buffer is 5 elements longer than the
 * message. */
static void ring(const Comm* c, MPI_Datatype type, long n) {
  const int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  const char* name = c->name;
  const char* tn = type_name(type);
  Buffer send = filled(type, n, c->rank, 20);
  static const char* const modes[] = {"send",  "ssend",  "bsend",  "rsend",
                                      "isend", "issend", "ibsend", "irsend"};
  for (int mode = 0; mode < 8; ++mode) {
    Buffer recv = filled(type, n + 5, 0, 21);
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status s[2];
    const int tag = 30 + mode;
    int rc_recv = MPI_Irecv(recv.data, (int)n + 5, type, prev, tag, c->comm, &r[0]);
    MPI_Barrier(c->comm); /* the ready modes need the receive posted */
    int rc = MPI_SUCCESS;
    switch (mode) {
      case 0:
        rc = MPI_Send(send.data, (int)n, type, next, tag, c->comm);
        break;
      case 1:
        rc = MPI_Ssend(send.data, (int)n, type, next, tag, c->comm);
        break;
      case 2:
        rc = MPI_Bsend(send.data, (int)n, type, next, tag, c->comm);
        break;
      case 3:
        rc = MPI_Rsend(send.data, (int)n, type, next, tag, c->comm);
        break;
      case 4:
        rc = MPI_Isend(send.data, (int)n, type, next, tag, c->comm, &r[1]);
        break;
      case 5:
        rc = MPI_Issend(send.data, (int)n, type, next, tag, c->comm, &r[1]);
        break;
      case 6:
        rc = MPI_Ibsend(send.data, (int)n, type, next, tag, c->comm, &r[1]);
        break;
      default:
        rc = MPI_Irsend(send.data, (int)n, type, next, tag, c->comm, &r[1]);
        break;
    }
    int rc_wait = MPI_Waitall(2, r, s);
    note("%s %s %s count %ld: error %d %d %d send %016llx recv %016llx", modes[mode], name, tn, n,
         error_class(rc), error_class(rc_recv), error_class(rc_wait),
         (unsigned long long)digest(&send), (unsigned long long)digest(&recv));
    note_status("irecv", &s[0], type);
    free(recv.base);
  }

  /* Blocking receives: from any source with any tag (only the previous rank's message can
   * match), into MPI_STATUS_IGNORE, and MPI_Recv after MPI_Probe, MPI_Iprobe, MPI_Mprobe and
   * MPI_Improbe (MPI_Mrecv, MPI_Imrecv) of any source and tag. */
  static const char* const receives[] = {"recv any",    "recv ignore",  "probe+recv",
                                         "iprobe+recv", "mprobe+mrecv", "improbe+imrecv"};
  for (int form = 0; form < 6; ++form) {
    Buffer recv = filled(type, n + 5, 0, 22);
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status s, probed;
    memset(&probed, 0, sizeof probed);
    const int tag = 40 + form;
    MPI_Isend(send.data, (int)n, type, next, tag, c->comm, &r);
    int rc = MPI_SUCCESS, flag = 0, count = -1;
    MPI_Message message = MPI_MESSAGE_NULL;
    switch (form) {
      case 0:
        rc = MPI_Recv(recv.data, (int)n + 5, type, MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &s);
        break;
      case 1:
        rc = MPI_Recv(recv.data, (int)n + 5, type, prev, tag, c->comm, MPI_STATUS_IGNORE);
        break;
      case 2:
        rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &probed);
        MPI_Get_count(&probed, type, &count);
        if (rc == MPI_SUCCESS) {
          rc = MPI_Recv(recv.data, count, type, probed.MPI_SOURCE, probed.MPI_TAG, c->comm, &s);
        }
        break;
      case 3:
        while (rc == MPI_SUCCESS && !flag) {
          rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, &probed);
        }
        MPI_Get_count(&probed, type, &count);
        if (rc == MPI_SUCCESS) {
          rc = MPI_Recv(recv.data, count, type, probed.MPI_SOURCE, probed.MPI_TAG, c->comm, &s);
        }
        break;
      case 4:
        rc = MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &message, &probed);
        MPI_Get_count(&probed, type, &count);
        if (rc == MPI_SUCCESS) rc = MPI_Mrecv(recv.data, count, type, &message, &s);
        break;
      default: {
        while (rc == MPI_SUCCESS && !flag) {
          rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, &message, &probed);
        }
        MPI_Get_count(&probed, type, &count);
        MPI_Request q = MPI_REQUEST_NULL;
        if (rc == MPI_SUCCESS) rc = MPI_Imrecv(recv.data, count, type, &message, &q);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&q, &s);
      }
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    note("%s %s %s count %ld: error %d recv %016llx", receives[form], name, tn, n, error_class(rc),
         (unsigned long long)digest(&recv));
    if (form >= 2) note_status("probed", &probed, type);
    if (form != 1) note_status("received", &s, type);
    free(recv.base);
  }

  /* MPI_Sendrecv, and MPI_Sendrecv_replace of the same elements. */
  {
    Buffer recv = filled(type, n + 5, 0, 23), both = filled(type, n, c->rank, 24);
    MPI_Status s, t;
    int rc = MPI_Sendrecv(send.data, (int)n, type, next, 50, recv.data, (int)n + 5, type, prev, 50,
                          c->comm, &s);
    int rc2 = MPI_Sendrecv_replace(both.data, (int)n, type, next, 51, prev, 51, c->comm, &t);
    note("sendrecv %s %s count %ld: error %d %d recv %016llx replaced %016llx", name, tn, n,
         error_class(rc), error_class(rc2), (unsigned long long)digest(&recv),
         (unsigned long long)digest(&both));
    note_status("sendrecv", &s, type);
    note_status("sendrecv_replace", &t, type);
    free(recv.base);
    free(both.base);
  }

  /* Persistent sends of every mode into persistent receives, two rounds, started one by one
   * and all at once. */
  {
    Buffer recv[4];
    MPI_Request r[8];
    MPI_Status s[8];
    for (int k = 0; k < 4; ++k) {
      recv[k] = filled(type, n + 5, 0, 25);
      MPI_Recv_init(recv[k].data, (int)n + 5, type, prev, 60 + k, c->comm, &r[k]);
    }
    MPI_Send_init(send.data, (int)n, type, next, 60, c->comm, &r[4]);
    MPI_Ssend_init(send.data, (int)n, type, next, 61, c->comm, &r[5]);
    /* Open MPI 4.1.4 delivers zeros from the second start of a persistent buffered send of a
     * message past its eager limit (whatever the attached buffer's size): a plain one there. */
    if (n > 1000) {
      MPI_Send_init(send.data, (int)n, type, next, 62, c->comm, &r[6]);
    } else {
      MPI_Bsend_init(send.data, (int)n, type, next, 62, c->comm, &r[6]);
    }
    MPI_Rsend_init(send.data, (int)n, type, next, 63, c->comm, &r[7]);
    for (int round = 0; round < 2; ++round) {
      if (round == 0) {
        for (int k = 0; k < 4; ++k) MPI_Start(&r[k]);
      } else {
        MPI_Startall(4, r);
      }
      MPI_Barrier(c->comm);
      if (round == 0) {
        for (int k = 4; k < 8; ++k) MPI_Start(&r[k]);
      } else {
        MPI_Startall(4, r + 4);
      }
      int rc = MPI_Waitall(8, r, s);
      note("persistent round %d %s %s count %ld: error %d recv %016llx %016llx %016llx %016llx",
           round, name, tn, n, error_class(rc), (unsigned long long)digest(&recv[0]),
           (unsigned long long)digest(&recv[1]), (unsigned long long)digest(&recv[2]),
           (unsigned long long)digest(&recv[3]));
      for (int k = 0; k < 4; ++k) note_status("persistent recv", &s[k], type);
    }
    for (int k = 0; k < 8; ++k) MPI_Request_free(&r[k]);
    for (int k = 0; k < 4; ++k) free(recv[k].base);
  }

  /* Several receives completed by MPI_Waitany, MPI_Waitsome, MPI_Testany, MPI_Testsome and
   * MPI_Testall; statuses recorded by request index once all are complete. */
  static const char* const completions[] = {"waitany", "waitsome", "testany", "testsome",
                                            "testall"};
  for (int how = 0; how < 5; ++how) {
    enum { kMany = 3 };
    Buffer recv[kMany];
    MPI_Request r[kMany], sends[kMany];
    MPI_Status s[kMany], got[kMany];
    for (int k = 0; k < kMany; ++k) {
      recv[k] = filled(type, n + 5, 0, 26);
      MPI_Irecv(recv[k].data, (int)n + 5, type, prev, 70 + k, c->comm, &r[k]);
    }
    for (int k = kMany - 1; k >= 0; --k) {
      MPI_Isend(send.data, (int)n, type, next, 70 + k, c->comm, &sends[k]);
    }
    int done = 0, rc = MPI_SUCCESS;
    while (done < kMany && rc == MPI_SUCCESS) {
      int index = MPI_UNDEFINED, flag = 0, outcount = 0, indices[kMany];
      switch (how) {
        case 0:
          rc = MPI_Waitany(kMany, r, &index, &got[0]);
          if (index != MPI_UNDEFINED) s[index] = got[0], ++done;
          break;
        case 1:
          rc = MPI_Waitsome(kMany, r, &outcount, indices, got);
          for (int k = 0; k < outcount; ++k) s[indices[k]] = got[k], ++done;
          break;
        case 2:
          rc = MPI_Testany(kMany, r, &index, &flag, &got[0]);
          if (flag && index != MPI_UNDEFINED) s[index] = got[0], ++done;
          break;
        case 3:
          rc = MPI_Testsome(kMany, r, &outcount, indices, got);
          for (int k = 0; k < outcount; ++k) s[indices[k]] = got[k], ++done;
          break;
        default:
          rc = MPI_Testall(kMany, r, &flag, s);
          if (flag) done = kMany;
      }
    }
    MPI_Waitall(kMany, sends, got); /* (MPI_STATUSES_IGNORE: a warning of MPICH's header) */
    int nulls = 1;
    for (int k = 0; k < kMany; ++k) nulls = nulls && r[k] == MPI_REQUEST_NULL;
    note("%s %s %s count %ld: error %d requests null %d recv %016llx %016llx %016llx",
         completions[how], name, tn, n, error_class(rc), nulls,
         (unsigned long long)digest(&recv[0]), (unsigned long long)digest(&recv[1]),
         (unsigned long long)digest(&recv[2]));
    for (int k = 0; k < kMany; ++k) {
      note_status(completions[how], &s[k], type);
      free(recv[k].base);
    }
  }

  /* A send freed at once (its receiver still gets it), and a receive cancelled before any
   * message could match it. */
  {
    Buffer recv = filled(type, n + 5, 0, 27), never = filled(type, n, 0, 28);
    MPI_Request r = MPI_REQUEST_NULL, q = MPI_REQUEST_NULL;
    MPI_Status s, cancelled;
    int rc = MPI_Isend(send.data, (int)n, type, next, 80, c->comm, &r);
    int rc_free = MPI_Request_free(&r);
    int rc_recv = MPI_Recv(recv.data, (int)n + 5, type, prev, 80, c->comm, &s);
    MPI_Irecv(never.data, (int)n, type, prev, 81, c->comm, &q);
    int rc_cancel = MPI_Cancel(&q);
    int rc_wait = MPI_Wait(&q, &cancelled);
    note("freed send %s %s count %ld: error %d %d %d null %d recv %016llx", name, tn, n,
         error_class(rc), error_class(rc_free), error_class(rc_recv), r == MPI_REQUEST_NULL,
         (unsigned long long)digest(&recv));
    note_status("after the freed send", &s, type);
    int flag = -1;
    MPI_Test_cancelled(&cancelled, &flag);
    note("cancelled recv %s %s count %ld: error %d %d cancelled %d null %d buffer %016llx", name,
         tn, n, error_class(rc_cancel), error_class(rc_wait), flag, q == MPI_REQUEST_NULL,
         (unsigned long long)digest(&never));
    free(recv.base);
    free(never.base);
    MPI_Barrier(c->comm); /* the freed send has completed everywhere */
  }
  free(send.base);
}

/* ---- MPI 4: large-count calls and MPI_Isendrecv ------------------------------------------ */

#if MPI_VERSION >= 4
/* The large-count form of each blocking collective and of send and receive (the library routes
 * them as their int forms where the counts fit), and MPI_Isendrecv, MPI_Isendrecv_replace. */
static void mpi4_calls(const Comm* c, long n) {
  const int p = c->size, next = (c->rank + 1) % p, prev = (c->rank + p - 1) % p;
  const MPI_Count count = n;
  MPI_Count* counts = malloc(sizeof(MPI_Count) * (size_t)p);
  MPI_Count* displs = malloc(sizeof(MPI_Count) * (size_t)p);
  for (int q = 0; q < p; ++q) counts[q] = count, displs[q] = count * q;
  Buffer send = filled(MPI_FLOAT, n * p, c->rank, 100), recv = filled(MPI_FLOAT, n * p, 0, 101);
  int rc[10];
  rc[0] = MPI_Allreduce_c(send.data, recv.data, count, MPI_FLOAT, MPI_SUM, c->comm);
  note("allreduce_c %s count %ld: error %d recv %016llx", c->name, n, error_class(rc[0]),
       (unsigned long long)digest(&recv));
  rc[0] = MPI_Reduce_scatter_block_c(send.data, recv.data, count, MPI_FLOAT, MPI_SUM, c->comm);
  rc[1] = MPI_Reduce_scatter_c(send.data, recv.data, counts, MPI_FLOAT, MPI_SUM, c->comm);
  note("reduce_scatter(_block)_c %s count %ld: error %d %d recv %016llx", c->name, n,
       error_class(rc[0]), error_class(rc[1]), (unsigned long long)digest(&recv));
  rc[0] = MPI_Allgather_c(send.data, count, MPI_FLOAT, recv.data, count, MPI_FLOAT, c->comm);
  note("allgather_c %s count %ld: error %d recv %016llx", c->name, n, error_class(rc[0]),
       (unsigned long long)digest(&recv));
  rc[0] =
      MPI_Allgatherv_c(send.data, count, MPI_FLOAT, recv.data, counts, displs, MPI_FLOAT, c->comm);
  note("allgatherv_c %s count %ld: error %d recv %016llx", c->name, n, error_class(rc[0]),
       (unsigned long long)digest(&recv));
  rc[0] = MPI_Alltoall_c(send.data, count, MPI_FLOAT, recv.data, count, MPI_FLOAT, c->comm);
  note("alltoall_c %s count %ld: error %d recv %016llx", c->name, n, error_class(rc[0]),
       (unsigned long long)digest(&recv));
  rc[0] = MPI_Bcast_c(send.data, count, MPI_FLOAT, 0, c->comm);
  note("bcast_c %s count %ld: error %d buffer %016llx", c->name, n, error_class(rc[0]),
       (unsigned long long)digest(&send));

  MPI_Status s;
  MPI_Request r = MPI_REQUEST_NULL;
  Buffer in = filled(MPI_FLOAT, n + 5, 0, 102);
  rc[0] = MPI_Irecv_c(in.data, count + 5, MPI_FLOAT, prev, 110, c->comm, &r);
  rc[1] = MPI_Send_c(send.data, count, MPI_FLOAT, next, 110, c->comm);
  rc[2] = MPI_Wait(&r, &s);
  note("send_c+irecv_c %s count %ld: error %d %d %d recv %016llx", c->name, n, error_class(rc[0]),
       error_class(rc[1]), error_class(rc[2]), (unsigned long long)digest(&in));
  note_status("irecv_c", &s, MPI_FLOAT);
  rc[0] = MPI_Isendrecv(send.data, (int)n, MPI_FLOAT, next, 111, in.data, (int)n + 5, MPI_FLOAT,
                        prev, 111, c->comm, &r);
  rc[1] = MPI_Wait(&r, &s);
  note("isendrecv %s count %ld: error %d %d recv %016llx", c->name, n, error_class(rc[0]),
       error_class(rc[1]), (unsigned long long)digest(&in));
  note_status("isendrecv", &s, MPI_FLOAT);
  rc[0] = MPI_Isendrecv_replace(send.data, (int)n, MPI_FLOAT, next, 112, prev, 112, c->comm, &r);
  rc[1] = MPI_Wait(&r, &s);
  note("isendrecv_replace %s count %ld: error %d %d buffer %016llx", c->name, n, error_class(rc[0]),
       error_class(rc[1]), (unsigned long long)digest(&send));
  note_status("isendrecv_replace", &s, MPI_FLOAT);
  free(in.base);
  free(send.base);
  free(recv.base);
  free(counts);
  free(displs);
}
#endif

/* ---- bad arguments -------------------------------------------------------------------- */

/* Calls that MPI refuses (with MPI_ERRORS_RETURN): each rank makes the same one, so no rank
 * waits on another. */
static void bad_arguments(const Comm* c) {
  Buffer b = filled(MPI_FLOAT, 8, c->rank, 90), d = filled(MPI_FLOAT, 8 * c->size, 0, 91);
#ifndef MPICH_VERSION /* MPICH 4.0.2 takes negative counts and crashes in its own memcpy */
  note("bad allreduce count %s: error %d", c->name,
       error_class(MPI_Allreduce(b.data, d.data, -1, MPI_FLOAT, MPI_SUM, c->comm)));
  note("bad allgather count %s: error %d", c->name,
       error_class(MPI_Allgather(b.data, -1, MPI_FLOAT, d.data, -1, MPI_FLOAT, c->comm)));
  note("bad recv count %s: error %d", c->name,
       error_class(MPI_Recv(b.data, -1, MPI_FLOAT, c->rank, 1, c->comm, MPI_STATUS_IGNORE)));
#endif
  note("bad bcast root %s: error %d", c->name,
       error_class(MPI_Bcast(b.data, 8, MPI_FLOAT, c->size, c->comm)));
  note("bad send rank %s: error %d", c->name,
       error_class(MPI_Send(b.data, 8, MPI_FLOAT, c->size, 1, c->comm)));
  note("bad send tag %s: error %d", c->name,
       error_class(MPI_Send(b.data, 8, MPI_FLOAT, c->rank, -5, c->comm)));
  note("after the bad calls %s: buffers %016llx %016llx", c->name, (unsigned long long)digest(&b),
       (unsigned long long)digest(&d));
  free(b.base);
  free(d.base);
}

static Comm comm_of(MPI_Comm comm, const char* name) {
  Comm c = {comm, name, 0, 0};
  MPI_Comm_rank(comm, &c.rank);
  MPI_Comm_size(comm, &c.size);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return c;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 2) {
    if (world_rank == 0) fprintf(stderr, "usage: transparency_program PREFIX\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s.rank%d", argv[1], world_rank);
  trace = fopen(path, "w");
  if (trace == NULL) {
    fprintf(stderr, "transparency: cannot write %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  setvbuf(trace, NULL, _IOLBF, 0); /* a run that stops keeps what it saw */
  /* Communicators of each kind the library intercepts the making of: pp of MPI_Comm_split_type
   * (all ranks share the node), dp a duplicate of an MPI_Comm_split (two halves, ranks in
   * reverse order), and one of MPI_Comm_create over all ranks, unnamed. */
  MPI_Comm pp, halves, dp, created;
  MPI_Group group;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &pp);
  MPI_Comm_set_name(pp, "pp");
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, -world_rank, &halves);
  MPI_Comm_dup(halves, &dp);
  MPI_Comm_free(&halves);
  MPI_Comm_set_name(dp, "dp");
  MPI_Comm_group(MPI_COMM_WORLD, &group);
  MPI_Comm_create(MPI_COMM_WORLD, group, &created);
  MPI_Group_free(&group);
  comms[0] = comm_of(MPI_COMM_WORLD, "world");
  comms[1] = comm_of(pp, "pp");
  comms[2] = comm_of(dp, "dp-split");
  comms[3] = comm_of(created, "created");

  /* Room for two buffered messages of the largest count at a time, as MPI asks. */
  const int attached =
      2 * (int)(sizeof(double) * (size_t)kCountsOf[kCounts - 1] + 1024 + MPI_BSEND_OVERHEAD);
  void* attach = malloc((size_t)attached);
  MPI_Buffer_attach(attach, attached);

  for (int k = 0; k < kComms; ++k) {
    for (int j = 0; j < kCounts; ++j) {
      collectives(&comms[k], kCountsOf[j]);
      ring(&comms[k], MPI_FLOAT, kCountsOf[j]);
      ring(&comms[k], MPI_INT, kCountsOf[j]);
#if MPI_VERSION >= 4
      mpi4_calls(&comms[k], kCountsOf[j]);
#endif
    }
    ring(&comms[k], MPI_DOUBLE, 7);
    bad_arguments(&comms[k]);
  }

  int detached = 0;
  MPI_Buffer_detach(&attach, &detached);
  free(attach);
  MPI_Comm_free(&pp);
  MPI_Comm_free(&dp);
  MPI_Comm_free(&created);
  note("end: %ld observations", line_number + 1);
  fclose(trace);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank == 0) printf("transparency: traced %d ranks into %s.rank*\n", size, argv[1]);
  MPI_Finalize();
  return 0;
}
