"""DeepSpeed on the hycc backend (tests/python/deepspeed_train.py under torchrun, DeepSpeed's CPU
accelerator): deepspeed.init_distributed(dist_backend="hycc") with ZeRO stages 1 and 2 on 2
ranks. Under baseline every loss is gloo's, bit for bit; under hybrid the last loss is within 5%
of gloo's and the gradients' allreduce was compressed. DeepSpeed makes its data-parallel group
with new_group() and no description ("undefined"), so the hybrid run names it:
HYCC_TORCH_DIMENSIONS=undefined=dp. Prints "hycc torch deepspeed: OK" when every check passed.
Usage: python hycc_torch_deepspeed_test.py  (torchrun from the running Python's torch)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "deepspeed_train.py")
failures = 0


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"hycc torch deepspeed: FAILED: {what}", file=sys.stderr, flush=True)


def run(backend, stage, env):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           TRAIN, backend, str(stage)]
    done = subprocess.run(cmd, env={**os.environ, "OMP_NUM_THREADS": "1", "DS_ACCELERATOR": "cpu",
                                    **env}, capture_output=True, text=True, timeout=300)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    expect(False, f"ZeRO-{stage} on {backend} {env}: no result (exit {done.returncode})\n"
                  f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return None


for stage in (1, 2):
    gloo = run("gloo", stage, {})
    base = run("hycc", stage, {"HYCC_POLICY": "baseline"})
    hybrid = run("hycc", stage, {"HYCC_POLICY": "hybrid", "HYCC_TORCH_DIMENSIONS": "undefined=dp"})
    if not (gloo and base and hybrid):
        continue
    expect(base["losses"] == gloo["losses"],
           f"ZeRO-{stage}: baseline losses {base['losses'][-2:]} are not gloo's "
           f"{gloo['losses'][-2:]}")
    gap = abs(hybrid["losses"][-1] - gloo["losses"][-1]) / gloo["losses"][-1]
    expect(gap < 0.05, f"ZeRO-{stage}: hybrid's last loss {hybrid['losses'][-1]:.5f} is {gap:.1%} "
                       f"from gloo's {gloo['losses'][-1]:.5f}")
    dp = hybrid["calls"].get("dp/allreduce", [0, 0])
    expect(dp[1] > 0, f"ZeRO-{stage}: hybrid compressed no dp allreduce ({hybrid['calls']})")
    print(f"ZeRO-{stage} (2 ranks): gloo last loss {gloo['losses'][-1]:.6f}, baseline "
          f"{base['losses'][-1]:.6f}, hybrid {hybrid['losses'][-1]:.6f} ({gap:.2%}); hybrid's "
          f"calls (all, compressed) {hybrid['calls']}", flush=True)

print("hycc torch deepspeed: OK" if failures == 0 else f"hycc torch deepspeed: {failures} FAILED")
sys.exit(0 if failures == 0 else 1)
