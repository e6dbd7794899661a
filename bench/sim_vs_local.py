#!/usr/bin/env python3
"""Does `syncopate sim` agree with a real `syncopate local` run of the same scenario?

For each mode, runs the real cluster (processes, gRPC, the MLP on Fashion-MNIST, emulated
accelerator steps) and then the simulator with the same trainers, slowdowns and step time, and
prints both side by side:
  s/clock      seconds per clock of the slowest trainer (local: from its trace, first grant to
               last push; sim: simulated time / clocks)
  compute      compute-time ratio over all trainers (local: summary.json; sim: its own)
  spread       local: the largest clock gap between trainers at the end of the run; sim: the
               largest staleness at a grant

The simulator's control-plane and transfer costs are calibration inputs, not outputs: pass what
bench/round_spans.py measures on the machine (--close-latency, --directive-latency, --link-gbps).

Usage: bench/sim_vs_local.py [--modes=bsp,ssp,asp,dssp,hybrid] [--trainers=4]
           [--slowdown=4] [--step=50ms] [--seconds=15] [--bin=build/bin] OUT_DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def local_figures(run_dir):
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    per = summary["per_trainer"]
    clocks = [t["clock"] for t in per]
    slowest = min(range(len(per)), key=lambda i: clocks[i])
    first_start = last_push = None
    pushes = 0
    with open(os.path.join(run_dir, f"trainer-{per[slowest]['rank']}.trace.jsonl")) as trace:
        for line in trace:
            e = json.loads(line)
            if e["event"] == "start" and first_start is None:
                first_start = e["t_us"]
            elif e["event"] in ("pushed", "exchange"):  # a step's end: store modes, P2P modes
                last_push = e["t_us"]
                pushes += 1
    if not pushes or first_start is None:
        sys.exit(f"{run_dir}: the slowest trainer's trace has no pushes")
    return {
        "clocks": min(clocks),
        "seconds_per_clock": (last_push - first_start) / 1e6 / pushes,
        "compute_time_ratio": summary["compute_time_ratio"],
        "spread": max(clocks) - min(clocks),
    }


def sim_figures(args, mode, clocks):
    out = run([
        os.path.join(args.bin, "syncopate"), "sim", f"--mode={mode}",
        f"--trainers={args.trainers}", "--stragglers=1", f"--slowdown={args.slowdown}",
        f"--step={args.step}", "--jitter=0", f"--model-bytes={args.model_bytes}",
        f"--link-gbps={args.link_gbps}", f"--directive-latency={args.directive_latency}",
        f"--close-latency={args.close_latency}", f"--clocks={max(1, clocks)}"])
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == mode:
            return {
                "seconds_per_clock": float(f[2]),
                "compute_time_ratio": float(f[4]),
                "spread": int(f[5].split("/")[2]),
            }
    sys.exit(f"no row for {mode} in:\n{out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--modes", default="bsp,ssp,asp,dssp,hybrid")
    p.add_argument("--trainers", type=int, default=4)
    p.add_argument("--slowdown", type=float, default=4)
    p.add_argument("--step", default="50ms")
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--model-bytes", type=float, default=406e3)  # the MLP
    p.add_argument("--link-gbps", type=float, default=2)
    p.add_argument("--directive-latency", default="1ms")
    p.add_argument("--close-latency", default="2ms")
    args = p.parse_args()
    if not re.fullmatch(r"[0-9.]+(ms|s)", args.step):
        sys.exit("--step: a duration such as 50ms")
    os.makedirs(args.out_dir, exist_ok=True)
    slowdowns = ",".join([str(args.slowdown)] + ["1"] * (args.trainers - 1))
    rows = []
    for mode in args.modes.split(","):
        run_dir = os.path.join(args.out_dir, mode)
        run([os.path.join(args.bin, "syncopate"), "local", f"--mode={mode}",
             f"--trainers={args.trainers}", f"--slowdown={slowdowns}", f"--step-time={args.step}",
             "--target-accuracy=0.99", f"--time-limit={args.seconds}s", f"--report-dir={run_dir}"])
        local = local_figures(run_dir)
        sim = sim_figures(args, mode, local["clocks"])
        rows.append((mode, local, sim))
    print(f"{'mode':8} {'clocks':>6} {'s/clock local':>14} {'sim':>7} {'sim/local':>9} "
          f"{'compute local':>13} {'sim':>6} {'spread local':>12} {'sim':>5}")
    for mode, local, sim in rows:
        print(f"{mode:8} {local['clocks']:6d} {local['seconds_per_clock']:14.4f} "
              f"{sim['seconds_per_clock']:7.4f} "
              f"{sim['seconds_per_clock'] / local['seconds_per_clock']:9.2f} "
              f"{local['compute_time_ratio']:13.3f} {sim['compute_time_ratio']:6.3f} "
              f"{local['spread']:12d} {sim['spread']:5d}")


if __name__ == "__main__":
    main()
