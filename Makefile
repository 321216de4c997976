# hycc: top-level entry points. `make demo` runs the main job, `make test` every test.
# Both install missing Debian packages first (scripts/setup-deps).

BUILD      ?= build
ASAN_BUILD ?= build-asan
MPICH_BUILD ?= build-mpich
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# New build directories use Ninja (scripts/setup-deps installs it): a clean Release build took
# 375 s against Make's 403 s on 2 cores. A directory configured before keeps its generator.
export CMAKE_GENERATOR ?= Ninja

.PHONY: all deps data python configure build install test test-release test-sanitize test-mpich test-tsan demo study bench-codec fuzz format clean

all: build

deps:
	@scripts/setup-deps

# The training text (Jane Austen and the King James Bible) in ${HYCC_DATA_DIR:-~/.cache/hycc}/corpus; idempotent.
data: deps
	@scripts/fetch-data

# The Python environment of the Python tests (PyTorch 2, numpy, mpi4py; python/requirements.lock)
# in ${HYCC_VENV:-~/.cache/hycc/venv}; idempotent, reused by every clone on the machine. `make test`
# makes it while its Release build compiles (scripts/build-with-python), then builds the PyTorch
# backend against its torch (its first install is mostly download and unpacking, about 4 minutes).
python: deps
	@scripts/setup-python

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DHYCC_WERROR=ON $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Installs the libraries, headers, CMake package, pkg-config file, tools and Python package
# under PREFIX (docs/install.md).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Every test: the Release suite, then the same suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (without the exhaustive 2^32-pattern test, too slow there, and
# without the emulated-cluster tests, the experiment's and study's smoke tests and hycc-bench's,
# which test scripts, tools and the network, not memory (the build leaves hycc-bench out); at 4
# and 8 ranks only the MPI suites whose code paths 3 ranks do not take, the device collectives
# at 1 to 3 ranks, their large counts divided by 8; tests/CMakeLists.txt).
# The sanitizer build compiles the CUDA sources for the CPU emulator (tests/cuda_emu), so the GPU
# tests run there too, kernels included. It compiles at -O1 with line tables only (-g1: file and
# line in the reports): half the compile time of -O2 -g, for tests about a fifth slower.
# While the Release suite runs, the sanitizer and MPICH builds compile behind it on the cores its
# tests leave idle (BEHIND below); their phases then wait for them and build what is left.
# Each phase's time goes to $(PHASES) (scripts/timed); each suite ends with its slowest tests and
# its total, and `make test` with the time of every phase (scripts/test-report; the budget:
# CONTRIBUTING.md, "Test time budget").
test: test-release test-sanitize test-mpich
	@scripts/test-report phases $(PHASES)

PHASES ?= $(BUILD)/make-test-phases.tsv
TIMED = scripts/timed $(PHASES)
# A ctest run that writes its JUnit file and then reports its slowest tests, passed or not.
# $(call run_suite,BUILD_DIR,NAME,CTEST_ARGS)
define run_suite
status=0; ctest --test-dir $(1) --output-on-failure -j $(JOBS) \
  --output-junit $(abspath $(1))/ctest-junit.xml $(3) || status=$$?; \
scripts/test-report suite $(1)/ctest-junit.xml --name "$(2)"; exit $$status
endef

# The Release build with the Python environment made beside it (scripts/build-with-python: the
# install is mostly download and unpacking, the build compiling), then configured again for the
# PyTorch backend once the environment is there.
test-release:
	@rm -f $(PHASES)
	@$(TIMED) "Debian packages" scripts/setup-deps
	@$(TIMED) "Release build (and Python environment)" scripts/build-with-python $(BUILD) $(JOBS) $(CMAKE_ARGS)
	@$(TIMED) "training text" scripts/fetch-data
	@$(if $(BEHIND),$(BEHIND_START))
	@$(TIMED) "Release suite" sh -c '$(call run_suite,$(BUILD),Release suite,)' || { \
	  scripts/build-behind stop $(ASAN_BUILD) $(MPICH_BUILD); exit 1; }

