"""What the torch backend's per-rank test scripts share (hycc_torch_test.py,
hycc_torch_cuda_test.py): checks that count this rank's failures, a comparison of a result
across the ranks and with a reference, and the verdict of all ranks."""
import sys

import torch
import torch.distributed as dist


class RankChecks:
    def __init__(self, name, gloo):
        """`name` prefixes every message; `gloo`: a gloo group of all ranks (the checks' own
        traffic, independent of the backend under test)."""
        self.name, self.gloo = name, gloo
        self.rank = dist.get_rank()
        self.failures = 0

    def expect(self, cond, what):
        if not cond:
            self.failures += 1
            print(f"{self.name}: rank {self.rank}: FAILED: {what}", file=sys.stderr, flush=True)

    def same_on_every_rank(self, t):
        t = t.cpu()
        first = t.clone()
        dist.broadcast(first, 0, group=self.gloo)
        return bool(torch.equal(first, t))

    @staticmethod
    def relative_error(got, want):
        got, want = got.cpu().double(), want.cpu().double()
        return float((got - want).norm() / max(float(want.norm()), 1e-30))

    def within(self, what, got, want, bound):
        err = self.relative_error(got, want)
        self.expect(err <= bound, f"{what}: relative error {err:.3g} > {bound}")

    def verdict(self, ok_text):
        """Every rank's failures summed: rank 0 prints "NAME: OK_TEXT" or the count; the exit
        status for every rank."""
        total = torch.tensor([self.failures])
        dist.all_reduce(total, group=self.gloo)
        if self.rank == 0:
            print(f"{self.name}: {ok_text}" if int(total) == 0
                  else f"{self.name}: {int(total)} checks FAILED", flush=True)
        return 0 if int(total) == 0 else 1
