#!/usr/bin/env python3
"""What the simulator would have said on the H200 run with a GPU per-op overhead.

Offline, no GPU: reads bench/results/gpu_h200_runs.tar.gz (the run's nmt graph, its
cpu:8+cuda:0 profile and the five training seeds' measured final tables and
placements) and simulates each measured placement with `placer simulate`, once with
the profile as it was (one executor overhead for every device, the CPU's) and once
with `gpu_op_overhead_s` set to what the all-on-cuda:0 steps took beyond their
kernels, per op (the quantity `placer profile` now measures on a GPU). It also
counts each placement's cross-device dependencies, for the residual per hop.

Usage: python3 bench/gpu_h200_offline.py BUILD_DIR   (prints a markdown table)
"""
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile


def main():
    placer = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "placer")
    with tempfile.TemporaryDirectory() as tmp:
        report(placer, tmp)


def report(placer, tmp):
    """The tables, with the runs unpacked into tmp."""
    with tarfile.open("bench/results/gpu_h200_runs.tar.gz") as t:
        t.extractall(tmp, filter="data")
    d = os.path.join(tmp, "gpu_h200_runs")
    graph = json.load(open(f"{d}/nmt.json"))
    prof = json.load(open(f"{d}/profile_nmt_mixed.json"))
    timed = sum(1 for o in graph["ops"] if o["type"] not in ("placer::input", "placer::param"))
    kernels = sum(o["seconds"] for o in prof["ops"] if o["device_kind"] == "cuda")

    rows, singles = [], []
    for s in range(1, 6):
        sm = json.load(open(f"{d}/train_s{s}/summary.json"))
        singles += [b["step_s"] for b in sm["baselines"] if b["method"] == "single"]
        rows.append((s, "policy", f"{d}/train_s{s}/policy_best_placement.json", sm["policy_best_step_s"]))
        if sm["best_found_by"] != "policy":
            rows.append((s, sm["best_found_by"], f"{d}/train_s{s}/best_placement.json", sm["best_step_s"]))
    measured_single = statistics.median(singles)
    overhead = (measured_single - kernels) / timed

    def simulate(path, gpu_overhead):
        p = dict(prof)
        if gpu_overhead is not None:
            p["gpu_op_overhead_s"] = gpu_overhead
        pf, out = f"{tmp}/profile.json", f"{tmp}/sim.json"
        json.dump(p, open(pf, "w"))
        subprocess.run([placer, "simulate", "--graph", f"{d}/nmt.json", "--placement", path, "--cluster",
                        "cpu:8+cuda:0", "--profile", pf, "--json", out], check=True, capture_output=True)
        return json.load(open(out))["result"]["step_s"]

    def hops(path):
        pl = json.load(open(path))["placement"]
        return len({(i["op"], i["output"], pl[o["name"]]) for o in graph["ops"] for i in o["inputs"]
                    if pl[i["op"]] != pl[o["name"]]}), sum(1 for v in pl.values() if v == "cuda:0"), len(pl)

    print(f"Kernels on cuda:0 (profile, timed alone): {kernels * 1e3:.2f} ms for {timed} timed ops; all on "
          f"cuda:0 measured {measured_single * 1e3:.2f} ms (median of the five `single` rows): GPU overhead "
          f"{overhead * 1e6:.2f} us/op (the profile's CPU executor overhead: {prof['per_op_overhead_s'] * 1e6:.2f}).")
    print()
    print(f"| seed | placement | ops on cuda:0 | cross-device dependencies | measured s | simulated as on the H200 | "
          f"error | simulated, GPU overhead {overhead * 1e6:.1f} us/op | error | residual |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    before, after = [], []
    for s, kind, path, measured in rows:
        a, b = simulate(path, None), simulate(path, overhead)
        n, on_gpu, total = hops(path)
        before.append(abs(a / measured - 1))
        after.append(abs(b / measured - 1))
        print(f"| {s} | {kind} | {on_gpu} of {total} | {n} | {measured:.4f} | {a:.4f} | {a / measured - 1:+.1%} | "
              f"{b:.4f} | {b / measured - 1:+.1%} | {(measured - b) * 1e3:+.2f} ms |")
    print()
    print(f"MAPE over these {len(rows)} measured rows: {statistics.mean(before):.1%} -> {statistics.mean(after):.1%}")

    # Leave one out with the hybrid calibration (calibration_loo_bench): the five distinct
    # placements (every op on cuda:0, measured in several rows: their median; the policy's
    # mixed ones of seeds 2-5), each predicted from the other four's measurements.
    distinct, all_gpu = [], []
    for s, kind, path, measured in rows:
        if hops(path)[0] == 0:
            all_gpu.append((path, measured))
        else:
            distinct.append((path, measured))
    rows_file = f"{tmp}/rows.txt"
    with open(rows_file, "w") as f:
        f.write(f"{all_gpu[0][0]} {statistics.median(m for _, m in all_gpu)}\n")
        for path, measured in distinct:
            f.write(f"{path} {measured}\n")
    bench = os.path.join(os.path.dirname(placer), "bench", "calibration_loo_bench")
    for label, overhead in (("the run's profile", None), (f"the profile with the GPU overhead ({overhead * 1e6:.1f} us/op)", overhead)):
        p = dict(prof)
        if overhead is not None:
            p["gpu_op_overhead_s"] = overhead
        pf = f"{tmp}/profile_loo.json"
        json.dump(p, open(pf, "w"))
        out = subprocess.run([bench, "--graph", f"{d}/nmt.json", "--profile", pf, "--cluster", "cpu:8+cuda:0", rows_file],
                             check=True, capture_output=True, text=True).stdout
        print()
        print(f"Leave one out, {label}:")
        print()
        print(out.replace(d + "/", ""))


if __name__ == "__main__":
    main()
