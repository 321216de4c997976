"""PyTorch's parallel APIs on the hycc backend, each against gloo (tests/python/
torch_parallel_train.py under torchrun): FSDP2 on 2 ranks, DTensor tensor parallelism on 2 ranks
(its 1-D mesh is torch's default group: HYCC_TORCH_DIMENSIONS=default_pg=tp names it), FSDP2 x TP
on a 2 x 2 mesh, and a two-stage pipelining schedule. Under baseline every loss is gloo's, bit
for bit; under hybrid the last loss is within 5% of gloo's, and the sharded modes compressed the
dimensions the policy compresses (FSDP's gradient reduce-scatter and parameter all-gather as
zero_grad and zero_param; pipelining's activations and gradients, point to point, as pp).
Prints "hycc torch parallel: OK" when every check passed.
Usage: python hycc_torch_parallel_test.py  (torchrun from the running Python's torch)
"""
import os

from torchrun_driver import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "torch_parallel_train.py")
# Pipelining's stages talk over the default group, named pp here; its activations (8 KiB) are
# below hybrid's 64 KiB threshold, so its compressed run takes hybrid's pp rule without it.
PP_POLICY = os.path.join(HERE, "pp_small_messages.toml")
RUNS = [("fsdp", 2, {}, "hybrid"), ("tp", 2, {"HYCC_TORCH_DIMENSIONS": "default_pg=tp"}, "hybrid"),
        ("fsdp_tp", 4, {}, "hybrid"),
        ("pp", 2, {"HYCC_TORCH_DIMENSIONS": "default_pg=pp"}, PP_POLICY)]
# What the compressed run must have compressed in each mode (calls of that dimension, summed
# over operations).
COMPRESSED = {"fsdp": ["zero_grad", "zero_param"], "fsdp_tp": ["zero_grad", "zero_param"],
              "pp": ["pp"]}
checks = Checks("hycc torch parallel")
expect = checks.expect


def run(mode, ranks, backend, env):
    return checks.run(TRAIN, ranks, [backend, mode], env, f"{mode} on {backend}")


for mode, ranks, extra, policy in RUNS:
    gloo = run(mode, ranks, "gloo", {})
    base = run(mode, ranks, "hycc", {**extra, "HYCC_POLICY": "baseline"})
    hybrid = run(mode, ranks, "hycc", {**extra, "HYCC_POLICY": policy})
    if not (gloo and base and hybrid):
        continue
    expect(base["losses"] == gloo["losses"],
           f"{mode}: baseline losses {base['losses'][-2:]} are not gloo's {gloo['losses'][-2:]}")
    gap = abs(hybrid["losses"][-1] - gloo["losses"][-1]) / gloo["losses"][-1]
    expect(gap < 0.05, f"{mode}: hybrid's last loss {hybrid['losses'][-1]:.5f} is "
                       f"{gap:.1%} from gloo's {gloo['losses'][-1]:.5f}")
    for dim in COMPRESSED.get(mode, []):
        expect(hybrid["compressed"].get(dim, 0) > 0,
               f"{mode}: hybrid compressed no {dim} call ({hybrid['compressed']})")
    print(f"{mode} ({ranks} ranks): gloo last loss {gloo['losses'][-1]:.6f}, baseline "
          f"{base['losses'][-1]:.6f}, hybrid {hybrid['losses'][-1]:.6f} ({gap:.2%}); hybrid's "
          f"compressed calls {hybrid['compressed']}", flush=True)

checks.finish()
