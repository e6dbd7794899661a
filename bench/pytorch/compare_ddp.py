#!/usr/bin/env python3
"""PyTorch + Syncopate against PyTorch DDP, back to back, repeated (bench/README.md).

Each repeat runs, in turn on this machine:
  1. ddp_baseline.py: DDP (gloo) with the per-rank slowdowns, to the target accuracy;
  2. `syncopate compare` over the store modes with examples/pytorch/train.py as every trainer,
     same model, data shards, seed, batch size, slowdowns, learning rate and evaluator. Step size:
     DDP averages the ranks' gradients; Syncopate's default step-size rule (--aggregation=sum/n,
     docs/modes.md) weighs every delta 1/N in every mode, which moves the model as far per N
     steps;
  3. with no straggler, DDP and Syncopate bsp for a fixed time: steps per second.
Prints a table of ratios to DDP per repeat and the median, and writes everything as JSON.
usage: compare_ddp.py [--repeats 3] [--model mlp] [--out bench/results/ddp.json]
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BIN = os.environ.get("SYNCOPATE_BIN_DIR", os.path.join(ROOT, "build/bin"))
PYTHONPATH = os.path.join(BIN, "../python")
STORE_MODES = ["bsp", "hybrid", "wbsp", "wbsp-overlap", "asp", "ssp", "dssp"]


def ddp(args, slowdown, time_limit=None, target=None):
    cmd = [sys.executable, os.path.join(ROOT, "bench/pytorch/ddp_baseline.py"), f"--slowdown={slowdown}",
           f"--model={args.model}", f"--learning-rate={args.learning_rate}",
           f"--target-accuracy={target if target is not None else args.target}",
           f"--time-limit={time_limit or args.time_limit}"]
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def syncopate(args, command, report_dir, extra):
    trainer = f"exec {sys.executable} {ROOT}/examples/pytorch/train.py --model={args.model}"
    cmd = [os.path.join(BIN, "syncopate"), command, f"--report-dir={report_dir}", "--trainers=4",
           f"--trainer-command={trainer}", *extra]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def compare(args, report_dir, modes, learning_rate):
    syncopate(args, "compare", report_dir,
              [f"--modes={','.join(modes)}", f"--slowdown={args.slowdown}",
               f"--learning-rate={learning_rate}", f"--target-accuracy={args.target}",
               f"--time-limit={args.time_limit}s"])
    with open(os.path.join(report_dir, "compare.csv")) as f:
        return {row["mode"]: row for row in csv.DictReader(f)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--slowdown", default="1,1,2,4")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--target", type=float, default=0.85)
    parser.add_argument("--time-limit", type=float, default=180)
    parser.add_argument("--steady-seconds", type=float, default=20)
    parser.add_argument("--runs-dir", default=os.path.join(ROOT, "runs/ddp-compare"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    world = len(args.slowdown.split(","))
    results = []
    for r in range(args.repeats):
        base = os.path.join(args.runs_dir, f"repeat-{r}")
        row = {"ddp": ddp(args, args.slowdown)}
        modes = compare(args, base + "-modes", STORE_MODES, args.learning_rate)
        row["syncopate"] = modes
        # No straggler: steps per second over a fixed time.
        steady = ddp(args, ",".join(["1"] * world), time_limit=args.steady_seconds, target=1.01)
        row["ddp_steps_per_second"] = steady["steps"] / steady["wall_seconds"]
        syncopate(args, "local", base + "-steady",
                  ["--mode=bsp", "--slowdown=1", "--target-accuracy=1.0",
                   f"--time-limit={args.steady_seconds}s", f"--learning-rate={args.learning_rate}"])
        with open(os.path.join(base + "-steady", "summary.json")) as f:
            summary = json.load(f)
        row["bsp_steps_per_second"] = summary["rounds_closed"] / summary["wall_seconds"]
        results.append(row)
        print(f"repeat {r}: DDP {row['ddp']['seconds_to_target']} s to {args.target}; " +
              ", ".join(f"{m} {v['time_to_target_seconds'] or '-'} s" for m, v in modes.items()) +
              f"; no straggler: DDP {row['ddp_steps_per_second']:.1f} steps/s, "
              f"bsp {row['bsp_steps_per_second']:.1f} rounds/s", flush=True)

    print(f"\nratios to DDP (time to {args.target}; compute-time ratio as measured), over {args.repeats} repeats")
    print(f"{'mode':14} {'time ratio (per repeat)':34} {'median':>7} {'compute ratio':>14}")
    for mode in STORE_MODES:
        ratios, compute = [], []
        for row in results:
            m, d = row["syncopate"][mode], row["ddp"]["seconds_to_target"]
            ratios.append(float(m["time_to_target_seconds"]) / d if m["time_to_target_seconds"] and d else None)
            compute.append(float(m["compute_time_ratio"]))
        shown = " ".join("-" if x is None else f"{x:.2f}" for x in ratios)
        valid = [x for x in ratios if x is not None]
        median = f"{statistics.median(valid):.2f}" if valid else "-"
        print(f"{mode:14} {shown:34} {median:>7} {statistics.median(compute):>14.2f}")
    per_step = [row["bsp_steps_per_second"] / row["ddp_steps_per_second"] for row in results]
    print("no straggler, bsp rounds/s over DDP steps/s: " + " ".join(f"{x:.2f}" for x in per_step) +
          f" (median {statistics.median(per_step):.2f}; above 1 means bsp steps faster)")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
