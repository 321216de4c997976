"""What the torch backend's multi-run tests share (hycc_torch_parallel_test.py,
hycc_torch_state_test.py, hycc_torch_deepspeed_test.py): a check that counts its failures, and a
launch of a training script on local ranks whose rank 0 prints one "RESULT {json}" line.

The launch gives each rank the environment torchrun gives its workers (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT; rank 0 hosts the store) but
starts no launcher process of its own: torchrun's imports torch once more per run, 2 s of CPU on
these machines, a fifth of these tests' time. Nor does each rank import torch: the driver
imports it once (with OMP_NUM_THREADS=1, which OpenMP reads when torch loads it, as every rank
here runs) and forks the ranks from itself; a rank then takes its own environment, streams,
arguments and `__main__`, runs the script, its exit handlers and exits with the script's status.
HYCC_TEST_SPAWN=1 starts each rank as a new Python process instead (the reference: a result that
differs between the two is the fork's fault). As a program (`--nproc-per-node N SCRIPT`) it
launches one script: ctest runs hycc_torch_test.py so, except one run kept under torchrun itself
(as is hycc_torch_timeout_test.py)."""
import atexit
import json
import os
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

os.environ["OMP_NUM_THREADS"] = "1"  # before torch loads OpenMP, in the driver and every rank
SPAWN = os.environ.get("HYCC_TEST_SPAWN") == "1"
if not SPAWN:
    import torch  # noqa: F401  (inherited by every forked rank)
    import torch.distributed  # noqa: F401

TIMEOUT_S = 300


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script, ranks, args, env):
    """Runs `script ARGS` on `ranks` processes; returns (exit status, stdout, stderr), each
    stream the ranks' in rank order. A rank that fails stops the others, as under torchrun."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        logs, procs = [], []
        for rank in range(ranks):
            rank_env = {**env, "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
                        "WORLD_SIZE": str(ranks), "LOCAL_WORLD_SIZE": str(ranks),
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            out, err = (os.path.join(tmp, f"{rank}.{kind}") for kind in ("out", "err"))
            logs.append((out, err))
            if SPAWN:
                with open(out, "w") as o, open(err, "w") as e:
                    procs.append(subprocess.Popen([sys.executable, script, *args],
                                                  env=rank_env, stdout=o, stderr=e))
            else:
                procs.append(ForkedRank(script, args, rank_env, out, err))
        deadline = time.monotonic() + TIMEOUT_S
        failed, timed_out = [], False
        # Every rank polled each time (a returncode is set only by poll()).
        while None in [p.poll() for p in procs]:
            failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
            timed_out = time.monotonic() > deadline
            if failed or timed_out:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                break
            time.sleep(0.05)
        codes = [p.wait() for p in procs]
        # The first rank that failed, not one stopped because of it.
        status = next(iter(failed), next((c for c in codes if c != 0), 0))
        stdout = "".join(open(out).read() for out, _ in logs)
        stderr = "".join(f"[rank{rank}]: {line}\n" for rank, (_, err) in enumerate(logs)
                         for line in open(err).read().splitlines())
    if timed_out:
        stderr += f"stopped after {TIMEOUT_S} s\n"
    return status, stdout, stderr


class ForkedRank:
    """A rank forked from the driver, which has imported torch: poll(), wait() and kill() as
    subprocess.Popen's, returncode -N when signal N stopped it."""

    def __init__(self, script, args, env, out, err):
        sys.stdout.flush()
        sys.stderr.flush()
        self.returncode = None
        self.pid = os.fork()
        if self.pid == 0:
            os._exit(run_rank(script, args, env, out, err))

    def _reap(self, flags):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, flags)
            if pid != 0:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self):
        return self._reap(os.WNOHANG)

    def wait(self):
        return self._reap(0)

    def kill(self):
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


def run_rank(script, args, env, out, err):
    """In a forked rank: `script ARGS` as its own program would run; returns its exit status."""
    try:
        atexit._clear()  # the driver's exit handlers are not the rank's
        for fd, path in ((1, out), (2, err)):
            opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [script, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        status = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                status = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                status = 1
        except BaseException:  # noqa: B036 (the rank's program stopped: as Python reports it)
            traceback.print_exc()
            status = 1
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        return status
    except BaseException:  # noqa: B036 (nothing may return into the driver's code)
        traceback.print_exc()
        return 1


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = 0

    def expect(self, cond, what):
        if not cond:
            self.failures += 1
            print(f"{self.name}: FAILED: {what}", file=sys.stderr, flush=True)

    def run(self, script, ranks, args, env, what):
        """The RESULT of `script ARGS` on `ranks` ranks with `env` added, or None (a failure,
        with the run's output) when it printed none."""
        status, stdout, stderr = launch(script, ranks, args,
                                        {**os.environ, "OMP_NUM_THREADS": "1", **env})
        for line in stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        self.expect(False, f"{what} {env}: no result (exit {status})\n"
                           f"{stdout[-2000:]}\n{stderr[-3000:]}")
        return None

    def finish(self):
        print(f"{self.name}: OK" if self.failures == 0 else f"{self.name}: {self.failures} FAILED")
        sys.exit(0 if self.failures == 0 else 1)


def main():
    """`torchrun_driver.py --nproc-per-node N SCRIPT [ARGS...]`: SCRIPT on N forked ranks as
    torchrun --standalone would run it; prints their output and exits with their status."""
    if len(sys.argv) < 4 or sys.argv[1] != "--nproc-per-node" or not sys.argv[2].isdigit():
        sys.exit("usage: torchrun_driver.py --nproc-per-node N SCRIPT [ARGS...]")
    status, stdout, stderr = launch(sys.argv[3], int(sys.argv[2]), sys.argv[4:], dict(os.environ))
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
