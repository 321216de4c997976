// The drop-in library's engine, reentrancy guard and per-communicator state (see
// runtime/state.h).
#include "interpose/runtime/state.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include "comm/topology.h"
#include "policy/comm_names.h"

namespace hycc::interpose {
namespace {

std::unique_ptr<PolicyEngine>& engine_slot() {
  static std::unique_ptr<PolicyEngine> e;
  return e;
}

thread_local int tl_depth = 0;

ArgumentCheck g_argument_check = ArgumentCheck::kAuto;  // HYCC_CHECK_ARGUMENTS
CommNames g_comm_names;                                 // HYCC_COMM_NAMES

int g_keyval = MPI_KEYVAL_INVALID;
StateHooks g_hooks;

int delete_state(MPI_Comm, int, void* value, void*) {
  auto* s = static_cast<CommState*>(value);
  // The user communicator is being freed: so are its shadows.
  if (s->collective_shadow != MPI_COMM_NULL) PMPI_Comm_free(&s->collective_shadow);
  if (s->p2p_shadow != MPI_COMM_NULL) PMPI_Comm_free(&s->p2p_shadow);
  if (g_hooks.comm_freed != nullptr) g_hooks.comm_freed(*s);
  delete s;
  return MPI_SUCCESS;
}

// True when comm's ranks are MPI_COMM_WORLD's (a local comparison of the groups).
bool spans_world(MPI_Comm comm) {
  int result = MPI_UNEQUAL;
  return PMPI_Comm_compare(comm, MPI_COMM_WORLD, &result) == MPI_SUCCESS &&
         (result == MPI_IDENT || result == MPI_CONGRUENT);
}

// The communicator's name as the policy reads it (HYCC_COMM_NAMES applied).
std::string name_of(MPI_Comm comm) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  PMPI_Comm_get_name(comm, name, &len);
  return g_comm_names.apply(std::string(name, static_cast<size_t>(len)),
                            g_comm_names.has_world() && spans_world(comm));
}

// Names that mean nothing to the policy are kept as they are: dimension_of() maps them to
// "other", which the policy's default rules cover. `given`: the name to take instead of comm's.
CommState* make_state(MPI_Comm comm, const std::string* given = nullptr) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter != 0) return nullptr;
  MPI_Comm collective = MPI_COMM_NULL;
  MPI_Comm p2p = MPI_COMM_NULL;
  HYCC_CHECK_MPI(PMPI_Comm_dup(comm, &collective));
  HYCC_CHECK_MPI(PMPI_Comm_dup(comm, &p2p));
  const std::string name = given != nullptr ? *given : name_of(comm);
  auto s = std::unique_ptr<CommState>(new CommState{
      collective, p2p, MPI_COMM_NULL, Communicator::wrap(collective, name), name, nullptr});
  HYCC_CHECK_MPI(PMPI_Comm_set_attr(comm, g_keyval, s.get()));
  return s.release();
}

// s now goes by `name` (the policy sees it through s->comm).
void rename_state(CommState& s, std::string name) {
  s.name = std::move(name);
  s.comm = Communicator::wrap(s.collective_shadow, s.name);
}

}  // namespace

bool is_float32(MPI_Datatype type) {
  if (type == MPI_FLOAT) return true;
  if (type != MPI_REAL && type != MPI_REAL4) return false;
  int bytes = 0;
  return PMPI_Type_size(type, &bytes) == MPI_SUCCESS && bytes == 4;
}

PolicyEngine* engine() { return engine_slot().get(); }

void set_state_hooks(const StateHooks& hooks) { g_hooks = hooks; }

ArgumentCheck argument_check() { return g_argument_check; }

void start_engine() {
  if (g_keyval == MPI_KEYVAL_INVALID) {
    HYCC_CHECK_MPI(
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr));
  }
  if (g_hooks.engine_starting != nullptr) g_hooks.engine_starting();
  const char* check = std::getenv("HYCC_CHECK_ARGUMENTS");
  g_argument_check = check == nullptr || *check == '\0'
                         ? ArgumentCheck::kAuto
                         : parse_argument_check(check, "HYCC_CHECK_ARGUMENTS");
  // Read again where a communicator first needs its nodes; checked here so that a bad value
  // stops the job at MPI_Init, as the other variables do.
  if (const char* topology = std::getenv("HYCC_TOPOLOGY")) {
    int world_size = 1;
    HYCC_CHECK_MPI(PMPI_Comm_size(MPI_COMM_WORLD, &world_size));
    comm::parse_topology(topology, world_size);
  }
  const char* names = std::getenv("HYCC_COMM_NAMES");
  g_comm_names = names == nullptr ? CommNames{} : CommNames::parse(names, "HYCC_COMM_NAMES");
  const char* log = std::getenv("HYCC_LOG");
  auto e = std::make_unique<PolicyEngine>(PolicyEngine::from_environment("baseline"));
  if (log == nullptr) {
    // The drop-in library reports what it did unless told otherwise.
    EngineOptions options = e->options();
    options.log.summary = true;
    e = std::make_unique<PolicyEngine>(e->policy(), options);
  }
  engine_slot() = std::move(e);
  on_new_comm(MPI_COMM_WORLD);
}

void finish_engine() {
  PolicyEngine* e = engine();
  if (e == nullptr) return;
  const Inside guard;
  try {
    e->finish(Communicator::wrap(MPI_COMM_WORLD));
    if (g_hooks.engine_finishing != nullptr) g_hooks.engine_finishing(*e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "[hycc] MPI_Finalize: %s\n", ex.what());
  }
  engine_slot().reset();
  PMPI_Comm_delete_attr(MPI_COMM_WORLD, g_keyval);
}

bool inside() { return tl_depth > 0; }

MPI_Comm stage_shadow(CommState& s) {
  if (s.stage_shadow == MPI_COMM_NULL) {
    HYCC_CHECK_MPI(PMPI_Comm_dup(s.collective_shadow, &s.stage_shadow));
  }
  return s.stage_shadow;
}
Inside::Inside() { ++tl_depth; }
Inside::~Inside() { --tl_depth; }

CommState* existing_state_of(MPI_Comm comm) {
  if (g_keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) return nullptr;
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g_keyval, &value, &found);
  return found != 0 ? static_cast<CommState*>(value) : nullptr;
}

CommState* state_of(MPI_Comm comm) {
  if (CommState* s = existing_state_of(comm)) return s;
  if (g_keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL) return nullptr;
  return make_state(comm);
}

void on_new_comm(MPI_Comm comm) {
  if (engine() == nullptr || comm == MPI_COMM_NULL) return;
  state_of(comm);
}

void on_rename(MPI_Comm comm) {
  CommState* s = existing_state_of(comm);
  if (s == nullptr) return;
  rename_state(*s, name_of(comm));
  if (g_hooks.comm_renamed != nullptr) g_hooks.comm_renamed(*s);
}

void adopt_twin(MPI_Comm twin, const std::string& name) {
  CommState* s = existing_state_of(twin);
  if (s == nullptr) {
    make_state(twin, &name);
    return;
  }
  rename_state(*s, name);
}

MPI_Comm private_self_comm() {
  static std::once_flag once;
  static MPI_Comm comm = MPI_COMM_NULL;
  std::call_once(once, [] { PMPI_Comm_dup(MPI_COMM_SELF, &comm); });
  return comm;
}

int fail(MPI_Comm comm, const char* call, const char* what) {
  std::fprintf(stderr, "[hycc] %s: %s\n", call, what);
  std::fflush(stderr);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

}  // namespace hycc::interpose
