// Timing, table printing and JSON output shared by the hycc-bench subcommands.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hycc/collectives.h"

namespace hycc::bench {

// Runs `fn` at least `min_reps` times and until `min_seconds` have passed (at most `max_reps`);
// returns the best (smallest) time of one run in seconds. Best-of-N is the least noisy figure on
// a shared machine; every ratio we report compares best-of-N with best-of-N from the same run.
double best_time(const std::function<void()>& fn, int min_reps = 3, double min_seconds = 0.5,
                 int max_reps = 50);

// Bandwidth in GB/s (1e9 bytes per second) of moving `bytes` in `seconds`.
inline double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

// A fixed-width text table: the header line starts with '#', as in nccl-tests.
class Table {
 public:
  struct Column {
    std::string title;
    int width;
    std::string unit = {};  // printed under the title, on a second header line
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // The titles; then, if any column has a unit, a second line of units.
  std::string header() const;
  // One row of already formatted cells, right-aligned except the first.
  std::string row(const std::vector<std::string>& cells) const;

 private:
  std::vector<Column> columns_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// --check-args: auto, always or never; InvalidArgument otherwise.
ArgumentCheck parse_check_args(const std::string& name);

// The median (the mean of the two middle values for an even count); 0 for no values.
double median(std::vector<double> values);

// MPI for the span of a benchmark run: initialized here unless it already is, and then
// finalized here when this object goes.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  int was_initialized_ = 0;
};

// Writes `rows` as a JSON array to `path`; throws hycc::Error if the file cannot be written.
void write_json(const std::string& path, const nlohmann::json& rows);

}  // namespace hycc::bench
