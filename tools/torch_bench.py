#!/usr/bin/env python3
"""The PyTorch benchmark: a GPT-style model written with PyTorch's own parallel APIs trained on
the emulated cluster (tools/netemu) under each backend configuration in turn, and one table:
tokens per second, the speedup over gloo, the final loss and the bytes each parallel dimension
put on the wire. Needs root (netemu) and the project's Python environment.

    tools/torch_bench.py                       # FSDP2 x TP, 4 hosts x 2 ranks, 200 Mbit/s
    tools/torch_bench.py --parallel pp_fsdp    # 2 pipeline stages (GPipe) of FSDP2 x 4
    tools/torch_bench.py --parallel ddp --configs gloo,fp16,bf16,powersgd,hybrid

Configurations: gloo (PyTorch's own backend), baseline, naive, hybrid, auto or a policy TOML
file (the hycc backend under that policy: docs/torch.md, docs/policy.md) and, for --parallel
ddp, gloo with PyTorch's DDP communication hooks fp16, bf16 and powersgd (rank 4), what a PyTorch user would pick today.
With --parallel ddp a hycc configuration ending in +shapes (hybrid+shapes, FILE.toml+shapes)
registers hycc.torch.register_ddp, which gives hycc the shapes of each bucket's tensors (a
PowerSGD rule then compresses each matrix, as the powersgd hook does).
FSDP2 shards over the hosts; tensor parallelism runs within a host (its ranks talk over shared
memory, as the GPUs of a node do over NVLink). pp_fsdp: torch.distributed.pipelining's GPipe
schedule over 2 stages (the first half of the hosts, the second half), each stage FSDP2-sharded
over its ranks; the activations between the stages are the pp dimension. Each configuration is
a run of its own (a hycc policy is one per process). A configuration may name its own link rate
after an @: with gloo@10gbit beside gloo, the table says what share of gloo's step its links
take (1 - the ratio of their tokens/s), the condition under which compression can pay. Writes
DIR/results.json, DIR/README.md and, with gnuplot, DIR/tokens_per_s.png.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
PEERS = ("fp16", "bf16", "powersgd")
POLICIES = ("baseline", "naive", "hybrid", "auto")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parallel", choices=("fsdp_tp", "pp_fsdp", "ddp"), default="fsdp_tp")
    p.add_argument("--configs", default="gloo,baseline,naive,hybrid,auto",
                   help="comma list of gloo, baseline, naive, hybrid, auto, a policy TOML file "
                        "(a hycc one ending in +shapes: hycc.torch.register_ddp, ddp) "
                        "(the hycc backend under it) and (ddp) fp16, bf16, powersgd; default "
                        "%(default)s")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--ranks-per-host", type=int, default=2)
    p.add_argument("--rate", default="200mbit", help="each host's link (tc syntax)")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1,
                   help="runs of every configuration, in rounds (each round runs them all in "
                        "turn); the table gives medians and, from 2 rounds, the range of the "
                        "per-round speedups (default %(default)s)")
    p.add_argument("--python", default=os.path.expanduser(
        os.environ.get("HYCC_VENV", "~/.cache/hycc/venv") + "/bin/python"))
    p.add_argument("--out", default="torch-bench", help="output directory (default %(default)s)")
    p.add_argument("model", nargs="*", help="extra arguments for tools/torch_train_bench.py "
                                            "after --, e.g. -- --hidden 512 --layers 4")
    a = p.parse_args()
    a.configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    for config in a.configs:
        c, rate = split_rate(config)
        c, shapes = split_shapes(c)
        if shapes and (a.parallel != "ddp" or not is_policy(c)):
            p.error(f"--configs: '{config}': {SHAPES} is for hycc configurations of --parallel ddp")
        if "@" in config and not rate:
            p.error(f"--configs: '{config}' names no rate after its @")
        if c.endswith(".toml"):
            if not os.path.isfile(c):
                p.error(f"--configs: no policy file '{c}'")
        elif c not in ("gloo",) + POLICIES + PEERS:
            p.error(f"--configs: unknown configuration '{c}'")
        if c in PEERS and a.parallel != "ddp":
            p.error(f"--configs: '{c}' is a DDP communication hook: use --parallel ddp")
    if "gloo" not in a.configs:
        a.configs.insert(0, "gloo")  # the reference of every ratio
    if a.rounds < 1:
        p.error("--rounds: at least 1")
    return a


def is_policy(config):
    """Whether `config` runs the hycc backend: a preset or a policy file."""
    return config in POLICIES or config.endswith(".toml")


def split_rate(config):
    """(the configuration without its @RATE, that rate or "" where it names none)."""
    c, _, rate = config.partition("@")
    return c, rate


SHAPES = "+shapes"  # a hycc configuration whose DDP buckets' shapes hycc learns (register_ddp)


def split_shapes(config):
    """(the configuration without its +shapes, whether it had it)."""
    return (config[:-len(SHAPES)], True) if config.endswith(SHAPES) else (config, False)


def command(a, config):
    config, rate = split_rate(config)
    config, shapes = split_shapes(config)
    rate = rate or a.rate
    backend = "hycc" if is_policy(config) else "gloo"
    cmd = [str(ROOT / "tools" / "netemu"), "run", "-q", "--hosts", str(a.hosts),
           "--ranks-per-host", str(a.ranks_per_host), "--rate", rate]
    if backend == "hycc":
        policy = os.path.abspath(config) if config.endswith(".toml") else config
        cmd += ["--env", f"HYCC_POLICY={policy}"]
        if os.environ.get("HYCC_TORCH_EXTENSION"):
            cmd += ["--env", "HYCC_TORCH_EXTENSION"]
    cmd += ["--", a.python, str(ROOT / "tools" / "torch_train_bench.py"), "--backend", backend,
            "--parallel", a.parallel, "--steps", str(a.steps), "--warmup", str(a.warmup)]
    if config in PEERS:
        cmd += ["--hook", config]
    if shapes:
        cmd += ["--hook", "hycc_shapes"]
    return cmd + a.model


def run(a, config, i, n):
    cmd = command(a, config)
    print(f"[{i}/{n}] {config}: {' '.join(cmd)}", flush=True)
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            r["config"] = config
            print(f"    {r['tokens_per_s']:.0f} tokens/s, {time.time() - start:.0f} s", flush=True)
            return r
    sys.exit(f"torch_bench: {config} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
             f"{done.stderr[-3000:]}")


def label(r):
    config, rate = split_rate(r["config"])
    config, shapes = split_shapes(config)
    at = (", DDP buckets' shapes" if shapes else "") + (f", {rate} links" if rate else "")
    if config == "gloo":
        return "gloo" + at
    if config in PEERS:
        return f"gloo + DDP {config} hook{at}"
    if config.endswith(".toml"):
        return f"hycc {pathlib.Path(config).stem} (policy file){at}"
    return f"hycc {config}{at}"


def link_shares(rows):
    """What share of gloo's step its links take, per gloo@RATE row: 1 - gloo's tokens/s over
    theirs (the time a faster link saves, over the whole step)."""
    gloo = next(r for r in rows if r["config"] == "gloo")["tokens_per_s"]
    shares = []
    for r in rows:
        config, rate = split_rate(r["config"])
        if config == "gloo" and rate:
            shares.append(f"the {rate} links' gloo runs at {r['tokens_per_s']:.0f} tokens/s: the "
                          f"links take {100 * (1 - gloo / r['tokens_per_s']):.0f}% of gloo's step")
    return shares


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def summarize(runs):
    """One row per configuration, in the order they ran: the median tokens/s over the rounds,
    the per-round speedups over that round's gloo, the first round's losses and bytes (the same
    in every round: the runs are deterministic but for their timing)."""
    gloo = {r["round"]: r["tokens_per_s"] for r in runs if r["config"] == "gloo"}
    rows = {}
    for r in runs:
        row = rows.setdefault(r["config"], {**r, "speedups": [], "all_tokens_per_s": []})
        row["all_tokens_per_s"].append(r["tokens_per_s"])
        row["speedups"].append(r["tokens_per_s"] / gloo[r["round"]])
    for row in rows.values():
        row["tokens_per_s"] = median(row["all_tokens_per_s"])
    return list(rows.values())


def table(rows):
    dims = sorted({d for r in rows for d in r.get("bytes", {})})
    spread = len(rows[0]["speedups"]) > 1
    head = (["configuration", "tokens/s", "x gloo"] + (["x gloo, range"] if spread else []) +
            ["final loss"] + [f"{d} MB (ratio)" for d in dims])
    out = [head, ["---"] * len(head)]
    for r in rows:
        final = sum(r["losses"][-3:]) / len(r["losses"][-3:])
        row = [label(r), f"{r['tokens_per_s']:.0f}", f"{median(r['speedups']):.2f}"]
        if spread:
            row.append(f"{min(r['speedups']):.2f}-{max(r['speedups']):.2f}")
        row.append(f"{final:.4f}")
        for d in dims:
            raw, wire = r.get("bytes", {}).get(d, [0, 0])
            row.append(f"{wire / 1e6:.1f} ({raw / wire:.2f}x)" if wire else "-")
        out.append(row)
    return "\n".join("| " + " | ".join(row) + " |" for row in out)


def plot(results, out):
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed: no plot"
    data = out / "tokens_per_s.dat"
    data.write_text("".join(f'"{label(r)}" {r["tokens_per_s"]:.1f} '
                            f'{min(r["all_tokens_per_s"]):.1f} {max(r["all_tokens_per_s"]):.1f}\n'
                            for r in results))
    # Bars: the median over the rounds; whiskers (2 rounds or more): the slowest and fastest.
    whiskers = f', "{data}" using 0:2:3:4 with yerrorbars lc "black"' if len(
        results[0]["all_tokens_per_s"]) > 1 else ""
    # noenhanced: a label's underscores are text, not gnuplot's subscripts.
    script = (f'set terminal pngcairo noenhanced size 900,420\n'
              f'set output "{out / "tokens_per_s.png"}"\n'
              'set style fill solid 0.6\nset boxwidth 0.6\nset ylabel "tokens/s"\n'
              'set xtics rotate by -20\nset grid y\nunset key\nset yrange [0:*]\n'
              f'plot "{data}" using 0:2:xtic(1) with boxes{whiskers}\n')
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    data.unlink()
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()


def main():
    a = parse_args()
    if os.geteuid() != 0:
        sys.exit("torch_bench: tools/netemu needs root")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = len(a.configs) * a.rounds
    print(f"torch_bench: {n} runs of {a.warmup + a.steps} steps ({a.rounds} rounds of "
          f"{len(a.configs)}), {a.parallel}, {a.hosts} hosts x {a.ranks_per_host} ranks at "
          f"{a.rate}; about a minute each", flush=True)
    runs = []
    for k in range(a.rounds):
        for c in a.configs:
            runs.append({**run(a, c, len(runs) + 1, n), "round": k + 1})
    (out / "results.json").write_text(json.dumps(runs, indent=1) + "\n")
    results = summarize(runs)
    first = results[0]
    text = (f"# PyTorch training on the emulated cluster\n\n{a.parallel}, {a.hosts} hosts x "
            f"{a.ranks_per_host} ranks, {a.rate} per host link, {first['params']} parameters, "
            f"median of {a.steps} steps after {a.warmup}"
            f"{f', median of {a.rounds} rounds' if a.rounds > 1 else ''}; command: "
            f"`{' '.join(['tools/torch_bench.py'] + sys.argv[1:])}`\n\n{table(results)}\n")
    shares = link_shares(results)
    text += "".join(f"\n{s[0].upper()}{s[1:]}.\n" for s in shares)
    problem = plot(results, out)
    text += f"\n{problem}\n" if problem else "\n![tokens/s](tokens_per_s.png)\n"
    (out / "README.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
