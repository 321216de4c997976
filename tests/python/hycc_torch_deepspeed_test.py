"""DeepSpeed on the hycc backend (tests/python/deepspeed_train.py under torchrun, DeepSpeed's CPU
accelerator): deepspeed.init_distributed(dist_backend="hycc") with ZeRO stages 1 and 2 on 2
ranks. Under baseline every loss is gloo's, bit for bit; under hybrid the last loss is within 5%
of gloo's and the gradients' allreduce was compressed. DeepSpeed makes its data-parallel group
with new_group() and no description ("undefined"), so the hybrid run names it:
HYCC_TORCH_DIMENSIONS=undefined=dp. Prints "hycc torch deepspeed: OK" when every check passed.
Usage: python hycc_torch_deepspeed_test.py  (torchrun from the running Python's torch)
"""
import os

from torchrun_driver import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "deepspeed_train.py")
checks = Checks("hycc torch deepspeed")
expect = checks.expect


def run(backend, stage, env):
    return checks.run(TRAIN, 2, [backend, str(stage)], {"DS_ACCELERATOR": "cpu", **env},
                      f"ZeRO-{stage} on {backend}")


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

checks.finish()
