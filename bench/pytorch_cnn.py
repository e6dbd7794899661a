#!/usr/bin/env python3
"""PyTorch's training throughput for Syncopate's CNN, the reference of bench/cnn_bench.sh.

The network, optimizer and loss are those of services/compute/cpu_models.h with the default
ModelSpec: two blocks of 5x5 "same" conv (16, then 32 filters) + ReLU + 2x2 max pool, then
1568-128-10 dense layers, softmax cross-entropy, plain SGD. Like Syncopate's TrainStep, each step
reads its loss back to the host. FP32 throughout: TF32 is off for cuDNN and matmuls, as in
Syncopate's CUDA backend; cuDNN picks algorithms by timing them (benchmark mode), as Syncopate does.
With --cuda-graph (CUDA only), the whole step (forward, backward, SGD) is captured once in a CUDA
graph and replayed, PyTorch's own remedy for launch overhead on small models; the batch is still
copied up and the loss read back each step. Prints one line of JSON.
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


def graphed_step(model, optimizer, loss_fn, host_batch, device, warmup):
    """Captures one training step in a CUDA graph (after `warmup` eager steps on a side stream,
    as PyTorch's CUDA-graph notes require) and returns a step function that replays it."""
    x_host, y_host = host_batch(0)
    static_x = x_host.to(device)
    static_y = y_host.to(device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(max(warmup, 3)):
            x_host, y_host = host_batch(i)
            static_x.copy_(x_host)
            static_y.copy_(y_host)
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        optimizer.step()

    def step(i):
        x_host, y_host = host_batch(i)
        static_x.copy_(x_host, non_blocking=True)
        static_y.copy_(y_host, non_blocking=True)
        graph.replay()
        return static_loss.item()
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="capture the step in a CUDA graph and replay it (CUDA only)")
    args = parser.parse_args()
    if args.cuda_graph and args.device != "cuda":
        parser.error("--cuda-graph needs --device=cuda")

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

    def host_batch(i):
        start = (i % batches) * args.batch_size
        return (torch.from_numpy(images[start:start + args.batch_size]),
                torch.from_numpy(labels[start:start + args.batch_size]))

    def eager_step(i):
        # Host batches, copied up each step, as a trainer's batches are.
        x, y = (t.to(device, non_blocking=True) for t in host_batch(i))
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    step = eager_step
    if args.cuda_graph:
        step = graphed_step(model, optimizer, loss_fn, host_batch, device, args.warmup)

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
        "cuda_graph": args.cuda_graph,
    }))


if __name__ == "__main__":
    main()
