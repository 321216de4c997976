#include "common/host_syncs.h"

namespace hycc {
namespace {
thread_local uint64_t syncs = 0;
}  // namespace

void count_host_sync() { ++syncs; }
uint64_t host_syncs_of_this_thread() { return syncs; }

}  // namespace hycc
