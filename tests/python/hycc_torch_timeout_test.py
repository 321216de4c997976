"""Timeouts of the hycc backend (run under torchrun with 2 ranks, HYCC_POLICY=naive): rank 1
skips three calls rank 0 makes on groups with a 4-second timeout. Rank 0's compressed call
(a 1 MiB allreduce, run by hycc on its lane) and its uncompressed one (1 KiB, below the
threshold: gloo's own call) each raise RuntimeError naming the timeout, within the timeout and
a margin, instead of waiting for rank 1; so does a compressed call on a group made with a
10-minute timeout and given 4 seconds afterwards (dist.set_timeout, as torchtitan sets it), with
no warning that the backend ignored it. Rank 0 prints "hycc torch timeout: OK" when all did.
"""
import os
import sys
import time
import warnings
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
later_group = dist.new_group(backend="hycc", timeout=timedelta(minutes=10))
failures = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist.set_timeout(timedelta(seconds=TIMEOUT), later_group)
for w in caught:
    failures.append(f"dist.set_timeout warned: {w.message}")
told = later_group._get_backend(torch.device("cpu")).options._timeout
if told != timedelta(seconds=TIMEOUT):
    failures.append(f"after dist.set_timeout the group's options say {told}")


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
    times_out("compressed allreduce, timeout set later", torch.randn(1 << 18), later_group)
    print("hycc torch timeout: OK" if not failures else
          "hycc torch timeout: FAILED: " + "; ".join(failures), flush=True)
    dist.distributed_c10d._get_default_store().set("hycc-timeout-test-done", "1")
else:
    # Until rank 0's three calls have timed out (it says so through the store), not longer.
    dist.distributed_c10d._get_default_store().wait(["hycc-timeout-test-done"],
                                                     timedelta(seconds=3 * TIMEOUT + 60))
sys.exit(1 if failures else 0)
