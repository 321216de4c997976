"""The report of tools/study: the loss gap of every (dimension, codec) cell to the baseline of the
same seed, with a 95% confidence interval over the seeds (Student's t), the baseline's seed
spread, DIR/README.md, DIR/summary.json and, with gnuplot, the heat map DIR/sensitivity.png.
Standard library only.
"""
import json
import math
import os
import shutil
import statistics
import subprocess

from bytes_chart import write_bytes_chart

# Two-sided 95% quantiles of Student's t by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(dof):
    known = [d for d in sorted(T95) if d <= dof]
    return T95[known[-1]] if known else float("inf")


def interval(gaps):
    """Mean and half-width of the 95% interval of the mean; half-width None below 2 values."""
    mean = statistics.mean(gaps)
    if len(gaps) < 2:
        return mean, None
    return mean, t95(len(gaps) - 1) * statistics.stdev(gaps) / math.sqrt(len(gaps))


def cells(args, losses, ratios, zero_dims, applies):
    out = []
    for dim in args.dims:
        group = "zero1" if dim in zero_dims else "zero0"
        for codec in args.codecs:
            if not applies(dim, codec):
                continue
            gaps = []
            for seed in args.seeds:
                base = losses.get((group, None, seed))
                loss = losses.get((dim, codec, seed))
                if base is not None and loss is not None:
                    gaps.append(100.0 * (loss - base) / base)
            cell = {"dimension": dim, "codec": codec, "seeds": len(gaps), "gaps_percent": gaps}
            if (dim, codec) in ratios:
                cell["ratio"] = statistics.mean(ratios[(dim, codec)])
            if gaps:
                mean, half = interval(gaps)
                cell.update(mean_percent=mean, ci95_percent=half)
            out.append(cell)
    return out


def policy_cells(args, losses):
    out = []
    for policy in args.policies:
        gaps = []
        for seed in args.seeds:
            base = losses.get(("zero0", None, seed))
            loss = losses.get(("policy", policy, seed))
            if base is not None and loss is not None:
                gaps.append(100.0 * (loss - base) / base)
        cell = {"policy": policy, "seeds": len(gaps), "gaps_percent": gaps,
                "losses": [losses.get(("policy", policy, s)) for s in args.seeds]}
        if gaps:
            mean, half = interval(gaps)
            cell.update(mean_percent=mean, ci95_percent=half)
        out.append(cell)
    return out


def loss_curves(out_dir, args, curves):
    """Training loss per step (moving average of 10 steps): mean over seeds with a min-max band."""
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed (Debian: gnuplot-nox): no loss_curves.png"
    names = ["baseline"] + args.policies
    plots = []
    for i, name in enumerate(names):
        series = [curves[(name, s)] for s in args.seeds if (name, s) in curves]
        if not series:
            continue
        steps = min(len(c) for c in series)
        smooth = [[statistics.mean(c[max(0, k - 9):k + 1]) for k in range(steps)] for c in series]
        dat = os.path.join(out_dir, f"curve-{name}.dat")
        with open(dat, "w") as f:
            for k in range(steps):
                values = [c[k] for c in smooth]
                f.write(f"{k + 1} {statistics.mean(values)} {min(values)} {max(values)}\n")
        plots.append(f'"{dat}" using 1:3:4 with filledcurves fs transparent solid 0.2 '
                     f'lc {i + 1} notitle, "{dat}" using 1:2 with lines lw 2 lc {i + 1} '
                     f'title "{name} ({len(series)} seeds)"')
    if not plots:
        return "no complete runs to plot"
    first = 20 if args.steps > 40 else 1  # the first steps' fall would flatten the rest
    script = f"""
set terminal pngcairo size 900,520 font ",10"
set output "{os.path.join(out_dir, 'loss_curves.png')}"
set title "Training loss from step {first} (10-step moving average): mean over seeds, band = min..max" noenhanced
set xlabel "step"
set xrange [{first}:*]
set ylabel "loss"
set key top right noenhanced
set yrange [*:*]
plot {", ".join(plots)}
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()


def spreads(args, losses):
    out = {}
    for group in ("zero0", "zero1"):
        values = [losses[(group, None, s)] for s in args.seeds if (group, None, s) in losses]
        if len(values) >= 2:
            mean = statistics.mean(values)
            out[group] = {"losses": values, "mean": mean,
                          "range_percent": 100.0 * (max(values) - min(values)) / mean,
                          "sd_percent": 100.0 * statistics.stdev(values) / mean}
    return out


def verdict(cell):
    if "mean_percent" not in cell:
        return "not run"
    half = cell["ci95_percent"]
    if half is None:
        return "one seed"
    lo, hi = cell["mean_percent"] - half, cell["mean_percent"] + half
    if lo > 0:
        return "**hurts**"
    if hi < 0:
        return "helps"
    return "no effect resolved"


def cell_text(cell):
    if "mean_percent" not in cell:
        return "-"
    half = cell["ci95_percent"]
    ci = f" ± {half:.2f}" if half is not None else ""
    return f"{cell['mean_percent']:+.2f}{ci}"


def heat_map(out_dir, args, table, applies):
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed (Debian: gnuplot-nox): no sensitivity.png"
    dat = os.path.join(out_dir, "sensitivity.dat")
    by_key = {(c["dimension"], c["codec"]): c for c in table}
    with open(dat, "w") as f:
        for y, dim in enumerate(args.dims):
            for x, codec in enumerate(args.codecs):
                c = by_key.get((dim, codec))
                if c and "mean_percent" in c:
                    f.write(f'{x} {y} {c["mean_percent"]} "{c["mean_percent"]:+.2f}"\n')
                else:
                    f.write(f'{x} {y} NaN "{"n/a" if c is None else "not run"}"\n')
            f.write("\n")
    span = max([1.0] + [abs(c["mean_percent"]) for c in table if "mean_percent" in c])
    xtics = ", ".join(f'"{c}" {i}' for i, c in enumerate(args.codecs))
    ytics = ", ".join(f'"{d}" {i}' for i, d in enumerate(args.dims))
    script = f"""
