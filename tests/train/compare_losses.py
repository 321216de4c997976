#!/usr/bin/env python3
"""Compares the JSON lines of two hycc-train runs step by step.

compare_losses.py A.json B.json STEPS TOLERANCE
TOLERANCE is the largest relative difference of loss (and of val_loss where both have one);
0 asks for identical values. Exits 1 on a mismatch, printing every step's losses.
"""
import json
import sys


def main():
    a_path, b_path, steps, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    a = [json.loads(line) for line in open(a_path)]
    b = [json.loads(line) for line in open(b_path)]
    if len(a) != steps or len(b) != steps:
        print(f"expected {steps} JSON lines, got {len(a)} and {len(b)}")
        return 1
    worst = 0.0
    ok = True
    for x, y in zip(a, b):
        if x["step"] != y["step"]:
            print(f"step numbers differ: {x['step']} vs {y['step']}")
            return 1
        for key in ("loss", "val_loss"):
            if x[key] is None and y[key] is None:
                continue
            if x[key] is None or y[key] is None:
                print(f"step {x['step']}: {key} only in one run")
                return 1
            rel = abs(x[key] - y[key]) / abs(x[key])
            worst = max(worst, rel)
            if rel > tol:
                ok = False
        print(f"step {x['step']:3d}  loss {x['loss']:.7f} {y['loss']:.7f}")
    print(f"largest relative difference {worst:.3g} (tolerance {tol:g})")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
