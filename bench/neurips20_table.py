#!/usr/bin/env python3
"""Writes bench/results/neurips20.md from the JSON that bench/run_neurips20.sh
collected and the table of the paper's DP in the workloads' README.
  python3 bench/neurips20_table.py WORKLOADS_DIR OUT_DIR SECONDS
LEARNED="SEEDS SAMPLES SECONDS" (set by the script) describes the learned runs."""
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys


def paper_table(readme):
    """{'LayerGraphs/bert24_inference': {'dp': 17.7899 or None, 'time': '0.2 s', 'ideals': '30', 'pipedream': ...}}"""
    rows = {}
    for line in open(readme):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or "/" not in cells[0] or cells[0].startswith("-"):
            continue
        number = lambda s: float(s.replace(",", "")) if re.match(r"^[\d,.]+$", s) else None
        rows[cells[0]] = {"dp": number(cells[1]), "time": cells[2], "ideals": cells[3], "pipedream": number(cells[4])}
    return rows


def seconds_of(text):
    """'27-44 s' -> (27, 44); '0.2 s' -> (0.2, 0.2); '> 600 s' -> None."""
    m = re.match(r"^([\d.]+)(?:-([\d.]+))? s$", text)
    if not m:
        return None
    lo = float(m.group(1))
    return lo, float(m.group(2) or lo)


def methods_of(path):
    data = json.load(open(path))
    return {m["method"]: m for m in data["methods"]}, data


def fmt(v, digits=6):
    return "—" if v is None else f"{v:.{digits}g}"


def cell(m):
    if m is None:
        return "—"
    if "error" in m:
        return "none"
    s = f"{fmt(m['max_load'])} ({m['seconds']:.2f} s)"
    return s if m.get("feasible", True) else s + " (over memory)"


def learned_runs(out, name):
    """The learned rows of NAME.learned<seed>.json, by seed."""
    runs = {}
    for path in glob.glob(os.path.join(out, name + ".learned*.json")):
        seed = re.search(r"\.learned(\d+)\.json$", path)
        if seed:
            runs[int(seed.group(1))] = methods_of(path)[0].get("learned")
    return {k: v for k, v in sorted(runs.items()) if v is not None}


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def learned_cell(runs):
    ok = [r for r in runs.values() if "error" not in r]
    if not ok:
        return "—"
    loads = [r["max_load"] for r in ok]
    secs = [r["seconds"] for r in ok]
    return f"{fmt(median(loads))} / {fmt(max(loads))} ({median(secs):.2f} s)"


def pct(a, b):
    return f"{100.0 * (a - b) / b:+.2f}%"