set terminal pngcairo size 1100,520 font ",10"
set output "{os.path.join(out_dir, 'sensitivity.png')}"
set title "Validation-loss gap to the uncompressed run of the same seed (%), one dimension compressed"
set xtics ({xtics}) rotate by 20 right noenhanced
set ytics ({ytics}) noenhanced
set xrange [-0.5:{len(args.codecs) - 0.5}]
set yrange [{len(args.dims) - 0.5}:-0.5]
set cblabel "mean gap over {len(args.seeds)} seeds (%)"
set palette defined (-1 "#2166ac", 0 "#f7f7f7", 1 "#b2182b")
set cbrange [-{span}:{span}]
unset key
set style fill solid 1.0 noborder
plot "{dat}" using 1:2:(0.5):(0.5):($3 == $3 ? $3 : 1/0) with boxxyerror lc palette, \\
     "{dat}" using 1:2:4 with labels noenhanced
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        return "gnuplot failed: " + r.stderr.strip()
    return None


def mean_wire(wire):
    """{policy: [{dimension: MB per step} per seed]} -> {policy: {dimension: mean MB per step}}."""
    return {policy: {d: statistics.mean(s.get(d, 0.0) for s in seeds)
                     for d in {d for s in seeds for d in s}}
            for policy, seeds in wire.items()}


def speedup_cells(args, throughput):
    """{policy: {seeds, tokens_per_s, speedups, mean, ci95}} from study_throughput.collect."""
    out = {}
    for policy, per_seed in throughput.items():
        speedups = [x for _, _, x in per_seed]
        mean, half = interval(speedups)
        out[policy] = {"seeds": [s for s, _, _ in per_seed],
                       "tokens_per_s": [t for _, t, _ in per_seed], "speedups": speedups,
                       "mean": mean, "ci95": half}
    return out


def claim_text(policies):
    """The plain statement of naive against hybrid, from their verdicts, whichever way they go."""
    by_name = {c["policy"]: c for c in policies}
    naive, hybrid = by_name.get("naive"), by_name.get("hybrid")
    if not naive or not hybrid or "mean_percent" not in naive or "mean_percent" not in hybrid \
            or naive["ci95_percent"] is None or hybrid["ci95_percent"] is None:
        return None

    def where(c):
        lo = c["mean_percent"] - c["ci95_percent"]
        hi = c["mean_percent"] + c["ci95_percent"]
        if lo > 0:
            return f"lies above zero ({cell_text(c)}%): it hurts the loss"
        if hi < 0:
            return f"lies below zero ({cell_text(c)}%): it lowers the loss"
        return f"contains zero ({cell_text(c)}%): no effect on the loss is resolved"

    holds = where(naive).endswith("hurts the loss") and not where(hybrid).endswith(
        "hurts the loss")
    return (f"**Naive against hybrid.** Naive's interval {where(naive)}; hybrid's interval "
            f"{where(hybrid)}. " +
            ("The claim holds here: one lossy setting everywhere hurts, the hybrid policy does "
             "not." if holds else
             "These runs do not show the claim (naive hurts, hybrid does not)."))


def throughput_lines(args, throughput, problem, policies):
    per_policy, network = throughput
    if not per_policy:
        return ["", f"Throughput: {problem or 'not measured'}."]
    cells = speedup_cells(args, per_policy)
    lines = ["", f"Throughput on {network}, {args.throughput_steps} steps per policy and seed "
             "(tools/experiment, policies interleaved in rounds; median tokens/s after the "
             "first tenth of the steps; speedup over the baseline of the same invocation, mean "
             "± 95% interval over the seeds):", "",
             "| policy | tokens/s per seed | speedup | loss gap (%) |", "|---|---|---|---|"]
    gaps = {c["policy"]: c for c in policies}
    for policy, c in cells.items():
        tps = ", ".join(f"{t:.0f}" for t in c["tokens_per_s"])
        half = f" ± {c['ci95']:.2f}" if c["ci95"] is not None else ""
        gap = "0 (the reference)" if policy == "baseline" else \
            cell_text(gaps[policy]) if policy in gaps else "-"
        lines.append(f"| {policy} | {tps} | {c['mean']:.2f}x{half} | {gap} |")
    return lines


