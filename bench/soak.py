#!/usr/bin/env python3
"""Soak benchmark for faults (not a CI test): random process faults during long runs, per mode.

For each mode, runs `syncopate local` (4 trainers, slowdowns 1,1,2,4, 2 store shards, 5 ms emulated
steps, checkpoints every second, a target it does not reach) and injects --events random faults, seeded, one every
2-6 s:
  - SIGKILL of a random store shard (syncopate local restarts it from its checkpoint),
  - SIGKILL of the coordinator (restarted; the trainers resume with it),
  - SIGSTOP of a random trainer for 0.5-3 s, then SIGCONT (below the 5 s eviction timeout),
  - SIGSTOP of the coordinator or of a random store shard for 1-10 s (up to twice the eviction
    timeout), then SIGCONT: a gray failure that must cost nothing.
After each fault it checks that every trainer was granted a new clock within 20 s (else: a stall),
and at the end reads summary.json and the trainers' traces:
  - restarts: faults syncopate local recorded (every kill should be one);
  - stalls: faults after which some trainer made no progress for 20 s;
  - hangs: the run did not end within a minute of being stopped (SIGINT) after the last fault;
  - evicted / failure: trainers lost, and the job's own failure;
  - grant errors: a trainer granted a clock other than its last + 1 (a grant lost or repeated);
  - push errors: a trainer's pushes not one per clock, in order (a push repeated or skipped);
  - rounds lost: rounds restarted shards skipped (the reported loss window, docs/faults.md);
  - resent: pushes the trainers re-sent to restarted shards (their logs; a re-sent sum counts the
    pushes it holds);
  - lost / doubled pushes: the run's audit of exactly once (summary.json push_audit: every shard's
    final count of each trainer's pushes against the pushes the trainer saw acknowledged).

  bench/soak.py --modes=bsp,ssp,wbsp-overlap --events=50 --out=/tmp/soak [--seed=1]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRESS_DEADLINE = 20.0


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def trace(run, rank):
    events = []
    try:
        with open(os.path.join(run, "trainer-%d.trace.jsonl" % rank)) as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass  # a line being written
    except OSError:
        pass
    return events


def clocks(run, rank, event):
    return [e["clock"] for e in trace(run, rank) if e.get("event") == event and "clock" in e]


def pid_of(run, name):
    ready = read_json(os.path.join(run, name + ".ready.json"))
    return ready["pid"] if ready else None


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def resent_pushes(run, rank):
    """Pushes trainer `rank` re-sent to restarted shards (its log: 're-sent N push(es) ...')."""
    total = 0
    try:
        with open(os.path.join(run, "trainer-%d.log" % rank)) as f:
            for line in f:
                if "that its restart lost" in line:
                    words = line.split("re-sent ", 1)[1].split()
                    total += int(words[0]) if words and words[0].isdigit() else 0
    except OSError:
        pass
    return total


def out_of_order(sequence):
    return sum(1 for a, b in zip(sequence, sequence[1:]) if b != a + 1)


def soak(mode, events, rng, out, binary, trainers=4, shards=2):
    run = os.path.join(out, mode)
    time_limit = int(events * 10 + 60)  # longer than the events take; the run is stopped after
    cmd = [binary, "local", "--mode=" + mode, "--trainers=%d" % trainers,
           "--slowdown=1,1,2,4", "--store-shards=%d" % shards, "--step-time=5ms",
           "--target-accuracy=0.99", "--time-limit=%ds" % time_limit, "--checkpoint-interval=1s",
           "--report-dir=" + run]
    log = open(os.path.join(out, mode + ".log"), "w")
    local = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    row = {"mode": mode, "events": 0, "kills": 0, "pauses": 0, "stalls": 0, "hang": False,
           "evicted": 0}
    try:
        started = wait_for(lambda: all(len(clocks(run, r, "start")) > 20
                                       for r in range(trainers)), 120)
        if not started:
            row["failure"] = "the trainers never started"
            return row
        for _ in range(events):
            time.sleep(rng.uniform(2, 6))
            if local.poll() is not None:
                break
            before = [len(clocks(run, r, "start")) for r in range(trainers)]
            kind = rng.choices(["store", "coordinator", "pause", "freeze"],
                               [0.3, 0.25, 0.15, 0.3])[0]
            if kind in ("pause", "freeze"):
                if kind == "pause":
                    name, seconds = "trainer-%d" % rng.randrange(trainers), rng.uniform(0.5, 3)
                else:
                    name = rng.choice(["coordinator-0", "store-%d" % rng.randrange(shards)])
                    seconds = rng.uniform(1, 10)
                pid = pid_of(run, name)
                if pid:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(seconds)
                    os.kill(pid, signal.SIGCONT)
                    row["pauses"] += 1
            else:
                name = "coordinator-0" if kind == "coordinator" else "store-%d" % rng.randrange(shards)
                pid = pid_of(run, name)
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    row["kills"] += 1
                    # syncopate local restarts it and its new ready file names the new process.
                    wait_for(lambda: pid_of(run, name) not in (None, pid), 30)
            row["events"] += 1
            progressed = wait_for(lambda: all(len(clocks(run, r, "start")) > before[r]
                                              for r in range(trainers)), PROGRESS_DEADLINE)
            row["stalls"] += 0 if progressed else 1
        # Done injecting: stop the run (it writes its report) and see that it ends.
        local.send_signal(signal.SIGINT)
        try:
            local.wait(timeout=60)
        except subprocess.TimeoutExpired:
            row["hang"] = True
    finally:
        if local.poll() is None:
            local.send_signal(signal.SIGINT)
            try:
                local.wait(timeout=30)
            except subprocess.TimeoutExpired:
                local.kill()
        log.close()
    summary = read_json(os.path.join(run, "summary.json")) or {}
    row["restarts"] = len(summary.get("faults", []))
    row["evicted"] = sum(1 for t in summary.get("per_trainer", []) if t.get("state") == "evicted")
    row["failure"] = summary.get("failure", "no summary")
    row["rounds_lost"] = summary.get("store_rounds_lost", 0)
    row["grant_errors"] = sum(out_of_order(clocks(run, r, "start")) for r in range(trainers))
    row["push_errors"] = sum(out_of_order(clocks(run, r, "pushed")) for r in range(trainers))
    row["resent"] = sum(resent_pushes(run, r) for r in range(trainers))
    audit = summary.get("push_audit", {})
    row["audited"] = audit.get("pushes", "") if audit.get("audited") else "no"
    row["lost_pushes"] = audit.get("lost", "")
    row["doubled_pushes"] = audit.get("doubled", "")
    row["exit"] = local.returncode
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp")
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--binary", default=os.path.join(REPO, "build/bin/syncopate"))
    args = parser.parse_args()
    if args.events < 1:
        parser.error("--events must be at least 1")
    if not os.access(args.binary, os.X_OK):
        parser.error("no syncopate binary at %s (./scripts/build.sh syncopate)" % args.binary)
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    rows = [soak(mode, args.events, rng, args.out, args.binary) for mode in args.modes.split(",")]
    columns = ["mode", "events", "kills", "pauses", "restarts", "stalls", "hang", "evicted",
               "grant_errors", "push_errors", "rounds_lost", "resent", "audited", "lost_pushes",
               "doubled_pushes", "exit", "failure"]
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    report = "\n".join(lines)
    print(report)
    with open(os.path.join(args.out, "soak.md"), "w") as f:
        f.write(report + "\n")
    bad = any(r["stalls"] or r["hang"] or r["evicted"] or r.get("grant_errors") or
              r.get("push_errors") or r.get("lost_pushes") or r.get("doubled_pushes") or
              r.get("failure") for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
