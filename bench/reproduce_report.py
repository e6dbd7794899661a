#!/usr/bin/env python3
"""Writes OUT/report.md from the `syncopate compare` runs bench/reproduce.sh left in OUT: one table
per seed claim and model (the paper's figure, ours, the ratio, runs, spread) and the plots.

Ratios between modes are taken per seed (seed k of one mode against seed k of the other, both run
back to back with the same work) and summarised as the median and min-max over seeds; a seed where
either run missed the target gives no time ratio and is counted in the runs column.
usage: reproduce_report.py OUT [--settings TEXT]
"""

import argparse
import csv
import os
import statistics
from typing import Dict, List, Optional

Runs = Dict[str, Dict[int, dict]]  # mode -> seed -> compare-runs.csv row


def read_runs(directory: str) -> Runs:
    """Every run of a compare directory, at the learning rate compare.csv reports per mode."""
    path = os.path.join(directory, "compare-runs.csv")
    if not os.path.exists(path):
        return {}
    with open(os.path.join(directory, "compare.csv")) as f:
        chosen = {row["mode"]: row["learning_rate"] for row in csv.DictReader(f)}
    runs: Runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if chosen.get(row["mode"]) == row["learning_rate"]:
                runs.setdefault(row["mode"], {})[int(row["seed"])] = row
    return runs


def time_of(row: dict) -> Optional[float]:
    return float(row["time_to_target_seconds"]) if row["reached_target"] == "true" else None


def spread(values: List[float], digits: int = 2) -> str:
    if not values:
        return "n/a"
    median, low, high = (f"{v:.{digits}f}" for v in (statistics.median(values), min(values), max(values)))
    return median if low == high else f"{median} [{low}–{high}]"


def figure(values: List[float], paper: Optional[float], runs: str, what: str, paper_text: str,
           digits: int = 2) -> str:
    ratio = f"{statistics.median(values) / paper:.2f}" if values and paper else "n/a"
    return f"| {what} | {paper_text} | {spread(values, digits)} | {ratio} | {runs} |"


def compute_ratios(runs: Runs, mode: str) -> List[float]:
    return [float(r["compute_time_ratio"]) for r in runs.get(mode, {}).values()]


def time_ratios(runs_a: Dict[int, dict], runs_b: Dict[int, dict]) -> (List[float], str):
    """Per-seed time_a / time_b, and 'n of m seeds' (seeds where both reached the target)."""
    ratios = []
    seeds = sorted(set(runs_a) & set(runs_b))
    for seed in seeds:
        a, b = time_of(runs_a[seed]), time_of(runs_b[seed])
        if a is not None and b is not None:
            ratios.append(a / b)
    return ratios, f"{len(ratios)} of {len(seeds)} seeds"


def fastest(runs: Runs, modes: List[str]) -> Optional[str]:
    """The mode with the shortest median time to target among those that reached it in most runs."""
    best, best_time = None, None
    for mode in modes:
        times = [time_of(r) for r in runs.get(mode, {}).values()]
        reached = [t for t in times if t is not None]
        if not reached or 2 * len(reached) <= len(times):
            continue
        if best_time is None or statistics.median(reached) < best_time:
            best, best_time = mode, statistics.median(reached)
    return best


def header(title: str, out: str, directory: str) -> List[str]:
    """A claim's heading, its plot (PNG, with links to the SVG and the printed table) and the
    table's header. `directory` is a compare report under `out`."""
    name = os.path.relpath(directory, out)
    return [f"### {title}", "", f"![{name}]({name}/compare.png) ([SVG]({name}/compare.svg), "
            f"[table]({name}.txt))", "",
            "| figure | paper | ours: median [min–max] | ours ÷ paper | runs |", "|---|---|---|---|---|"]


def wbsp_claim(out: str, directory: str) -> List[str]:
    runs = read_runs(directory)
    lines = header(f"WBSP ({os.path.basename(directory)})", out, directory)
    for mode in ("wbsp", "wbsp-overlap"):
        values = compute_ratios(runs, mode)
        lines.append(figure(values, 0.91, str(len(values)), f"compute-time ratio, {mode}", "91%"))
    for mode in ("bsp", "ssp", "asp"):
        values = compute_ratios(runs, mode)
        lines.append(figure(values, None, str(len(values)), f"compute-time ratio, {mode}", "55–72%"))
    base = fastest(runs, ["bsp", "ssp", "asp"])
    ours = fastest(runs, ["wbsp", "wbsp-overlap"])
    if base and ours:
        ratios, count = time_ratios(runs[ours], runs[base])
        lines.append(figure(ratios, 0.4, count, f"time to target, {ours} ÷ fastest baseline ({base})",
                            "≤ 0.4 (up to 60% less)"))
    else:
        lines.append("| time to target ÷ fastest baseline | ≤ 0.4 | a mode did not reach the target | n/a | |")
    return lines


