#!/usr/bin/env python3
"""Fashion-MNIST with a CNN defined in PyTorch, trained as one trainer of a Syncopate job.

The sync mode is the job's (the coordinator's --mode), so this one script runs under every mode.
Under `syncopate local --trainer-command='python3 examples/pytorch/train.py'` every setting comes
from the SYNCOPATE_* environment; run by hand, pass --coordinator (and --rank/--world to shard) and
set SYNCOPATE_TLS_DIR to this trainer's certificate directory (or SYNCOPATE_INSECURE=1 for a job
without TLS; docs/security.md).
The Syncopate part is three lines: attach, step, and report_accuracy (here from a background
evaluation, so that evaluating never holds up the job).
"""

import argparse
import copy
import gzip
import os
import sys
import threading

import numpy as np
import torch
import torch.nn.functional as F

import syncopate
import syncopate.torch

DATA_DIR = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def load(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(images.astype(np.float32) / 255.0), torch.from_numpy(labels.astype(np.int64))


class Cnn(torch.nn.Module):
    """Two conv+pool blocks and a dense layer: the shape of Syncopate's built-in --model=cnn."""

    def __init__(self, hidden=128):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = torch.nn.Linear(16 * 7 * 7, hidden)
        self.fc2 = torch.nn.Linear(hidden, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class BasicBlock(torch.nn.Module):
    """Two 3x3 convolutions with batch norm and an identity (or 1x1, when the shape changes)
    shortcut: the block of He et al.'s CIFAR ResNets."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(inputs, outputs, 3, stride, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(outputs)
        self.conv2 = torch.nn.Conv2d(outputs, outputs, 3, 1, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(outputs)
        self.shortcut = torch.nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = torch.nn.Sequential(
                torch.nn.Conv2d(inputs, outputs, 1, stride, bias=False), torch.nn.BatchNorm2d(outputs))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(torch.nn.Module):
    """A small ResNet for 28x28 images (the CIFAR layout of He et al. with two blocks per stage:
    16, 32, 64 channels, 14 layers, 0.17 M parameters): a compute-heavier step, about 15x the
    CNN's on a CPU core (176 ms against 12 ms for a batch of 64), with BatchNorm buffers that
    attach() synchronises too."""

    def __init__(self, widths=(16, 32, 64), blocks=2):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(1, widths[0], 3, padding=1, bias=False), torch.nn.BatchNorm2d(widths[0]),
            torch.nn.ReLU())
        layers, inputs = [], widths[0]
        for stage, width in enumerate(widths):
            for block in range(blocks):
                layers.append(BasicBlock(inputs, width, 2 if stage > 0 and block == 0 else 1))
                inputs = width
        self.stages = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(inputs, 10)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class BuiltinMlp(torch.nn.Module):
    """The tensors of syncopate-trainer --model=mlp (fc<i>/weight as in x out, fc<i>/bias), so
    PyTorch trainers and built-in ones can train one model together."""

    def __init__(self, hidden=128):
        super().__init__()
        sizes = [28 * 28, hidden, 10]
        self.layers = len(sizes) - 1
        for i in range(self.layers):
            bound = 1.0 / sizes[i] ** 0.5
            weight = torch.empty(sizes[i], sizes[i + 1]).uniform_(-bound, bound)
            self.register_parameter(f"fc{i + 1}/weight", torch.nn.Parameter(weight))
            self.register_parameter(f"fc{i + 1}/bias", torch.nn.Parameter(torch.zeros(sizes[i + 1])))

    def forward(self, x):
        x = x.flatten(1)
        for i in range(self.layers):
            x = x @ getattr(self, f"fc{i + 1}/weight") + getattr(self, f"fc{i + 1}/bias")
            if i + 1 < self.layers:
                x = F.relu(x)
        return x


MODELS = {"cnn": Cnn, "resnet": ResNet, "mlp": BuiltinMlp}


class BackgroundEvaluator:
    """Evaluates a copy of the model on its own thread, so that an evaluation never holds up this
    trainer's steps (and, under bsp, everyone's rounds); the accuracy goes to the job when done."""

    def __init__(self, sync, images, labels):
        self.sync, self.images, self.labels = sync, images, labels
        self.thread = None

    def maybe_start(self, model):
        if not self.sync.evaluation_due or (self.thread and self.thread.is_alive()):
            return
        snapshot = copy.deepcopy(model).eval()
        self.thread = threading.Thread(target=self._run, args=(snapshot,), daemon=True)
        self.thread.start()

    def wait(self):
        """Waits for an evaluation in progress: a script must not exit while a thread of its own
        runs PyTorch (the interpreter's exit would tear torch down under it)."""
        if self.thread:
            self.thread.join()

    def _run(self, model):
        self.sync.report_accuracy(self.accuracy(model))

    def accuracy(self, model):
        with torch.no_grad():
            predicted = model(self.images).argmax(1)
        return (predicted == self.labels).float().mean().item()


def env(name, default):
    """A job setting from `syncopate local` or the chart (SYNCOPATE_<name>)."""
    return syncopate.environment(f"SYNCOPATE_{name}", str(default))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coordinator", default=None, help="host:port (default $SYNCOPATE_COORDINATOR)")
    parser.add_argument("--rank", type=int, default=int(env("RANK", 0)))
    parser.add_argument("--world", type=int, default=int(env("WORLD", 1)), help="number of data shards")
    parser.add_argument("--data-shard", type=int, default=int(env("DATA_SHARD", -1)), help="default: --rank")
    parser.add_argument("--learning-rate", type=float, default=float(env("LEARNING_RATE", 0.05)))
    parser.add_argument("--batch-size", type=int, default=int(env("BATCH_SIZE", 64)))
    parser.add_argument("--seed", type=int, default=int(env("SEED", 1)))
    parser.add_argument("--data-dir", default=env("DATA_DIR", DATA_DIR))
    parser.add_argument("--model", choices=sorted(MODELS), default="cnn",
                        help="cnn; resnet, a compute-heavier step; or mlp, the built-in trainer's MLP, "
                             "to mix with built-in trainers")
    parser.add_argument("--eval-samples", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--device", default=env("DEVICE", "cpu"),
                        help="cpu, cuda[:N], or auto (a GPU when there is one)")
    args = parser.parse_args()
    shard = args.rank if args.data_shard < 0 else args.data_shard
    if not 0 <= shard < args.world:
        parser.error(f"data shard {shard} must be in [0, {args.world})")

    torch.set_num_threads(args.threads)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)
    images, labels = load(args.data_dir, "train")
    images, labels = images[shard :: args.world].to(device), labels[shard :: args.world].to(device)
    test_images, test_labels = load(args.data_dir, "test")
    test_images = test_images[: args.eval_samples].to(device)
    test_labels = test_labels[: args.eval_samples].to(device)

    torch.manual_seed(args.seed)  # every trainer offers the same initial model
    model = MODELS[args.model]().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    sync = syncopate.torch.attach(model, coordinator=args.coordinator, rank=args.rank)
    print(f"joined the {sync.mode} job as trainer {sync.trainer_id}; {len(labels)} examples in shard "
          f"{shard}/{args.world}", flush=True)

    evaluator = BackgroundEvaluator(sync, test_images, test_labels)
    order = torch.Generator().manual_seed(args.seed * 1000003 + args.rank)
    try:
        while True:
            for batch in torch.randperm(len(labels), generator=order).to(device).split(args.batch_size):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(images[batch]), labels[batch])
                loss.backward()
                optimizer.step()
                if not sync.step(loss.item()):
                    if sync.final_evaluation_due:  # dssync ends with one model: the final average
                        sync.close(final_accuracy=evaluator.accuracy(model.eval()))
                    return 0
                evaluator.maybe_start(model)
    except syncopate.SyncopateError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 3 if e.code == "ABORTED" else 1
    finally:
        print(f"leaving after {sync.steps} steps", flush=True)
        evaluator.wait()
        sync.close()


if __name__ == "__main__":
    sys.exit(main())
