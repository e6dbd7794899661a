#!/usr/bin/env python3
"""Where a step's time goes: per-phase medians from the trainers' traces of one run.

    bench/round_spans.py RUN_DIR [--skip=50]

RUN_DIR is a `syncopate local` report directory (the one holding trainer-<rank>.trace.jsonl).
For every step of every trainer the traces give (protocol.cc):

    compute   the step itself, real + emulated ("pushed".compute_us)
    push      the delta's push until the store acknowledged it ("pushed".push_us)
    wait      from the report to the next grant ("start".wait_us): the coordinator's decision,
              a round's close and the grant's delivery, and waiting for slower trainers
    pull      the model's pull ("pull".pull_us; round modes only)
    local     the rest of the step: taking the delta, the rebase, the trace itself

`step` is the wall time from one acknowledged push to the next. For round modes the script also
prints the round's critical path: from the last trainer's acknowledged push of clock c to the
last grant of clock c ("close+grant"), and from there to the last acknowledged push of clock
c + 1 ("round"). The first --skip steps (start-up) and the last five are left out.

Meant for the sequential worker path (every store mode but wbsp-overlap). With overlapped
communication the push runs beside the next step, so a push's compute_us may be the next step's
and the phases overlap rather than add up.
"""
import argparse
import glob
import json
import os
import statistics
import sys


def read_traces(run_dir):
    traces = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "trainer-*.trace.jsonl"))):
        rank = int(os.path.basename(path).split(".")[0].split("-")[1])
        events = []
        with open(path) as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut by a kill
        traces[rank] = events
    return traces


def steps_of(events):
    """One dict per step, keyed by the clock its push carried."""
    steps = {}
    grant_clock = None
    for e in events:
        kind = e.get("event")
        if kind == "pushed" and "push_us" in e:
            steps.setdefault(e["clock"], {}).update(
                pushed_at=e["t_us"], compute=e["compute_us"], push=e["push_us"])
        elif kind == "start" and "wait_us" in e:
            grant_clock = e["clock"]
            steps.setdefault(grant_clock, {}).update(granted_at=e["t_us"], wait=e["wait_us"])
        elif kind == "pull" and "pull_us" in e and grant_clock is not None:
            steps.setdefault(grant_clock, {})["pull"] = e["pull_us"]
    return steps


def median(values):
    return statistics.median(values) / 1000 if values else float("nan")


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] / 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--skip", type=int, default=50, help="start-up steps left out")
    args = parser.parse_args()
    run_dir = args.run_dir
    if not glob.glob(os.path.join(run_dir, "trainer-*.trace.jsonl")):
        nested = glob.glob(os.path.join(run_dir, "*", "trainer-*.trace.jsonl"))
        if not nested:
            sys.exit(f"no trainer traces in {run_dir}")
        run_dir = os.path.dirname(nested[0])
    per_trainer = {rank: steps_of(events) for rank, events in read_traces(run_dir).items()}
    phases = {k: [] for k in ("step", "compute", "push", "wait", "pull", "local")}
    for steps in per_trainer.values():
        clocks = sorted(steps)
        for c in clocks[args.skip:-5]:
            this, following = steps[c], steps.get(c + 1, {})
            if "pushed_at" not in this or "pushed_at" not in following:
                continue
            wall = following["pushed_at"] - this["pushed_at"]
            # Everything after this push up to the next one: wait and pull of grant c, then the
            # compute and the push of step c + 1.
            parts = [this.get("wait", 0), this.get("pull", 0), following["compute"],
                     following["push"]]
            phases["step"].append(wall)
            phases["compute"].append(following["compute"])
            phases["push"].append(following["push"])
            phases["wait"].append(this.get("wait", 0))
            if "pull" in this:
                phases["pull"].append(this["pull"])
            phases["local"].append(wall - sum(parts))
    if not phases["step"]:
        sys.exit(f"no timed steps in {run_dir} (traces from before bench/round_spans.py?)")
    print(f"{run_dir}: {len(per_trainer)} trainers, {len(phases['step'])} steps")
    print(f"{'phase':10s} {'median ms':>10s} {'p90 ms':>8s}")
    for name, values in phases.items():
        print(f"{name:10s} {median(values):10.2f} {percentile(values, 0.9):8.2f}")
    overhead = [s - c for s, c in zip(phases["step"], phases["compute"])]
    print(f"{'overhead':10s} {median(overhead):10.2f} {percentile(overhead, 0.9):8.2f}"
          "   (step - compute)")

    # The round's critical path, for modes whose trainers share clocks.
    ranks = sorted(per_trainer)
    common = set.intersection(*(set(per_trainer[r]) for r in ranks)) if ranks else set()
    close_grant, rounds = [], []
    for c in sorted(common)[args.skip:-5]:
        try:
            last_push = max(per_trainer[r][c]["pushed_at"] for r in ranks)
            last_grant = max(per_trainer[r][c]["granted_at"] for r in ranks)
            next_push = max(per_trainer[r][c + 1]["pushed_at"] for r in ranks)
        except KeyError:
            continue
        if last_grant < last_push:
            continue  # not a round mode: grants do not wait for everyone's push
        close_grant.append(last_grant - last_push)
        rounds.append(next_push - last_push)
    if len(close_grant) > len(common) // 2:
        print(f"{'close+grant':10s} {median(close_grant):10.2f} {percentile(close_grant, 0.9):8.2f}"
              "   (last push acknowledged -> last grant)")
        print(f"{'round':10s} {median(rounds):10.2f} {percentile(rounds, 0.9):8.2f}"
              "   (last push -> last push of the next clock)")


if __name__ == "__main__":
    main()