def learned_section(out, names, learned):
    seeds, samples, seconds = (learned.split() + ["?", "?", "?"])[:3]
    commits = sorted({open(p).read().strip() for p in glob.glob(os.path.join(out, "*.learned.commit"))})
    print("## learned\n")
    print(f"`placer baseline --objective max_load --method dp,learned --seed S --budget {samples} --time-limit "
          f"{seconds}` for seeds 1-{seeds} (bench/run_neurips20.sh step 3, under nice, at commit "
          f"{', '.join(commits) or '?'}): a gnn policy (message passing over the colocation classes, the attention "
          "decoder of `placer train`) decides one device per colocation class; it clones dp's split (its warm "
          "start), then REINFORCE with a batch baseline, an entropy bonus and self-imitation of the best split so "
          f"far, reward -max_load / dp's max_load; a split over memory is penalized and never kept. {samples} "
          f"samples (992: whole batches of 32) or {seconds} s after dp, whichever comes first. Its time excludes "
          "dp's (in the dp column). The result is the best split seen, dp's included, so it is never worse than dp; "
          "\"policy\" counts the seeds where the policy's own sample beat dp.\n")
    print("| workload | learned median | worst | best | vs dp (median / worst) | vs ilp (median / worst) | "
          "vs local_search (median) | policy found it | samples (median) | time (median / max) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        kind, stem = name.split("_", 1)
        runs = learned_runs(out, name)
        ok = [r for r in runs.values() if "error" not in r]
        if not ok:
            continue
        ms, _ = methods_of(os.path.join(out, name + ".json"))
        loads = [r["max_load"] for r in ok]
        secs = [r["seconds"] for r in ok]
        samples_used = [int(m.group(1)) for r in ok for m in [re.search(r"(\d+) samples", r["note"])] if m]
        ref = lambda k, v: pct(v, ms[k]["max_load"]) if k in ms and "error" not in ms[k] else "—"
        print(f"| {kind}/{stem} | {fmt(median(loads))} | {fmt(max(loads))} | {fmt(min(loads))} | "
              f"{ref('dp', median(loads))} / {ref('dp', max(loads))} | {ref('ilp', median(loads))} / "
              f"{ref('ilp', max(loads))} | {ref('local_search', median(loads))} | "
              f"{sum(r.get('found_by') == 'policy' for r in ok)} of {len(ok)} | "
              f"{median(samples_used) if samples_used else '—'} | {median(secs):.2f} / {max(secs):.2f} s |")
    print()


def main():
    wdir, out, limit = sys.argv[1], sys.argv[2], sys.argv[3]
    paper = paper_table(os.path.join(wdir, "README.md"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"],
                           capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(out, "*.json"))
                   if not p.endswith(".dp.json") and not re.search(r"\.learned\d+\.json$", p))
    learned = os.environ.get("LEARNED", "")
    commits = sorted({open(p).read().strip() for p in glob.glob(os.path.join(out, "*.commit"))
                      if not p.endswith(".learned.commit")})
    dp_commits = sorted({json.load(open(p)).get("commit", "?") for p in glob.glob(os.path.join(out, "*.dp.json"))})
    print("# The NeurIPS 2020 yardstick: max-load on the paper's workloads\n")
    print("Workloads of Tarnawski et al., \"Efficient Algorithms for Device Placement of DNN Graph Operators\" "
          "(NeurIPS 2020; msr-fiddle/dnn-partitioning, MIT license), under the paper's objective: the time per "
          "sample of a pipelined split is its largest device load (env/max_load.h). Loads are in the files' time "
          "unit. Every workload has its file's cluster: `maxFPGAs` accelerators of `maxSizePerFPGA` bytes and one "
          "CPU.\n")
    print(f"Command: `PLACER_LOCK=/tmp/placer-cpu.lock bash bench/run_neurips20.sh build {wdir} {limit}`; "
          f"`placer baseline` runs at commit {', '.join(commits) or '?'}, the dp timings (bench/max_load_dp) at "
          f"{', '.join(dp_commits) or '?'}; table written at {commit}{' (with uncommitted changes)' if dirty else ''}, "
          f"{datetime.date.today().isoformat()}, on {os.cpu_count()} cores ({cpu}), "
          f"one command at a time beside other work (flock). local_search and ilp have {limit} s each.\n")

    print("## Every method\n")
    print("Max load (method's run time). dp = the optimum over contiguous splits; local_search starts from dp's "
          "split, ilp (CBC) from the better of the two, so neither can be worse than dp; expert = the paper's "
          "human-expert split (human-experts/), single = every node on one accelerator (memory ignored, as the "
          "paper's one-device figure does). learned: median / worst max load of its seeds (median run time), warm-started "
          "from dp's split (section learned below); best non-contiguous = the better of local_search and ilp.\n")
    print("| workload | dp | local_search | ilp | ilp's lower bound | learned (median / worst) | expert | single | "
          "best non-contiguous vs dp |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    wins = []
    for name in names:
        kind, stem = name.split("_", 1)
        ms, _ = methods_of(os.path.join(out, name + ".json"))
        dp = ms.get("dp")
        others = [ms[k]["max_load"] for k in ("local_search", "ilp") if k in ms and "error" not in ms[k]]
        gain = "—"
        if dp and "error" not in dp and others:
            best = min(others)
            gain = f"{100.0 * (best - dp['max_load']) / dp['max_load']:+.2f}%"
            if best < dp["max_load"] * (1 - 1e-9):
                wins.append(f"{kind}/{stem} ({gain})")
        ilp = ms.get("ilp")
        bound = "—" if not ilp or "error" in ilp else fmt(ilp.get("bound")) + (" (optimal)" if ilp["optimal"] else "")
        print(f"| {kind}/{stem} | {cell(dp)} | {cell(ms.get('local_search'))} | {cell(ilp)} | {bound} | "
              f"{learned_cell(learned_runs(out, name))} | {cell(ms.get('placement'))} | {cell(ms.get('single'))} | {gain} |")
    print(f"\nA non-contiguous split strictly better than the contiguous optimum: {len(wins)} of {len(names)} "
          f"workloads: {', '.join(wins) if wins else 'none'}.\n")
    if any(learned_runs(out, n) for n in names):
        learned_section(out, names, learned)
    else:
        print("Not run here: learned (LEARNED_SEEDS=0).\n")

    print("## placer's dp against the paper's DP\n")
    print("The paper's DP (throughput-dp/dp.cpp, `g++ -O3`, default options) as the workloads' README reports it, "
          "measured on the same 2-core VM. placer's time is the whole `bench/max_load_dp FILE` process (the same "
          "dp as `placer baseline --method dp`, in a binary without LibTorch: reading the file included), and in "
          "brackets the DP alone. Equal = the same value at the README's 6 significant digits (relative difference "
          "in brackets).\n")
    print("| workload | placer dp | paper's DP | equal | ideals (placer / paper) | placer time | paper's time | "
          "paper's time / placer's |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    equal = listed = 0
    for name in names:
        kind, stem = name.split("_", 1)
        key = f"{kind}/{stem}"
        path = os.path.join(out, name + ".dp.json")
        if os.path.exists(path):
            dp = json.load(open(path))
            wall = dp["wall_s"]
        else:  # not timed as a process: the DP's own time from `placer baseline`
            m = methods_of(os.path.join(out, name + ".json"))[0]["dp"]
            dp = {"max_load": m["max_load"], "dp_seconds": m["seconds"], "ideals": m.get("ideals")}
            wall = None
        p = paper.get(key, {})
        same = "—"
        if p.get("dp") is not None and "error" not in dp:
            listed += 1
            rel = abs(dp["max_load"] - p["dp"]) / p["dp"]
            ok = float(f"{dp['max_load']:.6g}") == p["dp"]
            equal += ok
            same = f"{'yes' if ok else 'NO'} ({rel:.1e})"
        t = seconds_of(p.get("time", ""))
        ratio = "—"
        prefix = ""
        if wall is None:
            wall, prefix = dp["dp_seconds"], "DP alone: "
        if t and wall > 0:
            ratio = prefix + (f"{t[0] / wall:.1f}x" if t[0] == t[1] else f"{t[0] / wall:.1f}-{t[1] / wall:.1f}x")
        elif p.get("time", "").startswith(">") and wall > 0:
            ratio = prefix + f"> {float(re.sub('[^0-9.]', '', p['time'])) / wall:.1f}x"
        value = "none" if "error" in dp else fmt(dp["max_load"])
        dp_s = "—" if "error" in dp else f"{dp['dp_seconds']:.2f} s"
        timed = "wall_s" in dp
        wall_text = f"{wall:.2f} s ({dp_s})" if timed else f"not timed as a process ({dp_s})"
        print(f"| {key} | {value} | {fmt(p.get('dp'))} | {same} | {dp.get('ideals', '—')} / "
              f"{p.get('ideals') or '—'} | {wall_text} | {p.get('time', '—')} | {ratio} |")
    print(f"\nplacer's dp equals the paper's DP on {equal} of the {listed} workloads the README gives a value for.\n")
    missing = sorted(k for k in paper if k.replace("/", "_", 1) not in names)
    if missing:
        print(f"Not in this run (no results in {out}): {', '.join(missing)}.\n")


if __name__ == "__main__":
    main()