def write(args, losses, ratios, curves, wire, throughput, throughput_problem, zero_dims,
          applies):
    table = cells(args, losses, ratios, zero_dims, applies)
    policies = policy_cells(args, losses)
    spread = spreads(args, losses)
    problem = heat_map(args.out, args, table, applies)
    curve_problem = loss_curves(args.out, args, curves) if args.policies else None
    wire_mb = mean_wire(wire)
    bytes_problem = write_bytes_chart(
        os.path.join(args.out, "bytes.png"), wire_mb,
        "Bytes sent per step by each parallel dimension, mean over seeds") \
        if args.policies else None
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"steps": args.steps, "seeds": args.seeds, "baseline": spread,
                   "cells": table, "policies": policies, "wire_mb_per_step": wire_mb,
                   "throughput": {"network": throughput[1],
                                  "steps": args.throughput_steps,
                                  "policies": speedup_cells(args, throughput[0])}}, f,
                  indent=1)
    lines = ["# Sensitivity of each parallel dimension to compression", "",
             "The experiment's GPT (4 layers, hidden 256, bf16) trained for "
             f"{args.steps} steps on 8 ranks (DP2 x TP2 x PP2, shared memory), with one dimension's "
             "traffic compressed and everything else sent as it is. Each cell: the final "
             "validation loss (512 windows) minus that of the uncompressed run with the same "
             "seed, in percent of it, as mean ± the half-width of its 95% confidence interval "
             f"over the seeds {', '.join(str(s) for s in args.seeds)} (Student's t). Negative is "
             "better. Produced by `tools/study` (`make study`; docs/study.md):", "",
             f"    {args.invocation}", ""]
    for group, s in spread.items():
        label = "ZeRO 0 (dp, tp, pp, embedding)" if group == "zero0" else \
            "ZeRO 1 (zero_grad, zero_param)"
        losses_text = ", ".join(f"{v:.4f}" for v in s["losses"])
        lines.append(f"Baseline, {label}: {losses_text}; seeds span {s['range_percent']:.2f}% "
                     f"(sd {s['sd_percent']:.2f}%).")
    lines += ["", "| dimension | " + " | ".join(f"`{c}`" for c in args.codecs) + " |",
              "|---|" + "---|" * len(args.codecs)]
    by_key = {(c["dimension"], c["codec"]): c for c in table}
    for dim in args.dims:
        row = [cell_text(by_key[(dim, c)]) if (dim, c) in by_key else "n/a"
               for c in args.codecs]
        lines.append(f"| {dim} | " + " | ".join(row) + " |")
    lines += ["", "Per cell, whether its interval lies above 0 (hurts), below (helps) or "
              "contains it:", "",
              "| dimension | codec | ratio on it | seeds | gaps (%) | verdict |",
              "|---|---|---|---|---|---|"]
    for c in table:
        gaps = ", ".join(f"{g:+.2f}" for g in c["gaps_percent"]) or "-"
        ratio = f"{c['ratio']:.2f}" if "ratio" in c else "-"
        lines.append(f"| {c['dimension']} | `{c['codec']}` | {ratio} | {c['seeds']} | {gaps} | "
                     f"{verdict(c)} |")
    lines += [""]
    if problem:
        lines.append(f"({problem})")
    else:
        lines.append("![heat map](sensitivity.png)")
    if policies:
        lines += ["", "## Whole presets against the baseline", "",
                  "Every dimension compressed as the preset says (docs/policy.md), same runs "
                  "otherwise; gap to the baseline of the same seed.", "",
                  "| preset | final validation losses | gaps (%) | mean ± 95% CI (%) | verdict |",
                  "|---|---|---|---|---|"]
        for c in policies:
            loss_text = ", ".join("-" if v is None else f"{v:.4f}" for v in c["losses"])
            gaps = ", ".join(f"{g:+.2f}" for g in c["gaps_percent"]) or "-"
            lines.append(f"| {c['policy']} | {loss_text} | {gaps} | {cell_text(c)} | "
                         f"{verdict(c)} |")
        claim = claim_text(policies)
        if claim:
            lines += ["", claim]
        lines += throughput_lines(args, throughput, throughput_problem, policies)
        lines.append("")
        lines.append(f"({curve_problem})" if curve_problem else "![loss curves](loss_curves.png)")
        lines += ["", "Bytes each dimension sent per step (all ranks, mean over the seeds; "
                  "`wire_mb_per_step` in summary.json):", ""]
        lines.append(f"({bytes_problem})" if bytes_problem else
                     "![bytes per dimension](bytes.png)")
    lines += ["", "Commands: `commands.txt` (every run, in the order they ran); policies: "
              "`policies/`.", ""]
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("\n".join(lines))
