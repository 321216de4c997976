#include "bench_util.h"

#include <mpi.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "hycc/error.h"

namespace hycc::bench {

double best_time(const std::function<void()>& fn, int min_reps, double min_seconds, int max_reps) {
  using clock = std::chrono::steady_clock;
  double best = 1e300, total = 0;
  for (int rep = 0; rep < max_reps && (rep < min_reps || total < min_seconds); ++rep) {
    const auto t0 = clock::now();
    fn();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

std::string Table::header() const {
  const auto line = [&](std::string Column::*text) {
    std::string out = "#";
    for (size_t i = 0; i < columns_.size(); ++i) {
      const auto& c = columns_[i];
      out += i == 0 ? format(" %-*s", c.width - 1, (c.*text).c_str())
                    : format(" %*s", c.width, (c.*text).c_str());
    }
    return out;
  };
  const bool units = std::any_of(columns_.begin(), columns_.end(),
                                 [](const Column& c) { return !c.unit.empty(); });
  return units ? line(&Column::title) + "\n" + line(&Column::unit) : line(&Column::title);
}

std::string Table::row(const std::vector<std::string>& cells) const {
  std::string line;
  for (size_t i = 0; i < columns_.size() && i < cells.size(); ++i) {
    const auto& c = columns_[i];
    line += i == 0 ? format("  %-*s", c.width - 1, cells[i].c_str())
                   : format(" %*s", c.width, cells[i].c_str());
  }
  return line;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char buf[512];
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(args, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, args);
  va_end(args);
  big.resize(static_cast<size_t>(n));
  return big;
}

void write_json(const std::string& path, const nlohmann::json& rows) {
  std::ofstream out(path);
  out << rows.dump(2) << "\n";
  if (!out) throw Error(tagged("bench", "cannot write JSON to '", path, "'"));
}

MpiSession::MpiSession() {
  MPI_Initialized(&was_initialized_);
  if (!was_initialized_) MPI_Init(nullptr, nullptr);
}

MpiSession::~MpiSession() {
  if (!was_initialized_) MPI_Finalize();
}

ArgumentCheck parse_check_args(const std::string& name) {
  return parse_argument_check(name, "--check-args");
}

}  // namespace hycc::bench
