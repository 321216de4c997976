// The C API's policy engine: hycc_engine handles over PolicyEngine.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "capi/capi_args.h"
#include "capi/capi_internal.h"
#include "hycc/error.h"
#include "hycc/policy.h"

using hycc::capi::guarded;
using hycc::capi::require;

extern "C" {

hycc_status hycc_engine_create(const char* policy, hycc_engine** engine) {
  return guarded([&] {
    require(engine != nullptr, "hycc_engine_create", "engine (the result) is NULL");
    *engine = nullptr;
    if (policy == nullptr || *policy == '\0') {
      *engine = new hycc_engine{hycc::PolicyEngine::from_environment("baseline")};
    } else {
      *engine = new hycc_engine{
          hycc::PolicyEngine(hycc::Policy::load(policy), hycc::EngineOptions::from_environment())};
    }
  });
}

void hycc_engine_destroy(hycc_engine* engine) { delete engine; }

const char* hycc_engine_policy_name(const hycc_engine* engine) {
  return engine == nullptr ? "" : engine->engine.policy().name().c_str();
}

hycc_status hycc_engine_finish(hycc_engine* engine, MPI_Comm comm) {
  return guarded([&] {
    require(engine != nullptr, "hycc_engine_finish", "engine is NULL");
    engine->engine.finish(hycc::capi::communicator_of(comm, "hycc_engine_finish"));
  });
}

hycc_status hycc_engine_stats_json(const hycc_engine* engine, MPI_Comm comm, char** json) {
  return guarded([&] {
    const char* fn = "hycc_engine_stats_json";
    require(json != nullptr, fn, "json (the result) is NULL");
    *json = nullptr;
    require(engine != nullptr, fn, "engine is NULL");
    const hycc::CommStats stats =
        comm == MPI_COMM_NULL ? engine->engine.stats()
                              : engine->engine.reduce_stats(hycc::capi::communicator_of(comm, fn));
    const std::string text = stats.json();
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, text.c_str(), text.size() + 1);
    *json = out;
  });
}

hycc_status hycc_engine_calibrate(hycc_engine* engine, MPI_Comm comm, double* latency,
                                  double* bandwidth) {
  return guarded([&] {
    const char* fn = "hycc_engine_calibrate";
    require(engine != nullptr, fn, "engine is NULL");
    const hycc::LinkFigures link = engine->engine.calibrate(hycc::capi::communicator_of(comm, fn));
    if (latency != nullptr) *latency = link.latency;
    if (bandwidth != nullptr) *bandwidth = link.bandwidth;
  });
}

hycc_status hycc_engine_set_link(hycc_engine* engine, MPI_Comm comm, double latency,
                                 double bandwidth) {
  return guarded([&] {
    const char* fn = "hycc_engine_set_link";
    require(engine != nullptr, fn, "engine is NULL");
    engine->engine.set_link(hycc::capi::communicator_of(comm, fn), {latency, bandwidth});
  });
}

hycc_status hycc_engine_save_state(const hycc_engine* engine, void** blob, size_t* size) {
  return guarded([&] {
    const char* fn = "hycc_engine_save_state";
    require(blob != nullptr && size != nullptr, fn, "blob or size (the results) is NULL");
    *blob = nullptr;
    *size = 0;
    require(engine != nullptr, fn, "engine is NULL");
    const std::vector<std::byte> state = engine->engine.save_state();
    void* out = std::malloc(state.size());
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, state.data(), state.size());
    *blob = out;
    *size = state.size();
  });
}

hycc_status hycc_engine_load_state(hycc_engine* engine, const void* blob, size_t size,
                                   const hycc_device_options* device) {
  return guarded([&] {
    const char* fn = "hycc_engine_load_state";
    require(engine != nullptr, fn, "engine is NULL");
    require(blob != nullptr || size == 0, fn, "blob is NULL");
    const hycc::capi::DeviceCallOptions options(device, fn);
    engine->engine.load_state({static_cast<const std::byte*>(blob), size}, options.get());
  });
}

}  // extern "C"
