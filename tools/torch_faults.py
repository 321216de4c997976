#!/usr/bin/env python3
"""What a rank's death does to the others: runs of a small DDP or FSDP2 model on the backend
named, in each of which one rank, chosen at random, kills itself (SIGKILL) at a random step in
the middle of its backward pass (its gradients' reductions in flight). Every other rank must
raise within the group's timeout and a margin, never hang, and exit without aborting
("terminate called without an active exception"). Prints one line per run and a table per
configuration; --json writes the runs.

    tools/torch_faults.py --backend hycc,gloo --model ddp,fsdp2 --runs 20 --policy hybrid

A survivor raises, prints the time, and exits at once (sys.exit), as a program without a
handler for the failure would; --destroy makes it call dist.destroy_process_group() first, which
is how a program avoids gloo's abort at exit (docs/torch.md, "Faults"). Runs on this machine's
loopback, the ranks as torchrun would start them (RANK, WORLD_SIZE, MASTER_ADDR/PORT).
"""
import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MARGIN_S = 5.0  # a survivor must raise within the group's timeout and this
HANG_S = 60.0  # after the timeout and the margin, a survivor still running has hung


def worker(args):
    """One rank: trains until it is the victim (it kills itself in the backward of its step) or
    a collective raises (it prints RAISED and the time, then exits 1)."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch import nn

    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    if args.backend == "hycc":
        import hycc.torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    victim, victim_step = int(os.environ["FAULT_VICTIM"]), int(os.environ["FAULT_STEP"])
    torch.manual_seed(0)
    layers = [nn.Linear(256, 256) for _ in range(6)]
    model = nn.Sequential(*[m for layer in layers for m in (layer, nn.Tanh())])
    if args.model == "ddp":
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.25)
    else:
        from torch.distributed.fsdp import fully_shard
        for layer in layers:
            fully_shard(layer)
        fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0

    def die(grad):
        if rank == victim and step == victim_step:
            print(f"KILLED {time.time():.6f}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return grad

    # In the backward pass, halfway through the layers (the later layers' gradients in flight).
    def arm(module, inputs, output):
        if output.requires_grad:
            output.register_hook(die)

    layers[len(layers) // 2].register_forward_hook(arm)
    g = torch.Generator().manual_seed(rank)
    try:
        for step in range(args.steps):
            x = torch.randn(64, 256, generator=g)
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    except Exception as e:  # noqa: BLE001
        print(f"RAISED {time.time():.6f} {type(e).__name__}: {str(e)[:120]}", flush=True)
        if args.destroy:
            dist.destroy_process_group()
        sys.exit(1)
    print("FINISHED", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(args, backend, model, rng):
    """Launches the ranks of one run; returns its record."""
    victim, step = rng.randrange(args.ranks), rng.randrange(2, args.steps - 2)
    port = free_port()
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--backend", backend,
               "--model", model, "--timeout", str(args.timeout), "--steps", str(args.steps)]
    if args.destroy:
        command.append("--destroy")
    procs = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.ranks),
                   LOCAL_WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", FAULT_VICTIM=str(victim),
                   FAULT_STEP=str(step), HYCC_POLICY=args.policy)
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    deadline = None
    outputs = [None] * args.ranks
    hung = []
    start = time.monotonic()
    while any(o is None for o in outputs):
        for rank, p in enumerate(procs):
            if outputs[rank] is None and p.poll() is not None:
                outputs[rank] = p.communicate()
        if deadline is None and procs[victim].poll() is not None:
            deadline = time.monotonic() + args.timeout + MARGIN_S + HANG_S
        late = deadline is not None and time.monotonic() > deadline
        if late or time.monotonic() - start > 600:
            for rank, p in enumerate(procs):
                if outputs[rank] is None:
                    hung.append(rank)
                    p.kill()
                    outputs[rank] = p.communicate()
        time.sleep(0.02)
    killed_at = next((float(line.split()[1]) for line in outputs[victim][0].splitlines()
                      if line.startswith("KILLED")), None)
    survivors = []
    for rank, (p, (out, err)) in enumerate(zip(procs, outputs)):
        if rank == victim:
            continue
        raised = next((line for line in out.splitlines() if line.startswith("RAISED")), None)
        after = (float(raised.split()[1]) - killed_at) if raised and killed_at else None
        survivors.append({
            "rank": rank, "returncode": p.returncode, "hung": rank in hung,
            "raised_after_s": after, "error": raised.split(" ", 2)[2] if raised else None,
            "aborted": "terminate called" in err or p.returncode == -signal.SIGABRT,
            "stderr_tail": err[-400:] if p.returncode not in (0, 1) else ""})
    return {"backend": backend, "model": model, "policy": args.policy if backend == "hycc" else "",
            "victim": victim, "step": step, "killed": killed_at is not None,
            "survivors": survivors}


def verdict(run, timeout):
    """Whether every survivor raised within the timeout and the margin, without hang or abort."""
    return run["killed"] and all(
        not s["hung"] and not s["aborted"] and s["raised_after_s"] is not None
        and s["raised_after_s"] <= timeout + MARGIN_S for s in run["survivors"])


def table(runs, timeout):
    rows = ["| backend | model | runs | survivors | raised in time | slowest raise | hangs | "
            "aborts at exit |", "|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["backend"], r["policy"], r["model"]) for r in runs})
    for backend, policy, model in keys:
        mine = [r for r in runs if (r["backend"], r["policy"], r["model"]) ==
                (backend, policy, model)]
        survivors = [s for r in mine for s in r["survivors"]]
        times = [s["raised_after_s"] for s in survivors if s["raised_after_s"] is not None]
        in_time = sum(t <= timeout + MARGIN_S for t in times)
        name = f"{backend} ({policy})" if policy else backend
        slowest = (f"{max(times):.2f} s (median {statistics.median(times):.2f} s)" if times
                   else "-")
        rows.append(f"| {name} | {model} | {len(mine)} | {len(survivors)} | {in_time} | "
                    f"{slowest} | {sum(s['hung'] for s in survivors)} | "
                    f"{sum(s['aborted'] for s in survivors)} |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="hycc,gloo", help="comma-separated: hycc, gloo")
    p.add_argument("--model", default="ddp,fsdp2", help="comma-separated: ddp, fsdp2")
    p.add_argument("--policy", default="hybrid", help="HYCC_POLICY of the hycc runs")
    p.add_argument("--runs", type=int, default=20, help="runs per backend and model")
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--steps", type=int, default=12, help="steps a run would train")
    p.add_argument("--timeout", type=float, default=10.0, help="the groups' timeout, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--destroy", action="store_true",
                   help="survivors call dist.destroy_process_group() before exiting")
    p.add_argument("--json", help="write the runs to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    backends, models = args.backend.split(","), args.model.split(",")
    for name, allowed, given in (("--backend", {"hycc", "gloo"}, backends),
                                 ("--model", {"ddp", "fsdp2"}, models)):
        if not set(given) <= allowed:
            p.error(f"{name}: {','.join(sorted(set(given) - allowed))} (expected "
                    f"{', '.join(sorted(allowed))})")
    if args.ranks < 2 or args.steps < 5 or args.runs < 1:
        p.error("at least 2 ranks, 5 steps and 1 run")
    rng = random.Random(args.seed)
    runs, total = [], len(backends) * len(models) * args.runs
    for backend in backends:
        for model in models:
            for i in range(args.runs):
                run = one_run(args, backend, model, rng)
                runs.append(run)
                times = ", ".join(
                    f"rank {s['rank']} " + ("hung" if s["hung"] else
                                            f"{s['raised_after_s']:.2f} s" if
                                            s["raised_after_s"] is not None else "no raise") +
                    (" ABORTED" if s["aborted"] else "") for s in run["survivors"])
                print(f"[{len(runs)}/{total}] {backend} {model}: rank {run['victim']} killed at "
                      f"step {run['step']}: {times}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"timeout_s": args.timeout, "margin_s": MARGIN_S, "runs": runs}, f,
                      indent=1)
    print(table(runs, args.timeout))
    failed = [r for r in runs if not verdict(r, args.timeout)]
    print(f"{len(runs) - len(failed)} of {len(runs)} runs: every survivor raised within "
          f"{args.timeout:g} + {MARGIN_S:g} s, no hang, no abort")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
