"""Bytes on the wire per parallel dimension, one bar per policy: the bar chart of the experiment's
and the study's reports (gnuplot). Standard library only."""
import os
import shutil
import subprocess

# The order dimensions appear in; any other name follows in the order first seen.
DIMENSION_ORDER = ["dp", "zero_grad", "zero_param", "embedding", "tp", "pp"]


def dimensions_of(wire):
    seen = []
    for per_dim in wire.values():
        seen += [d for d in per_dim if d not in seen]
    return [d for d in DIMENSION_ORDER if d in seen] + [d for d in seen if d not in
                                                        DIMENSION_ORDER]


def write_bytes_chart(png_path, wire, title):
    """wire: {policy: {dimension: MB}} in the order the bars go. Writes png_path and its .dat
    beside it; returns None, or the reason there is no chart."""
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed (Debian: gnuplot-nox): no " + os.path.basename(png_path)
    dims = dimensions_of(wire)
    if not dims:
        return "no statistics in the runs: no " + os.path.basename(png_path)
    dat = os.path.splitext(png_path)[0] + ".dat"
    policies = list(wire)
    with open(dat, "w") as f:
        f.write("# dimension " + " ".join(policies) + "\n")
        for d in dims:
            f.write(d + " " + " ".join(f"{wire[p].get(d, 0.0):.6g}" for p in policies) + "\n")
    columns = ", ".join(f'"{dat}" using {k + 2}:xtic(1) title "{p}"' if k == 0 else
                        f'"" using {k + 2} title "{p}"' for k, p in enumerate(policies))
    script = f"""
set terminal pngcairo size 900,480 font ",10"
set output "{png_path}"
set title "{title}" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right noenhanced
set ylabel "MB on the wire per step (all ranks)"
set yrange [0:*]
set grid ytics
set xtics noenhanced
plot {columns}
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    return None if r.returncode == 0 else "gnuplot failed: " + r.stderr.strip()