def dssp_claim(out: str, directory: str) -> List[str]:
    runs = read_runs(os.path.join(directory, "dssp-asp"))
    paper = read_runs(os.path.join(directory, "dssp-paper")).get("dssp")
    if paper:
        runs["dssp (paper rule)"] = paper
    ssp: Runs = {}
    for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if entry.startswith("ssp-s"):
            for seed_runs in read_runs(os.path.join(directory, entry)).values():
                ssp[f"ssp {entry[4:]}"] = seed_runs
    lines = header(f"DSSP ({os.path.basename(directory)})", out, os.path.join(directory, "dssp-asp"))
    best_ssp = fastest(ssp, sorted(ssp))
    for dssp in ("dssp", "dssp (paper rule)"):
        if dssp not in runs:
            continue
        if best_ssp:
            ratios, count = time_ratios(runs[dssp], ssp[best_ssp])
            lines.append(figure(ratios, 1 / 1.9, count,
                                f"time to target, {dssp} ÷ best SSP ({best_ssp})",
                                "≈ 0.53 (1.9× faster)"))
        else:
            lines.append(f"| time to target, {dssp} ÷ best SSP | ≈ 0.53 | "
                         "no SSP bound reached the target | n/a | |")
        if "asp" in runs:
            ratios, count = time_ratios(runs[dssp], runs["asp"])
            lines.append(figure(ratios, None, count, f"time to target, {dssp} ÷ asp", "≈ 1"))
    by_bound = sorted(ssp, key=lambda n: int(n.split("s")[-1]))
    for name, mode_runs in [(m, runs[m]) for m in ("dssp", "dssp (paper rule)", "asp") if m in runs] + \
            [(n, ssp[n]) for n in by_bound]:
        times = [t for t in (time_of(r) for r in mode_runs.values()) if t is not None]
        lines.append(figure(times, None, f"{len(times)} of {len(mode_runs)} reached",
                            f"time to target (s), {name}", "", digits=1))
        ratios = [float(r["compute_time_ratio"]) for r in mode_runs.values()]
        lines.append(figure(ratios, None, str(len(ratios)), f"compute-time ratio, {name}", ""))
    return lines


def hybrid_claim(out: str, directory: str) -> List[str]:
    runs = read_runs(directory)
    lines = header(f"Hybrid ({os.path.basename(directory)})", out, directory)
    for base in ("bsp", "asp"):
        if "hybrid" in runs and base in runs:
            ratios, count = time_ratios(runs["hybrid"], runs[base])
            lines.append(figure(ratios, None, count, f"time to target, hybrid ÷ {base}", "< 1"))
    return lines


def links_claim(out: str, directory: str) -> List[str]:
    """The link-limited regime: the fastest straggler remedy against the fastest baseline."""
    runs = read_runs(directory)
    lines = header(f"Slow links ({os.path.basename(directory)})", out, directory)
    for mode in ("bsp", "ssp", "asp", "wbsp-overlap", "dssync", "selmcast-ssp"):
        values = compute_ratios(runs, mode)
        lines.append(figure(values, None, str(len(values)), f"compute-time ratio, {mode}", "–"))
    base = fastest(runs, ["bsp", "ssp", "asp"])
    ours = fastest(runs, ["wbsp-overlap", "dssync", "selmcast-ssp"])
    if base and ours:
        ratios, count = time_ratios(runs[ours], runs[base])
        lines.append(figure(ratios, None, count,
                            f"time to target, {ours} ÷ fastest baseline ({base})", "(target ≤ 0.6)"))
    else:
        lines.append("| time to target ÷ fastest baseline | (target ≤ 0.6) | a mode did not reach "
                     "the target | n/a | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--settings", default="")
    args = parser.parse_args()
    claims = {"wbsp": wbsp_claim, "dssp": dssp_claim, "hybrid": hybrid_claim, "links": links_claim}
    lines = ["# Seed claims reproduced with Syncopate", "", f"Settings: {args.settings}", "",
             "Ratios between modes are per seed (same seed, same work, back to back) and then the "
             "median and range over seeds. Time to target counts from the start of training to the "
             "evaluation that reached the target.", ""]
    for entry in sorted(os.listdir(args.out)):
        claim = entry.split("-")[0]
        if claim in claims and os.path.isdir(os.path.join(args.out, entry)):
            lines += claims[claim](args.out, os.path.join(args.out, entry)) + [""]
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
