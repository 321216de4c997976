"""The report of tools/experiment: reads DIR/NAME.jsonl (hycc-train --json) of each run and writes
DIR/README.md (throughput, losses, compression statistics, commands), DIR/summary.json and, with
gnuplot, DIR/loss.png. Standard library only.

usage: experiment_report.py --out DIR --network TEXT --rate RATE POLICY...
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from bytes_chart import write_bytes_chart


def load_run(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                row = json.loads(line)
                if "step" in row:  # not a line that describes the run
                    rows.append(row)
    if not rows:
        sys.exit(f"experiment_report: {path} has no steps")
    return rows


def steady(rows):
    """Steps after the first tenth (start-up, first allocations) that ran no evaluation."""
    skip = max(1, len(rows) // 10)
    rest = [r for r in rows[skip:] if r.get("val_loss") is None] or rows[skip:] or rows
    return rest


def summarize(name, rows):
    s = steady(rows)
    comm = statistics.mean(r["comm_s"] for r in s)
    compute = statistics.mean(r["compute_s"] for r in s)
    step_s = statistics.median(r["step_s"] for r in s)
    vals = [(r["step"], r["val_loss"]) for r in rows if r.get("val_loss") is not None]
    return {
        "policy": name,
        "steps": rows[-1]["step"],
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in s),
        "step_s": step_s,
        "comm_s": comm,
        "compute_s": compute,
        "final_loss": rows[-1]["loss"],
        "final_val_loss": vals[-1][1] if vals else None,
        "val_losses": vals,
        "compression": total_stats(rows),
    }


def total_stats(rows):
    """The statistics of the whole run. Each hycc-train process counts from zero, so a run resumed
    from a checkpoint (tools/experiment --rounds) restarts its cumulative counts: the last row of
    each process's segment is added up."""
    total, last = {}, None
    for r in rows + [None]:
        stats = r.get("stats") if r else None
        # Within a process every step adds calls; a new process starts again from one step's.
        restarted = bool(stats) and last is not None and all(
            e["calls"] <= last.get(d, {}).get("calls", 0) for d, e in stats.items())
        if last is not None and (r is None or restarted):
            for dim, e in last.items():
                t = total.setdefault(dim, {k: 0 for k in
                                           ("calls", "compressed_calls", "raw_bytes", "wire_bytes")})
                for k in t:
                    t[k] += e[k]
        if stats is not None:
            last = stats
    for t in total.values():
        t["ratio"] = t["raw_bytes"] / t["wire_bytes"] if t["wire_bytes"] else 1.0
    return total or None


def grid_text(grid):
    """'2x2x2' -> 'DP2 x TP2 x PP2 on 8 ranks'."""
    dp, tp, pp = (int(x) for x in grid.split("x"))
    return f"DP{dp} x TP{tp} x PP{pp} on {dp * tp * pp} ranks"


