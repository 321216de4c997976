#!/usr/bin/env python3
"""Checks the statistics (HYCC_LOG json=FILE) of a drop-in test program run under `hybrid`.

Usage: check_stats.py RANKS JSON [DIMENSION/OPERATION=COMPRESSED_CALLS_PER_RANK ...]
(calls per rank: their mean, 20.5 where the 4 ranks make 82 in all).
"""
import json
import sys

ranks = int(sys.argv[1])
s = json.load(open(sys.argv[2]))
rows = {(e["dimension"], e["operation"]): e for e in s["statistics"]["entries"]}
print("statistics:", {f"{d}/{o}": round(e["ratio"], 2) for (d, o), e in rows.items()})
# The dp allreduce under hybrid's 6-bit quantization: more than 3x (bf16 would be 2x; blocking
# calls travel at about 5x, nonblocking and persistent ones in fixed slots at 3.6x).
dp = rows[("dp", "allreduce")]
assert dp["compressed_calls"] > 0 and dp["wire_bytes"] * 3 < dp["raw_bytes"], dp
# Point to point on pp (every program sends round the ring; Fortran's mpif.h and mpi_f08 alike).
pp = rows[("pp", "sendrecv")]
assert pp["compressed_calls"] > 0 and pp["wire_bytes"] < pp["raw_bytes"], pp
assert s["statistics"]["total"]["wire_bytes"] < s["statistics"]["total"]["raw_bytes"]
# The dp gradients' error feedback keeps state: the largest rank's tensors and host bytes.
states = s["gradient_states"]
assert states["tensors"] > 0 and states["host_bytes"] >= 4 * states["tensors"], states
assert set(states) == {"tensors", "host_bytes", "device_bytes", "dropped"}, states
# HYCC_SAMPLE_ERROR=1: every compressed blocking collective was also run uncompressed (the
# nonblocking ones cannot be: mpi4py's Iallreduce); lossy ones differ.
assert 0 < dp["error_samples"] <= dp["compressed_calls"] and 0 < dp["max_error"] < 1, dp
# Calls counted per program: every one routed and compressed (MPI_Reduce_scatter and
# MPI_Allgatherv with counts one apart among them; calls left to MPI are not counted).
for want in sys.argv[3:]:
    key, calls = want.split("=")
    row = rows[tuple(key.split("/"))]
    assert row["calls"] == row["compressed_calls"] == round(float(calls) * ranks), (want, row)
