"""Timeouts of the hycc backend (run under torchrun with 2 ranks, HYCC_POLICY=naive): rank 1
skips two calls rank 0 makes on groups made with a 4-second timeout. Rank 0's compressed call
(a 1 MiB allreduce, run by hycc on its lane) and its uncompressed one (1 KiB, below the
threshold: gloo's own call) each raise RuntimeError naming the timeout, within the timeout and
a margin, instead of waiting for rank 1. Rank 0 prints "hycc torch timeout: OK" when both did.
"""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hycc.torch as ht  # noqa: E402,F401

TIMEOUT = 4.0
torch.set_num_threads(1)
dist.init_process_group("hycc")
rank = dist.get_rank()
lane_group = dist.new_group(backend="hycc", timeout=timedelta(seconds=TIMEOUT))
direct_group = dist.new_group(backend="hycc", timeout=timedelta(seconds=TIMEOUT))
failures = []


def times_out(what, tensor, group):
    start = time.monotonic()
    try:
        dist.all_reduce(tensor, group=group)
    except RuntimeError as e:
        took = time.monotonic() - start
        if "Timed out" not in str(e) and "timed out" not in str(e):
            failures.append(f"{what}: the error does not name the timeout: {e}")
        if not TIMEOUT - 0.5 <= took <= TIMEOUT + 10:
            failures.append(f"{what}: raised after {took:.1f} s (timeout {TIMEOUT} s)")
        print(f"{what}: {type(e).__name__} after {took:.1f} s: {str(e)[:160]}", flush=True)
        return
    failures.append(f"{what}: returned without rank 1")


if rank == 0:
    times_out("compressed allreduce", torch.randn(1 << 18), lane_group)
    times_out("uncompressed allreduce", torch.randn(256), direct_group)
    print("hycc torch timeout: OK" if not failures else
          "hycc torch timeout: FAILED: " + "; ".join(failures), flush=True)
else:
    time.sleep(2 * TIMEOUT + 12)  # rank 0's two calls time out meanwhile
sys.exit(1 if failures else 0)
