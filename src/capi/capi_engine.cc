// The C API's policy engine: hycc_engine handles over PolicyEngine.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

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

}  // extern "C"
