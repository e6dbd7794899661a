#!/usr/bin/env python3
"""The PyTorch DDP baseline of bench/README.md: examples/pytorch/train.py's model and data, trained
by N processes under torch.nn.parallel.DistributedDataParallel (gloo, 127.0.0.1), each rank's steps
stretched to its slowdown, until the test accuracy reaches the target.

Matched to `syncopate local --trainer-command='... train.py'`: the same model, seed, data shards
(rank::world), batch size, learning rate and SGD; the same background evaluator (examples/pytorch,
every --eval-interval seconds on --eval-samples test images, reported when done); time counted
from the moment every rank is ready to train. A step's slowdown: each rank first times its own
forward and backward (20 local steps, no communication), then sleeps (F - 1) x that time before
every step, as Syncopate's session does after each. Prints one JSON line: seconds to the target,
steps, final accuracy.
"""

import argparse
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/pytorch"))
import train  # noqa: E402  (the example: model, data, evaluator)


class Accuracy:
    """train.BackgroundEvaluator's reporting side, without a Syncopate session."""

    def __init__(self, interval):
        self.interval, self.last, self.value, self.at = interval, float("-inf"), None, None
        self.evaluation_due = True
        self.lock = threading.Lock()

    def report_accuracy(self, accuracy):
        with self.lock:
            self.value, self.at = accuracy, time.monotonic()
            self.evaluation_due = False

    def tick(self):
        now = time.monotonic()
        if now - self.last >= self.interval and not self.evaluation_due:
            self.evaluation_due, self.last = True, now


def run(rank, args, port, result):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world)
    images, labels = train.load(args.data_dir, "train")
    images, labels = images[rank :: args.world], labels[rank :: args.world]
    torch.manual_seed(args.seed)
    model = train.Cnn() if args.model == "cnn" else train.BuiltinMlp()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.learning_rate)
    order = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    slowdown = args.slowdowns[rank]

    # Each rank's own compute time per step, without communication.
    with ddp.no_sync():
        begin = time.perf_counter()
        for batch in torch.randperm(len(labels), generator=order)[: 20 * args.batch_size].split(args.batch_size):
            F.cross_entropy(ddp(images[batch]), labels[batch]).backward()
        step_compute = (time.perf_counter() - begin) / 20
    optimizer.zero_grad()

    accuracy = evaluator = None
    if rank == 0:
        test_images, test_labels = train.load(args.data_dir, "test")
        accuracy = Accuracy(args.eval_interval)
        evaluator = train.BackgroundEvaluator(accuracy, test_images[: args.eval_samples],
                                              test_labels[: args.eval_samples])
    stop = torch.zeros(1)
    dist.barrier()
    start = time.monotonic()
    steps = 0
    reached = None
    while stop.item() == 0:
        for batch in torch.randperm(len(labels), generator=order).split(args.batch_size):
            if slowdown > 1:
                time.sleep((slowdown - 1) * step_compute)
            optimizer.zero_grad()
            F.cross_entropy(ddp(images[batch]), labels[batch]).backward()
            optimizer.step()
            steps += 1
            if rank == 0:
                accuracy.tick()
                evaluator.maybe_start(model)
                with accuracy.lock:
                    done = accuracy.value is not None and accuracy.value >= args.target_accuracy
                    if done and reached is None:
                        reached = accuracy.at - start
                timed_out = time.monotonic() - start > args.time_limit
                stop.fill_(1.0 if done or timed_out else 0.0)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)  # every rank stops at the same step
            if stop.item() != 0:
                break
    if rank == 0:
        if evaluator.thread:
            evaluator.thread.join()
        result.put({"seconds_to_target": reached, "steps": steps,
                    "final_accuracy": accuracy.value, "wall_seconds": time.monotonic() - start,
                    "step_compute_seconds": step_compute})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slowdown", default="1,1,2,4", help="one factor per rank")
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target-accuracy", type=float, default=0.85)
    parser.add_argument("--time-limit", type=float, default=300)
    parser.add_argument("--eval-interval", type=float, default=1.0)
    parser.add_argument("--eval-samples", type=int, default=10000)
    parser.add_argument("--data-dir", default=train.DATA_DIR)
    parser.add_argument("--port", type=int, default=29517)
    args = parser.parse_args()
    args.slowdowns = [float(s) for s in args.slowdown.split(",")]
    args.world = len(args.slowdowns)
    result = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(args, args.port, result), nprocs=args.world, join=True)
    print(json.dumps(result.get()))


if __name__ == "__main__":
    main()
