#!/usr/bin/env python3
"""PyTorch's training throughput for Syncopate's CNN, the reference of bench/cnn_bench.sh.

The network, optimizer and loss are those of services/compute/cpu_models.h with the default
ModelSpec: two blocks of 5x5 "same" conv (16, then 32 filters) + ReLU + 2x2 max pool, then
1568-128-10 dense layers, softmax cross-entropy, plain SGD. Like Syncopate's TrainStep, each step
reads its loss back to the host. FP32 throughout: TF32 is off for cuDNN and matmuls, as in
Syncopate's CUDA backend; cuDNN picks algorithms by timing them (benchmark mode), as Syncopate does.
Prints one line of JSON.
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
from torch import nn


def load_fashion_mnist(directory):
    with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(directory, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.manual_seed(1)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device)

    model = nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    loss_fn = nn.CrossEntropyLoss()
    images, labels = load_fashion_mnist(args.data_dir)
    batches = len(labels) // args.batch_size

    def step(i):
        start = (i % batches) * args.batch_size
        # Host batches, copied up each step, as a trainer's batches are.
        x = torch.from_numpy(images[start:start + args.batch_size]).to(device, non_blocking=True)
        y = torch.from_numpy(labels[start:start + args.batch_size]).to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    for i in range(args.warmup):
        step(i)
    begin = time.perf_counter()
    for i in range(args.steps):
        loss = step(args.warmup + i)
    seconds = time.perf_counter() - begin
    print(json.dumps({
        "framework": "pytorch " + torch.__version__, "device": args.device, "model": "cnn",
        "batch": args.batch_size, "steps": args.steps,
        "samples_per_second": round(args.steps * args.batch_size / seconds, 1),
        "last_loss": round(loss, 4), "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
