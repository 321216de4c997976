"""What the torch backend's multi-run tests share (hycc_torch_parallel_test.py,
hycc_torch_state_test.py, hycc_torch_deepspeed_test.py): a check that counts its failures, and a
torchrun launch of a training script whose rank 0 prints one "RESULT {json}" line."""
import json
import os
import subprocess
import sys


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = 0

    def expect(self, cond, what):
        if not cond:
            self.failures += 1
            print(f"{self.name}: FAILED: {what}", file=sys.stderr, flush=True)

    def run(self, script, ranks, args, env, what):
        """The RESULT of `script ARGS` under torchrun with `ranks` ranks and `env` added, or None
        (a failure, with the run's output) when it printed none."""
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={ranks}", script, *args]
        done = subprocess.run(cmd, env={**os.environ, "OMP_NUM_THREADS": "1", **env},
                              capture_output=True, text=True, timeout=300)
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        self.expect(False, f"{what} {env}: no result (exit {done.returncode})\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return None

    def finish(self):
        print(f"{self.name}: OK" if self.failures == 0 else f"{self.name}: {self.failures} FAILED")
        sys.exit(0 if self.failures == 0 else 1)
