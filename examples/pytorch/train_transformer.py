#!/usr/bin/env python3
"""A realistic training job under Syncopate: a small transformer encoder over image patches
(a ViT) on Fashion-MNIST, fed by a DataLoader whose ShardSampler splits each epoch among the
trainers in the job, trained with AdamW and a warm-up + cosine learning-rate schedule, with
periodic checkpoints it resumes from, and the final model saved at the end.

    syncopate local --mode=bsp --trainers=3 --max-steps=600 \\
      --trainer-command='exec /usr/bin/python3 examples/pytorch/train_transformer.py'

What Syncopate adds to an ordinary loop: attach (after the model is built and restored), the
sampler, `step` after `optimizer.step()`, `report_accuracy` from a background evaluation, and
`with sync.paused():` around the checkpoint save, so a slow disk is not taken for a stuck trainer.
The optimizer's state and the schedule are each trainer's own: they are in its checkpoint, not in
the job's model (docs/python.md).

Settings come from the SYNCOPATE_* environment (`syncopate local`, the Helm chart) or the flags:
SYNCOPATE_CHECKPOINT_DIR (where each trainer keeps its checkpoint; none: no checkpoints) and
SYNCOPATE_MODEL_DIR (where rank 0 writes the final model.pt; none: not written).
"""

import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

import syncopate
import syncopate.torch
from train import DATA_DIR, BackgroundEvaluator, env, load


class PatchTransformer(torch.nn.Module):
    """28x28 images cut into 4x4 patches (49 tokens), embedded, a learned class token and
    positions, then a pre-norm transformer encoder and a linear head on the class token."""

    def __init__(self, dim=48, depth=2, heads=4, patch=4):
        super().__init__()
        self.patch = patch
        tokens = (28 // patch) ** 2
        self.embed = torch.nn.Linear(patch * patch, dim)
        self.cls = torch.nn.Parameter(torch.zeros(1, 1, dim))
        self.position = torch.nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                                 batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, 10)

    def forward(self, x):
        p = self.patch
        patches = x.unfold(2, p, p).unfold(3, p, p).reshape(x.shape[0], -1, p * p)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.embed(patches)], dim=1)
        encoded = self.encoder(tokens + self.position)
        return self.head(self.norm(encoded[:, 0]))


def schedule(warmup, total):
    """The learning-rate factor at each step: linear warm-up, then a cosine decay to 10%."""

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coordinator", default=None, help="host:port (default $SYNCOPATE_COORDINATOR)")
    parser.add_argument("--rank", type=int, default=int(env("RANK", 0)))
    parser.add_argument("--learning-rate", type=float, default=float(os.environ.get("SYNCOPATE_EXAMPLE_LR", 0.003)),
                        help="AdamW's peak rate (the CLI's SYNCOPATE_LEARNING_RATE is for SGD)")
    parser.add_argument("--batch-size", type=int, default=int(env("BATCH_SIZE", 64)))
    parser.add_argument("--seed", type=int, default=int(env("SEED", 1)))
    parser.add_argument("--data-dir", default=env("DATA_DIR", DATA_DIR))
    parser.add_argument("--schedule-steps", type=int, default=int(env("MAX_STEPS", 0)) or 2000,
                        help="steps of the cosine schedule (default: SYNCOPATE_MAX_STEPS, else 2000)")
    parser.add_argument("--checkpoint-dir", default=env("CHECKPOINT_DIR", ""))
    parser.add_argument("--checkpoint-every", type=int, default=200, help="steps between checkpoints")
    parser.add_argument("--model-dir", default=env("MODEL_DIR", ""))
    parser.add_argument("--eval-samples", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    images, labels = load(args.data_dir, "train")
    test_images, test_labels = load(args.data_dir, "test")
    dataset = torch.utils.data.TensorDataset(images, labels)

    torch.manual_seed(args.seed)  # every trainer offers the same initial model
    model = PatchTransformer()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule(100, args.schedule_steps))
    checkpoint = os.path.join(args.checkpoint_dir, f"trainer-{args.rank}.pt") if args.checkpoint_dir else ""
    resumed_at = 0
    if checkpoint and os.path.exists(checkpoint):
        # Before attach: the trainer offers what it restored (the job keeps its own model if it has
        # one), and its optimizer and schedule go on where they were.
        state = torch.load(checkpoint)  # this trainer's own file (optimizer state holds floats)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        resumed_at = state["step"]
        print(f"resumed from {checkpoint} at step {resumed_at}", flush=True)

    sync = syncopate.torch.attach(model, coordinator=args.coordinator, rank=args.rank)
    sampler = syncopate.torch.ShardSampler(dataset, sync, seed=args.seed)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    print(f"joined the {sync.mode} job as trainer {sync.trainer_id}, {sync.world_rank + 1} of {sync.world_size}",
          flush=True)

    evaluator = BackgroundEvaluator(sync, test_images[: args.eval_samples], test_labels[: args.eval_samples])
    step = resumed_at
    try:
        while True:
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                step += 1
                if not sync.step(loss.item()):
                    if sync.final_evaluation_due:
                        sync.close(final_accuracy=evaluator.accuracy(model.eval()))
                    return 0
                evaluator.maybe_start(model)
                if checkpoint and step % args.checkpoint_every == 0:
                    with sync.paused():  # a slow disk is not a stuck trainer
                        os.makedirs(args.checkpoint_dir, exist_ok=True)
                        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                    "scheduler": scheduler.state_dict(), "step": step}, checkpoint + ".partial")
                        os.replace(checkpoint + ".partial", checkpoint)
    except syncopate.SyncopateError as e:
        print(f"train_transformer.py: {e}", file=sys.stderr)
        return 3 if e.code == "ABORTED" else 1
    finally:
        print(f"leaving after {sync.steps} steps ({step} in all)", flush=True)
        evaluator.wait()
        if args.model_dir and args.rank == 0:
            os.makedirs(args.model_dir, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(args.model_dir, "model.pt"))
        sync.close()


if __name__ == "__main__":
    sys.exit(main())
