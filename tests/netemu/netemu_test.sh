#!/usr/bin/env bash
# Test of tools/netemu: an MPI job runs across emulated hosts, its traffic really crosses the
# rate-limited links, and nothing is left behind, whether the program succeeds, fails, is
# interrupted with Ctrl-C (SIGINT), terminated (SIGTERM) or its netemu killed outright (then
# `netemu cleanup` removes the rest).
#
# usage: tests/netemu/netemu_test.sh        (root; about 20 s)
# Prints one PASS/FAIL line per check; exits 0 when all pass, 1 when any fails, 77 (skip) without
# root or without the tools it needs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NETEMU=$(cd "$HERE/../.." && pwd)/tools/netemu
RATE=100mbit
RATE_MBIT=100
ALLREDUCE_MIB=64 # 64 MiB at 100 Mbit/s: about 5.6 s when the links really limit it
P2P_MIB=16

failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
skip() {
  echo "SKIP: $*"
  exit 77
}
# check DESCRIPTION COMMAND...: PASS if the command succeeds, else FAIL.
check() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces and tc); run as root"
for tool in ip tc mpicc mpirun unshare awk; do
  command -v "$tool" >/dev/null || skip "missing tool $tool (scripts/setup-deps installs it)"
done

# netemu check builds and removes a one-host network: skip where the kernel lacks what it needs
# (exit 77); any other failure of it is a failure of netemu.
rc=0
why=$("$NETEMU" check 2>&1) || rc=$?
if ((rc == 77)); then skip "netemu cannot run here: $why"; fi
if ((rc != 0)); then
  echo "FAIL: netemu check exited $rc: $why"
  exit 1
fi
# Whether --delay works depends on the kernel having netem (not all kernels do).
if "$NETEMU" check --delay 1ms >/dev/null 2>&1; then
  echo "note: netem is available, --delay can be used"
else
  echo "note: netem is not available in this kernel, --delay cannot be used"
fi

