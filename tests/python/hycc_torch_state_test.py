"""The error-feedback states of the hycc backend's gradient calls across steps and checkpoints
(tests/python/torch_parallel_train.py under torchrun, HYCC_POLICY=hybrid: DDP's allreduce on dp
and FSDP2's reduce-scatter on zero_grad run error feedback):
  1. keyed by their place in the step, the states stay one per bucket or parameter group: as
     many after the last step as when the checkpoint was saved, none dropped in between;
  2. FSDP2 (alone, and x TP): a run resumed from a checkpoint at step K with
     hycc.torch.load_state_dict() gives the uninterrupted run's losses from step K on, bit for
     bit, in a new process group;
  3. resumed without hycc's states it does not (the states carry what compression held back).
DDP is not resumed bit for bit: a new DDP module reduces its first iteration in its initial
bucket layout and only then rebuilds the buckets in gradient order, so for two steps the restored
residuals sit at other parameters' places (docs/torch.md, "Error feedback and checkpoints"); its
resumed losses are printed, not checked.
Prints "hycc torch state: OK" when every check passed.
Usage: python hycc_torch_state_test.py  (torchrun from the running Python's torch)
"""
import os
import tempfile

from torchrun_driver import Checks

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "torch_parallel_train.py")
SAVE_AT = 4
checks = Checks("hycc torch state")
expect = checks.expect


def run(mode, ranks, env):
    return checks.run(TRAIN, ranks, ["hycc", mode], {"HYCC_POLICY": "hybrid", **env}, mode)


for mode, ranks, exact in (("ddp", 2, False), ("fsdp", 2, True), ("fsdp_tp", 4, True)):
    with tempfile.TemporaryDirectory(prefix="hycc-torch-state-") as ckpt:
        env = {"HYCC_TEST_CHECKPOINT": ckpt, "HYCC_TEST_SAVE_AT": str(SAVE_AT)}
        whole = run(mode, ranks, env)
        resumed = run(mode, ranks, {**env, "HYCC_TEST_RESUME": "all"})
        cold = run(mode, ranks, {**env, "HYCC_TEST_RESUME": "model"})
    if not (whole and resumed and cold):
        continue
    saved, end = whole["states"]["saved"], whole["states"]["end"]
    expect(saved["tensors"] > 0, f"{mode}: hybrid kept no gradient state ({saved})")
    expect(end["tensors"] == saved["tensors"],
           f"{mode}: {saved['tensors']} states at step {SAVE_AT}, {end['tensors']} at the end")
    # Before the first optimizer step calls keep buffer keys, which FSDP2's fresh buffers may
    # overlap (a drop there depends on the allocator); once keyed by step, nothing is dropped.
    expect(end["dropped"] == saved["dropped"],
           f"{mode}: states dropped after step {SAVE_AT}: {saved} then {end}")
    tail = whole["losses"][SAVE_AT:]
    if exact:
        expect(resumed["losses"] == tail,
               f"{mode}: resumed losses {resumed['losses']} are not the whole run's {tail}")
        expect(cold["losses"][-1] != tail[-1],
               f"{mode}: resumed without hycc's states, the last loss is still {tail[-1]!r}")
    print(f"{mode} ({ranks} ranks{'' if exact else ', resume not checked'}): {end['tensors']} states ({end['host_bytes']} bytes) at steps "
          f"{SAVE_AT} and {len(whole['losses'])}; last loss {tail[-1]!r} whole, "
          f"{resumed['losses'][-1]!r} resumed, {cold['losses'][-1]!r} resumed without hycc's "
          f"states", flush=True)

checks.finish()
