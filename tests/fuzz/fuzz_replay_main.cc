// The driver of a fuzz target without libFuzzer: runs the target's seeds, deterministic mutations
// of each, and the inputs saved in files (a regression corpus), so that every test run checks
// what the fuzzer once found, with any compiler. A failing input stops the run (the target
// aborts, or a sanitizer or the kernel stops it); the driver then says which input it was and
// writes it to ./fuzz-failed-input, to run again or keep in regressions/.
//
//   fuzz_X_replay [--mutations N] [FILE|DIR...]   seeds, N mutations of each, then the files
//   fuzz_X_replay --write-seeds DIR               the seeds as files (a corpus for libFuzzer)
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace {

using hycc::fuzz::Bytes;
namespace fs = std::filesystem;

// xorshift64*: the same mutations on every machine.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

// One to four of libFuzzer's simpler mutations: flip a bit, set a byte (to a boundary value or
// anything), write a boundary integer, cut, repeat or drop a run of bytes, insert bytes.
Bytes mutate(Bytes b, Rng& rng) {
  static const uint64_t kBoundaries[] = {
      0,    1, 2, 7, 8, 63, 64, 255, 256, 0x7fffffff, 0x80000000, 0xffffffff, 0x7fffffffffffffffULL,
      ~0ULL};
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    const size_t at = rng.below(b.size());
    switch (rng.below(7)) {
      case 0:
        if (!b.empty()) b[at] ^= static_cast<uint8_t>(1u << rng.below(8));
        break;
      case 1:
        if (!b.empty()) b[at] = static_cast<uint8_t>(rng.next());
        break;
      case 2: {
        const uint64_t v = kBoundaries[rng.below(std::size(kBoundaries))];
        const size_t width = size_t{1} << rng.below(4);  // 1, 2, 4 or 8 bytes
        for (size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = uint8_t(v >> (8 * i));
        break;
      }
      case 3:
        b.resize(at);
        break;
      case 4: {
        const size_t n = std::min(b.size() - at, 1 + rng.below(16));
        const Bytes run(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
        b.insert(b.begin() + std::ptrdiff_t(at), run.begin(), run.end());
        break;
      }
      case 5: {
        const size_t n = std::min(b.size() - at, 1 + rng.below(16));
        b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
        break;
      }
      default: {
        const size_t n = 1 + rng.below(8);
        for (size_t i = 0; i < n; ++i) {
          b.insert(b.begin() + std::ptrdiff_t(at), static_cast<uint8_t>(rng.next()));
        }
        break;
      }
    }
  }
  return b;
}

// The input being run, for the handlers below (which may only make async-signal-safe calls).
char g_name[256];
const Bytes* g_input = nullptr;

void write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void report_failed_input() {
  if (g_input == nullptr) return;
  static const char kSays[] = "fuzz: failed on ";
  static const char kSaved[] = " (saved as ./fuzz-failed-input)\n";
  write_all(2, kSays, sizeof kSays - 1);
  write_all(2, g_name, strlen(g_name));
  write_all(2, kSaved, sizeof kSaved - 1);
  const int fd = open("fuzz-failed-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    write_all(fd, g_input->data(), g_input->size());
    close(fd);
  }
  g_input = nullptr;
}

extern "C" void on_fatal_signal(int sig) {
  report_failed_input();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void run(const Bytes& input, const std::string& name) {
  std::snprintf(g_name, sizeof g_name, "%s", name.c_str());
  g_input = &input;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_input = nullptr;
}

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--mutations N] [FILE|DIR...]\n       %s --write-seeds DIR\n",
               argv0, argv0);
  return 2;
}

}  // namespace

// AddressSanitizer and UndefinedBehaviorSanitizer end the process without a signal; they call
// this first (when the build has them).
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

// An allocation that an input drives past a few GiB fails (std::bad_alloc, which the targets
// report as a failed property) instead of taking the machine's memory, as libFuzzer's
// -malloc_limit_mb does in tools/fuzz. Under AddressSanitizer, whose shadow memory needs the
// address space, the tests set ASAN_OPTIONS=max_allocation_size_mb instead.
#if defined(__SANITIZE_ADDRESS__)  // GCC
#define HYCC_FUZZ_ASAN 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define HYCC_FUZZ_ASAN 1
#endif
#endif

void limit_address_space() {
#if !defined(HYCC_FUZZ_ASAN)
  const rlim_t limit = rlim_t{8} << 30;
  rlimit current{};
  if (getrlimit(RLIMIT_AS, &current) == 0 && current.rlim_cur > limit) {
    current.rlim_cur = limit;
    setrlimit(RLIMIT_AS, &current);
  }
#endif
}

int main(int argc, char** argv) {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal_signal);
  limit_address_space();
  if (__sanitizer_set_death_callback != nullptr) {
    __sanitizer_set_death_callback(report_failed_input);
  }
  size_t mutations = 1000;
  std::vector<fs::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::stoul(argv[++i]);
    } else if (arg == "--write-seeds" && i + 1 < argc) {
      const fs::path dir = argv[++i];
      fs::create_directories(dir);
      const std::vector<Bytes> seeds = hycc::fuzz::seeds();
      for (size_t s = 0; s < seeds.size(); ++s) {
        char name[32];
        std::snprintf(name, sizeof name, "seed-%03zu", s);
        std::ofstream(dir / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(seeds[s].data()),
                   static_cast<std::streamsize>(seeds[s].size()));
      }
      std::printf("%zu seeds written to %s\n", seeds.size(), dir.c_str());
      return 0;
    } else if (arg.starts_with("-")) {
      return usage(argv[0]);
    } else {
      paths.emplace_back(arg);
    }
  }
  const std::vector<Bytes> seeds = hycc::fuzz::seeds();
  size_t runs = 0;
  for (size_t s = 0; s < seeds.size(); ++s) {
    run(seeds[s], "seed " + std::to_string(s));
    Rng rng{0x9E3779B97F4A7C15ULL ^ (s + 1)};
    for (size_t m = 0; m < mutations; ++m) {
      run(mutate(seeds[s], rng), "seed " + std::to_string(s) + " mutation " + std::to_string(m));
    }
    runs += 1 + mutations;
  }
  size_t files = 0;
  for (const fs::path& path : paths) {
    std::vector<fs::path> inputs;
    if (fs::is_directory(path)) {
      for (const auto& entry : fs::directory_iterator(path)) inputs.push_back(entry.path());
      std::sort(inputs.begin(), inputs.end());
    } else if (fs::exists(path)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", path.c_str());
      return 2;
    }
    for (const fs::path& input : inputs) run(read_file(input), input.string());
    files += inputs.size();
  }
  std::printf("%zu seeds, %zu runs with mutations, %zu saved inputs: every property held\n",
              seeds.size(), runs, files);
  return 0;
}