TMP=$(mktemp -d /tmp/netemu_test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mpicc -O2 -o "$TMP/mpi_probe" "$HERE/mpi_probe.c" || skip "mpicc cannot build mpi_probe.c"
PROBE=$TMP/mpi_probe

# Name of the run that wrote stderr file $1 ("netemu: run hynetXXXX: ...").
run_name_of() { grep -oE 'netemu: run hynet[0-9a-f]{4}' "$1" | head -1 | awk '{ print $3 }'; }

# True when run $1 left nothing: no namespace, no state directory, no link in the default namespace
# named after it, no Open MPI session directory. Its links, bridge and qdiscs lived only inside its
# namespaces.
nothing_left() {
  local name=$1
  [[ -n $name ]] || return 1
  [[ -z $(ip netns list | awk '{ print $1 }' | grep -E "^$name-" || true) ]] &&
    [[ ! -e /run/netemu/$name ]] &&
    [[ -z $(ip -o link show | grep "$name" || true) ]] &&
    ! compgen -G "${TMPDIR:-/tmp}/ompi.$name-*" >/dev/null
}

# True when none of the pids $@ is a running process (zombies waiting for init count as gone).
all_gone() {
  local p state
  for p in "$@"; do
    state=$(sed -E 's/^.*\) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $1 }' || true)
    [[ -z $state || $state == Z ]] || return 1
  done
}

# Waits up to $2 seconds for background job $1 to end and sets job_rc to its exit code (or 124).
wait_job() {
  local pid=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    job_rc=124
    return
  fi
  job_rc=0
  wait "$pid" 2>/dev/null || job_rc=$?
}

# Waits up to 30 s until every rank of the run printing to $1 sleeps ($2 ranks).
wait_sleeping() {
  local i
  for ((i = 0; i < 300; i++)); do
    [[ $(grep -c 'sleeping' "$1" 2>/dev/null || true) -ge $2 ]] && return 0
    sleep 0.1
  done
  return 1
}

echo "== 1. allreduce and throughput through 2 hosts at $RATE"
rc=0
timeout 120 "$NETEMU" run --stats --hosts 2 --rate "$RATE" -- "$PROBE" "$ALLREDUCE_MIB" "$P2P_MIB" \
  >"$TMP/out1" 2>"$TMP/err1" || rc=$?
sed 's/^/  | /' "$TMP/out1"
grep -E '^netemu: (run|stats)' "$TMP/err1" | sed 's/^/  | /'
name=$(run_name_of "$TMP/err1")
check "netemu exits 0 (got $rc)" test "$rc" -eq 0
check "allreduce result is exact" grep -q '^allreduce_check OK' "$TMP/out1"
check "one rank per emulated host (2 distinct hostnames)" \
  test "$(awk '/^rank/ { print $6 }' "$TMP/out1" | sort -u | wc -l)" -eq 2
# Bytes on the wire, counted by tc on host 0's link: all of its share of the allreduce crossed it.
sent=$(awk '/stats host 0/ { print $6 }' "$TMP/err1")
check "host 0 sent >= $ALLREDUCE_MIB MiB through its shaped link (tc counted ${sent:-?} bytes)" \
  test "${sent:-0}" -ge $((ALLREDUCE_MIB * 1024 * 1024))
# Throughput: the shaper caps it, so above 1.3x the rate would mean traffic bypassed the links.
# Only the cap is checked (a functional property of the tool); a slow, shared machine may go
# below the rate and that is no failure of netemu.
busbw=$(awk '/^allreduce_bytes/ { print $10 }' "$TMP/out1")
p2p=$(awk '/^p2p_bytes/ { print $8 }' "$TMP/out1")
within() { awk -v v="${1:-0}" -v r="$RATE_MBIT" 'BEGIN { exit !(v > 0 && v <= 1.3 * r) }'; }
check "allreduce busbw ${busbw:-?} Mbit/s is at most 1.3 x $RATE_MBIT" within "$busbw"
check "point-to-point ${p2p:-?} Mbit/s is at most 1.3 x $RATE_MBIT" within "$p2p"
check "run $name left nothing behind" nothing_left "$name"

echo "== 1b. nodes of 2 ranks (--ranks-per-host 2): placement, and shared memory inside a node"
rc=0
timeout 120 "$NETEMU" run --stats --hosts 2 --ranks-per-host 2 --rate "$RATE" -- "$PROBE" 4 0 \
  >"$TMP/out1b" 2>"$TMP/err1b" || rc=$?
sed 's/^/  | /' "$TMP/out1b"
name=$(run_name_of "$TMP/err1b")
check "netemu exits 0 (got $rc)" test "$rc" -eq 0
check "allreduce result is exact" grep -q '^allreduce_check OK' "$TMP/out1b"
host_of() { awk -v r="$1" '$1 == "rank" && $2 == r { print $6 }' "$TMP/out1b"; }
same_node() { [[ -n $(host_of "$1") && $(host_of "$1") == $(host_of "$2") ]]; }
check "ranks 0 and 1 share a host" same_node 0 1
check "ranks 2 and 3 share a host" same_node 2 3
check "ranks 1 and 2 are on different hosts" eval '! same_node 1 2'
check "run $name left nothing behind" nothing_left "$name"
# One host of 2 ranks: a 16 MiB allreduce between them must not touch the link (tc counts what
# the host sent: only Open MPI's start-up chatter with nobody, well under 1 MiB).
rc=0
timeout 120 "$NETEMU" run --stats --hosts 1 --ranks-per-host 2 --rate "$RATE" -- "$PROBE" 16 0 \
  >"$TMP/out1c" 2>"$TMP/err1c" || rc=$?
name=$(run_name_of "$TMP/err1c")
sent=$(awk '/stats host 0/ { print $6 }' "$TMP/err1c")
check "netemu exits 0 (got $rc)" test "$rc" -eq 0
check "two ranks of one host exchange 16 MiB over shared memory (link carried ${sent:-?} bytes)" \
  test "${sent:-999999999}" -lt $((1024 * 1024))
check "run $name left nothing behind" nothing_left "$name"

echo "== 1d. sites (--sites 2): the link between sites limits traffic between them"
rc=0
timeout 60 "$NETEMU" run --stats --hosts 2 --sites 2 --rate 1gbit --site-rate 50mbit -- \
  "$PROBE" 0 2 >"$TMP/out1d" 2>"$TMP/err1d" || rc=$?
name=$(run_name_of "$TMP/err1d")
p2p=$(awk '/^p2p_bytes/ { print $8 }' "$TMP/out1d")
check "netemu exits 0 (got $rc)" test "$rc" -eq 0
check "point-to-point across sites ${p2p:-?} Mbit/s is at most 1.3 x 50 (hosts' links: 1 Gbit/s)" \
  awk -v v="${p2p:-0}" 'BEGIN { exit !(v > 0 && v <= 65) }'
check "the site links' bytes are counted" \
  grep -q '^netemu: stats site 1 sent_bytes [0-9]' "$TMP/err1d"
check "run $name left nothing behind" nothing_left "$name"
rc=0
"$NETEMU" run --hosts 2 --sites 2 --rate 1gbit -- true >/dev/null 2>"$TMP/err1e" || rc=$?
check "--sites without --site-rate is refused (exit $rc)" \
  eval '[[ $rc -eq 125 ]] && grep -q "site-rate is required" "$TMP/err1e"'

echo "== 2. a failing program: exit code propagated, nothing left"
rc=0
# shellcheck disable=SC2016 # expanded by the rank's shell
timeout 60 "$NETEMU" run --hosts 2 --rate "$RATE" -- \
  sh -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && exit 3; exit 0' >"$TMP/out2" 2>"$TMP/err2" || rc=$?
name=$(run_name_of "$TMP/err2")
check "netemu exits with the program's code 3 (got $rc)" test "$rc" -eq 3
check "run $name left nothing behind" nothing_left "$name"

# Starts, in the background and in its own process group (so that SIGINT reaches it), a run of
# HOSTS hosts whose ranks sleep; its output goes to $TMP/outN and $TMP/errN; sets pid.
start_sleeping_run() {
  local hosts=$1 n=$2
  set -m # own process group per background job, and SIGINT not ignored in it
  "$NETEMU" run --hosts "$hosts" --rate "$RATE" -- "$PROBE" 0 0 120 >"$TMP/out$n" 2>"$TMP/err$n" &
  pid=$!
  set +m
}
# The background run never reached its program: a failure; stop it.
not_started() {
  fail "program did not start within 30 s"
  kill -TERM "$pid" 2>/dev/null || true
  wait_job "$pid" 30
}

echo "== 3. Ctrl-C (SIGINT to the whole process group) while the program runs"
start_sleeping_run 2 3
if wait_sleeping "$TMP/out3" 2; then
  name=$(run_name_of "$TMP/err3")
  mapfile -t pids < <(ip netns pids "$name-h0"; ip netns pids "$name-h1")
  kill -INT -- "-$pid"
  wait_job "$pid" 30
  check "netemu exits 130 after SIGINT (got $job_rc)" test "$job_rc" -eq 130
  check "run $name left nothing behind" nothing_left "$name"
  check "its ${#pids[@]} processes (mpirun, orted, ranks) are gone" all_gone "${pids[@]}"
else
  not_started
fi

echo "== 4. SIGTERM to netemu alone (as a CI timeout would send)"
start_sleeping_run 3 4
if wait_sleeping "$TMP/out4" 3; then
  name=$(run_name_of "$TMP/err4")
  mapfile -t pids < <(for i in 0 1 2; do ip netns pids "$name-h$i"; done)
  # Meanwhile a second run must work beside it: its own names and subnet, no collision.
  rc=0
  timeout 60 "$NETEMU" run --hosts 2 --rate 1gbit -- "$PROBE" 1 1 >"$TMP/out4b" 2>"$TMP/err4b" ||
    rc=$?
  other=$(run_name_of "$TMP/err4b")
  subnets=$(grep -ohE 'on 10\.231\.[0-9]+\.0/24' "$TMP/err4" "$TMP/err4b" | sort -u | wc -l)
  check "a concurrent run $other works (exit $rc) on its own subnet" \
    test "$rc" -eq 0 -a "$other" != "$name" -a "$subnets" -eq 2
  other_gone_name_there() {
    nothing_left "$other" && [[ -n $(ip netns list | grep "^$name-h2" || true) ]]
  }
  check "run $other left nothing behind, run $name still there" other_gone_name_there
  kill -TERM "$pid"
  wait_job "$pid" 30
  check "netemu exits 143 after SIGTERM (got $job_rc)" test "$job_rc" -eq 143
  check "run $name left nothing behind" nothing_left "$name"
  check "its ${#pids[@]} processes are gone" all_gone "${pids[@]}"
else
  not_started
fi

echo "== 5. netemu killed with SIGKILL: 'netemu list' shows the dead run, 'cleanup' removes it"
start_sleeping_run 2 5
if wait_sleeping "$TMP/out5" 2; then
  name=$(run_name_of "$TMP/err5")
  mapfile -t pids < <(ip netns pids "$name-h0"; ip netns pids "$name-h1")
  kill -KILL "$pid"
  wait_job "$pid" 10 2>/dev/null # no "Killed" job notice from bash
  check "netemu list reports $name as dead" bash -c "'$NETEMU' list | grep -q '^$name  dead'"
  "$NETEMU" cleanup >"$TMP/cleanup5" 2>&1 || true
  check "netemu cleanup removed $name" grep -q "removed $name" "$TMP/cleanup5"
  check "run $name left nothing behind" nothing_left "$name"
  check "its ${#pids[@]} processes are gone" all_gone "${pids[@]}"
else
  not_started
fi

echo "== 6. without root it refuses clearly"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if command -v setpriv >/dev/null && as_nobody test -x "$NETEMU"; then
  rc=0
  as_nobody "$NETEMU" run --hosts 2 --rate "$RATE" -- true \
    >"$TMP/out6" 2>&1 || rc=$?
  refused() { [[ $rc -eq 125 ]] && grep -q 'needs root' "$TMP/out6"; }
  check "exits 125 (got $rc) saying it needs root" refused
else
  echo "SKIP: cannot run as nobody here (setpriv missing or $NETEMU unreadable)"
fi

echo "== 7. a bad --ranks-per-host is refused before anything is made"
rc=0
"$NETEMU" run --hosts 2 --ranks-per-host 0 --rate "$RATE" -- true >"$TMP/out7" 2>&1 || rc=$?
refused_k() { [[ $rc -eq 125 ]] && grep -q 'ranks-per-host must be' "$TMP/out7"; }
check "exits 125 (got $rc) naming the option" refused_k

if ((failures == 0)); then
  echo "netemu_test: all checks passed"
else
  echo "netemu_test: $failures check(s) FAILED"
  exit 1
fi
