"""What the torch backend's multi-run tests share (hycc_torch_parallel_test.py,
hycc_torch_state_test.py, hycc_torch_deepspeed_test.py): a check that counts its failures, and a
launch of a training script on local ranks whose rank 0 prints one "RESULT {json}" line.

The launch gives each rank the environment torchrun gives its workers (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT; rank 0 hosts the store) but
starts no launcher process of its own: torchrun's imports torch once more per run, 2 s of CPU on
these machines, a fifth of these tests' time. The single-run tests (hycc_torch_test.py and
hycc_torch_timeout_test.py) run under torchrun itself."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

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
            with open(out, "w") as o, open(err, "w") as e:
                procs.append(subprocess.Popen([sys.executable, script, *args], env=rank_env,
                                              stdout=o, stderr=e))
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
