"""The presets' throughput for tools/study: per seed, tools/experiment trains the baseline and
every preset for a few steps on the emulated cluster (tools/netemu, 4 nodes of 2 ranks, as
`make demo` does) in interleaved rounds, so that the machine's load hits every policy alike. A
seed's speedups are its presets' tokens/s over its baseline's, measured in the same invocation.
Resumable: a seed whose summary.json holds every policy at the asked steps is kept."""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def available():
    """The emulated cluster needs root and network namespaces; None when it can run here, else
    the reason why not."""
    r = subprocess.run([os.path.join(ROOT, "tools", "netemu"), "check"], capture_output=True,
                       text=True)
    if r.returncode == 0:
        return None
    return (r.stdout + r.stderr).strip().splitlines()[-1] if (r.stdout + r.stderr).strip() \
        else "tools/netemu check failed"


def seed_dir(args, seed):
    return os.path.join(args.out, "throughput", f"s{seed}")


def summary_of(args, seed):
    """The seed's experiment summary when it is complete for args, else None."""
    path = os.path.join(seed_dir(args, seed), "summary.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        summary = json.load(f)
    runs = {r["policy"]: r for r in summary.get("runs", [])}
    want = ["baseline"] + args.policies
    if not summary.get("network", "").startswith("tools/netemu") or any(
            p not in runs or runs[p]["steps"] != args.throughput_steps for p in want):
        return None
    return summary


def seeds_to_run(args):
    if args.throughput_steps == 0 or not args.policies:
        return []
    return [s for s in args.seeds if summary_of(args, s) is None]


def rounds(args):
    """tools/experiment's rounds of each seed's throughput runs: 3, or one a step below that."""
    return min(3, args.throughput_steps)


def expected_seconds(args):
    """A first estimate: process starts (3 rounds of the policies and 2 calibration runs) and
    about a second a step at 150 Mbit/s."""
    policies = len(args.policies) + 1
    r = rounds(args)
    calibration = args.calibration_steps or (10 * r if r > 2 else 20)  # tools/experiment's default
    return r * (policies + 2) * 8 + policies * args.throughput_steps * 1.1 + 2 * calibration * 0.7


def run(args, model_flags, fmt_minutes):
    """Runs what is missing; returns the reason when the phase cannot run, else None."""
    if args.throughput_steps == 0 or not args.policies:
        return "not measured (--throughput-steps 0)" if args.throughput_steps == 0 else None
    problem = available()
    if problem is not None:
        return f"not measured: the emulated cluster cannot run here ({problem}; it needs root)"
    todo = seeds_to_run(args)
    per_seed = expected_seconds(args)
    started = time.monotonic()
    for k, seed in enumerate(todo):
        if k > 0:
            per_seed = (time.monotonic() - started) / k
        print(f"study: [throughput {k + 1}/{len(todo)}] seed {seed} (about "
              f"{fmt_minutes(per_seed * (len(todo) - k))} left)", flush=True)
        out = seed_dir(args, seed)
        os.makedirs(out, exist_ok=True)
        cmd = [os.path.join(ROOT, "tools", "experiment"), "--out", out, "--steps",
               str(args.throughput_steps), "--rounds", str(rounds(args)),
               "--policies", ",".join(["baseline"] + args.policies), "--build", args.build]
        if args.calibration_steps is not None:
            cmd += ["--calibration-steps", str(args.calibration_steps)]
        cmd += ["--"] + model_flags + ["--seed", str(seed)] + args.extra
        with open(os.path.join(args.out, "commands.txt"), "a") as commands:
            commands.write(" ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                    for c in cmd) + "\n")
        log_path = os.path.join(out, "experiment.log")
        with open(log_path, "w") as log:
            result = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
        if result.returncode != 0 or summary_of(args, seed) is None:
            sys.exit(f"study: the throughput runs of seed {seed} failed (exit "
                     f"{result.returncode}); see {log_path}")
    return None


def collect(args):
    """{policy: [(seed, tokens/s, speedup over the seed's baseline)]} of the complete seeds,
    and the network they ran on."""
    out, network = {}, None
    for seed in args.seeds:
        summary = summary_of(args, seed)
        if summary is None:
            continue
        network = summary["network"]
        runs = {r["policy"]: r for r in summary["runs"]}
        base = runs["baseline"]["tokens_per_s"]
        for policy in ["baseline"] + args.policies:
            tps = runs[policy]["tokens_per_s"]
            out.setdefault(policy, []).append((seed, tps, tps / base))
    return out, network