def loss_range(all_rows):
    """The plot's y range: every loss after the first tenth of each run's steps (the first
    steps fall from about 5.5 and would flatten the rest), with a margin."""
    losses = []
    for rows in all_rows:
        for r in rows[len(rows) // 10:]:
            losses += [r["loss"]] + ([r["val_loss"]] if r.get("val_loss") is not None else [])
    if not losses:
        return "*:*"
    low, high = min(losses), max(losses)
    margin = 0.05 * (high - low) + 1e-3
    return f"{low - margin:.3f}:{high + margin:.3f}"


def plot(out, names, grid, yrange):
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed (Debian: gnuplot-nox): no loss.png"
    data = []
    for i, n in enumerate(names, start=1):
        data.append(f"'{out}/{n}.jsonl.dat' using 1:2 with lines lw 1.5 lc {i} title '{n} (train)'")
        data.append(f"'{out}/{n}.jsonl.dat' using 1:3 with linespoints pt 7 ps 1.2 lc {i} "
                    f"title '{n} (validation)'")
    script = f"""set terminal pngcairo size 900,560 font ',11'
set output '{out}/loss.png'
set xlabel 'optimizer step'
set ylabel 'loss (nats per byte)'
set title 'GPT on Austen + KJV text, {grid_text(grid)}'
set grid
set key top right
set datafile missing 'NaN'
set yrange [{yrange}]
plot {', '.join(data)}
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        return "gnuplot failed: " + r.stderr.strip()
    return None


def write_dat(out, name, rows):
    with open(f"{out}/{name}.jsonl.dat", "w") as f:
        for r in rows:
            v = r.get("val_loss")
            f.write(f"{r['step']} {r['loss']} {'NaN' if v is None else v}\n")


def compression_table(runs):
    lines = []
    for run in runs:
        c = run["compression"]
        if not c:
            continue
        lines.append(f"\n**{run['policy']}** (all ranks, whole run)\n")
        lines.append("| dimension | calls | compressed | MB before | MB after | ratio |")
        lines.append("|---|---|---|---|---|---|")
        for dim, e in c.items():
            lines.append(
                f"| {dim} | {e['calls']} | {e['compressed_calls']} | {e['raw_bytes'] / 1e6:.1f} | "
                f"{e['wire_bytes'] / 1e6:.1f} | {e['ratio']:.2f} |")
    return "\n".join(lines) if lines else "\n(no statistics in the JSON lines)\n"


def calibration_step(path):
    """Median step time of a calibration run, None when it was not made."""
    if not os.path.exists(path):
        return None
    return statistics.median(r["step_s"] for r in steady(load_run(path)))


def load_averages(path):
    """[(run, load average)] from tools/experiment's load.txt; [] when absent."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(line.split()[:2]) for line in f if len(line.split()) >= 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--network", required=True)
    ap.add_argument("--rate", required=True)
    ap.add_argument("--grid", default="2x2x2", help="DPxTPxPP")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("policies", nargs="+")
    a = ap.parse_args()
    names = [os.path.basename(p).removesuffix(".toml") for p in a.policies]
    runs, all_rows = [], []
    for n in names:
        rows = load_run(f"{a.out}/{n}.jsonl")
        write_dat(a.out, n, rows)
        runs.append(summarize(n, rows))
        all_rows.append(rows)
    base = next((r for r in runs if r["policy"] == "baseline"), runs[0])
    shm_step = calibration_step(f"{a.out}/calibration-shm.jsonl")
    fast_step = calibration_step(f"{a.out}/calibration-fast.jsonl")
    load = load_averages(f"{a.out}/load.txt")
    for r in runs:
        r["speedup"] = r["tokens_per_s"] / base["tokens_per_s"]
        if r["final_val_loss"] is not None and base["final_val_loss"]:
            r["val_loss_gap"] = r["final_val_loss"] / base["final_val_loss"] - 1.0
    note = plot(a.out, names, a.grid, loss_range(all_rows))
    bytes_note = write_bytes_chart(
        f"{a.out}/bytes.png",
        {r["policy"]: {d: e["wire_bytes"] / 1e6 / r["steps"] for d, e in r["compression"].items()}
         for r in runs if r["compression"]},
        "Bytes sent per step by each parallel dimension")
    with open(f"{a.out}/summary.json", "w") as f:
        json.dump({"network": a.network, "precision": a.precision, "shm_step_s": shm_step,
                   "fast_step_s": fast_step,
                   "runs": runs,
                   "load_average": dict(load)}, f, indent=2)

    md = ["# hycc: the hybrid-compression experiment", ""]
    md.append(f"Network: {a.network}. Model: GPT, 4 layers, hidden 256, 4 heads, sequence 64, "
              f"byte vocabulary; global batch 32 in 2 micro-batches; {grid_text(a.grid)}.")
    md.append("\nPrecision: " + ("bf16 (bf16 weights from fp32 masters, every tensor sent in bf16, "
                                  "as Megatron's bf16 mode; docs/training.md, \"Mixed precision\")"
                                  if a.precision == "bf16" else "fp32") + ".")
    if a.network.startswith("shared"):
        md.append("\nOn shared memory the network is free, so compression cannot speed training "
                  "up here: throughput gains need a bandwidth-limited network (run as root for "
                  "tools/netemu).")
    if fast_step is not None:
        share = 1.0 - fast_step / base["step_s"]
        md.append(f"\nCommunication share of the baseline step: {share * 100:.0f}% "
                  f"(1 - {fast_step:.3f} s with 10 Gbit/s links / {base['step_s']:.3f} s at "
                  f"{a.rate}, median step times of baseline runs on the same emulated cluster: "
                  "the part of the step the limited bandwidth costs).")
        if shm_step is not None:
            md.append(f"On shared memory (all ranks on one node, no TCP) the baseline step "
                      f"takes {shm_step:.3f} s.")
        md.append("")
        if share <= 0:
            md.append("**The calibration with fast links ran slower than the baseline at the "
                      "limited rate: the machine was busy with other work. Rerun on an idle "
                      "machine; the throughput figures below are not comparable.**\n")
    if load:
        md.append("Machine load (1-minute load average before each run, on "
                  f"{os.cpu_count()} cores): " + ", ".join(f"{n} {v}" for n, v in load) + ".\n")
    md.append("The comm columns are the time ranks spent inside hycc calls, waiting for their "
              "peers included (pipeline bubbles, and ranks sharing the machine's cores).\n")
    md.append("![loss curves](loss.png)\n" if note is None else f"({note})\n")
    md.append("| policy | tokens/s | speedup | step s | compute s/step | comm s/step | "
              "final val loss | gap to baseline |")
    md.append("|---|---|---|---|---|---|---|---|")
    for r in runs:
        gap = r.get("val_loss_gap")
        val = "-" if r["final_val_loss"] is None else "%.4f" % r["final_val_loss"]
        gap_text = "-" if gap is None else "%+.2f%%" % (gap * 100)
        md.append(
            f"| {r['policy']} | {r['tokens_per_s']:.0f} | {r['speedup']:.2f}x | {r['step_s']:.3f} | "
            f"{r['compute_s']:.3f} | {r['comm_s']:.3f} | {val} | {gap_text} |")
    md.append("\nTokens/s: median over the steps after the first tenth, without evaluation steps.")
    md.append("\nOne seed: final losses of runs that differ in any way scatter by a few percent "
              "here (the sensitivity study, docs/study.md, measures the gaps over seeds with "
              "their confidence intervals; `make study`).")
    md.append("\n## Compression statistics\n")
    md.append("![bytes per dimension](bytes.png)\n" if bytes_note is None else f"({bytes_note})\n")
    md.append(compression_table(runs))
    with open(f"{a.out}/commands.txt") as f:
        md.append("\n## Commands\n\nIn the order they ran, from the repository's root (paths "
                  "under it relative to it).\n\n```\n" + f.read().strip() + "\n```\n")
    with open(f"{a.out}/README.md", "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