# Within `make test` the sanitizer and MPICH builds run behind the Release suite at the lowest
# CPU priority, on the cores its tests leave idle (scripts/build-behind; BEHIND= turns it off);
# their phases wait for them, then build what is left. The MPICH build waits for the sanitizer
# build.
BEHIND ?= $(filter test,$(MAKECMDGOALS))
define BEHIND_START
scripts/build-behind start $(ASAN_BUILD) sh -c '$(SANITIZE_CONFIGURE) && $(SANITIZE_BUILD)'; \
scripts/build-behind start $(MPICH_BUILD) sh -c 'flock $(ASAN_BUILD)/.build-behind.lock true && \
  tests/mpich/mpich_test.sh $(MPICH_BUILD) $(JOBS) --build-only'
endef

SANITIZE_TARGETS = hycc_unit_tests hycc_mpi_tests hycc_device_coll_tests hycc-train hycc-sim \
  hycc-policy hycc_cuda_emu_tests hycc_gpu_tests hycc_gpu_coll_tests \
  dropin_device_emu_program capi_program fuzz_stream_replay fuzz_codec_replay fuzz_state_replay \
  fuzz_text_replay fuzz_peer_replay
SANITIZE_CONFIGURE = cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHYCC_SANITIZE=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DHYCC_WERROR=ON \
  -DHYCC_WITH_CUDA=OFF -DHYCC_CUDA_EMULATION=ON $(CMAKE_ARGS)
SANITIZE_BUILD = cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(SANITIZE_TARGETS)
test-sanitize: deps data
	@$(TIMED) "sanitizer configure" scripts/build-behind run $(ASAN_BUILD) $(SANITIZE_CONFIGURE)
	@$(TIMED) "sanitizer build" scripts/build-behind run $(ASAN_BUILD) $(SANITIZE_BUILD)
	@$(TIMED) "sanitizer suite" sh -c '$(call run_suite,$(ASAN_BUILD),Sanitizer suite,-E "Exhaustive|netemu|bench_|experiment|study")'

# The library and the drop-in library built against MPICH instead of Open MPI, and the drop-in
# test programs (C, Fortran mpif.h and mpi_f08, MPI 4's large-count calls and MPI_Isendrecv,
# nonblocking, threads, device buffers) run under MPICH
# (tests/mpich/mpich_test.sh; docs/dropin.md, "MPI implementations"). MPICH_FULL=1 adds hycc's
# MPI test suite at 1 to 4 ranks (about 6 more minutes).
test-mpich: deps
	@$(TIMED) "MPICH stage" scripts/build-behind run $(MPICH_BUILD) \
	  tests/mpich/mpich_test.sh $(MPICH_BUILD) $(JOBS) $(if $(MPICH_FULL),--full)

# The drop-in library's threads (the program's, the progress thread, the communicators'
# workers) under ThreadSanitizer, 4 ranks on Open MPI (tests/tsan/tsan_test.sh; docs/dropin.md,
# "Threads"). Not part of `test`: a build of its own for two programs.
test-tsan: deps
	tests/tsan/tsan_test.sh $(TSAN_BUILD) $(JOBS)

# The main job, a few minutes: a short live run of the hybrid-compression experiment
# (tools/experiment: baseline, naive and hybrid trained for 60 steps on 8 ranks, DP2 x TP2 x PP2,
# on the emulated cluster as root; report in report/: throughput, loss curves, bytes per
# dimension, commands), then the committed study's results (`make study`, docs/study.md): the
# losses over seeds with their intervals, which one short run cannot resolve.
demo: build data
	tools/experiment --out report --steps 60
	@printf '\n== The committed study (make study; plots in docs/experiment/study/) ==\n\n'
	@cat docs/experiment/study/README.md

# The sensitivity study (tools/study): each dimension compressed alone at a ladder of
# intensities, 3 seeds, on shared memory; resumable; report, heat map and intervals in study/.
# It prints its expected run time first (about 96 runs of a minute or two on 2 cores).
study: build data
	tools/study --out study

# Coverage-guided fuzzing with libFuzzer (clang; installed if missing), 60 s per target, in
# build-fuzz/ (docs/fuzzing.md). Not part of `make test`, which replays the saved inputs.
fuzz:
	tools/fuzz

bench-codec: build
	$(BUILD)/bin/hycc-bench codec --json $(BUILD)/codec-bench.json

format:
	clang-format -i $$(git ls-files '*.h' '*.cc' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(MPICH_BUILD)
