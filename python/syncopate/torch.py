"""Syncopate for PyTorch: attach a model's parameters to a job, then call step() after each
optimizer step.

    import syncopate.torch
    sync = syncopate.torch.attach(model)          # options as syncopate.Session's
    for x, y in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if not sync.step(loss.item()):
            break
    sync.close()

CPU float32 parameters are shared with the library without copies (it reads and writes the
tensors' own memory). Other parameters (CUDA tensors, float16/bfloat16/float64) are staged through
one flat float32 host buffer per device, pinned for a GPU: one copy each way per step. Floating-point buffers, such as BatchNorm's
running statistics, are synchronised like parameters unless buffers=False; integer buffers (such
as num_batches_tracked) stay each trainer's own.
"""

import os
from typing import Dict, Mapping

import numpy as np
import torch

from . import Session, SyncopateError

__all__ = ["ShardSampler", "attach", "load_into", "shares_memory", "synchronised_tensors"]


def shares_memory(tensor: torch.Tensor) -> bool:
    """Whether attach() shares this tensor's memory rather than staging it."""
    return tensor.device.type == "cpu" and tensor.dtype == torch.float32 and tensor.is_contiguous()


class _FlatStaging:
    """Tensors the library cannot address (CUDA tensors; float16, bfloat16, float64), staged
    through one flat float32 host buffer per device, pinned for a GPU: before each start()/step()
    the tensors are gathered on their device into one flat buffer and copied to the host in one
    transfer; after it, one transfer back, then scattered. The library reads and writes views of
    the host buffer as if they were the parameters (no Python call per tensor)."""

    def __init__(self, session: Session, tensors: Dict[str, torch.Tensor]):
        self._groups = []
        by_device: Dict[torch.device, Dict[str, torch.Tensor]] = {}
        for name, tensor in tensors.items():
            by_device.setdefault(tensor.device, {})[name] = tensor
        for device, group in by_device.items():
            total = sum(t.numel() for t in group.values())
            pin = device.type == "cuda"
            host = torch.empty(total, dtype=torch.float32, pin_memory=pin)
            flat = torch.empty(total, dtype=torch.float32, device=device)
            host_array = host.numpy()
            slices, offset = [], 0
            for name, tensor in group.items():
                n = tensor.numel()
                session.add(name, host_array[offset : offset + n].reshape(tuple(tensor.shape) or (1,)))
                slices.append((tensor, offset, n))
                offset += n
            self._groups.append((device, host, flat, slices))

    def to_host(self) -> None:
        with torch.no_grad():
            for device, host, flat, slices in self._groups:
                for tensor, offset, n in slices:
                    flat[offset : offset + n].copy_(tensor.reshape(-1))
                host.copy_(flat, non_blocking=False)

    def from_host(self) -> None:
        with torch.no_grad():
            for device, host, flat, slices in self._groups:
                flat.copy_(host, non_blocking=device.type == "cuda")
                for tensor, offset, n in slices:
                    tensor.copy_(flat[offset : offset + n].view(tensor.shape))


def synchronised_tensors(model: torch.nn.Module, buffers: bool = True) -> Dict[str, torch.Tensor]:
    """What attach() registers, by name: every trainable parameter and, if `buffers`, every
    floating-point buffer (names as in named_parameters and named_buffers, which never clash)."""
    tensors: Dict[str, torch.Tensor] = {n: p for n, p in model.named_parameters() if p.requires_grad}
    if buffers:
        tensors.update((n, b) for n, b in model.named_buffers() if b.is_floating_point())
    return tensors


def attach(model: torch.nn.Module, start: bool = True, buffers: bool = True, **options) -> Session:
    """Registers `model`'s synchronised_tensors with a new syncopate.Session and, unless
    start=False, starts it: on return the model holds the job's model. `options` are Session's
    (coordinator=..., or the SYNCOPATE_* environment)."""
    tensors = synchronised_tensors(model, buffers)
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("the model has no trainable parameters")
    session = Session(**options)
    staged = {}
    for name, tensor in tensors.items():
        if shares_memory(tensor):
            session.add(name, tensor.detach().numpy())
        else:
            staged[name] = tensor.detach()
    if staged:
        session._staging = _FlatStaging(session, staged)
    if start:
        session.start()
    return session


def _read_model_file(path: str) -> Mapping[str, torch.Tensor]:
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as f:
            return {name: torch.from_numpy(f[name]) for name in f.files}
    if path.endswith(".pt"):
        values = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(values, Mapping):
            raise SyncopateError("INVALID_ARGUMENT", f"{path} holds no state dict")
        return values
    raise SyncopateError("INVALID_ARGUMENT", f"{path}: a model file ends in .npz or .pt")


def _fits(value: torch.Tensor, tensor: torch.Tensor) -> bool:
    """The file's tensor has the model's shape, or is flat with as many elements: the store keeps
    each tensor's values in order, not its shape, so a job's model files hold flat tensors."""
    if tuple(value.shape) == tuple(tensor.shape):
        return True
    return value.dim() == 1 and value.numel() == tensor.numel()


def load_into(model: torch.nn.Module, path, buffers: bool = True) -> None:
    """Loads a trained model that a job wrote (RUN_DIR/model.npz or model.pt, or `syncopate
    export`; a str or os.PathLike) into `model`'s synchronised_tensors, by name, on whatever device they are; a flat
    tensor (the job's files hold them flat) takes the model's shape. Every name and size is checked
    first: on a mismatch (a tensor missing from the file or the model, another
    shape) SyncopateError INVALID_ARGUMENT says which, and the model is unchanged. Integer buffers
    and the optimizer's state are not in the file (each trainer keeps its own)."""
    path = os.fspath(path)
    values = _read_model_file(path)
    tensors = synchronised_tensors(model, buffers)
    problems = [f"{name}: not in the file" for name in sorted(set(tensors) - set(values))]
    problems += [f"{name}: not in the model" for name in sorted(set(values) - set(tensors))]
    problems += [
        f"{name}: shape {tuple(values[name].shape)} in the file, {tuple(t.shape)} in the model"
        for name, t in tensors.items()
        if name in values and not _fits(values[name], t)
    ]
    if problems:
        raise SyncopateError("INVALID_ARGUMENT", f"{path} does not fit the model: " + "; ".join(problems))
    with torch.no_grad():
        for name, tensor in tensors.items():
            tensor.copy_(values[name].reshape(tensor.shape).to(dtype=tensor.dtype))


class ShardSampler(torch.utils.data.Sampler):
    """A DataLoader sampler that gives each trainer in the job a disjoint part of every epoch, and
    re-shards as trainers join and leave (where DistributedSampler assumes a fixed world).

    Every trainer draws the same permutation of the dataset's indices for an epoch (from `seed`
    and the epoch), and reads every world_size-th index of it from its world_rank on
    (Session.world_size, Session.world_rank: the live trainers, in the order of their ranks).
    When the job's membership changes during the epoch, the rest of the permutation is split
    anew among the trainers now in the job, from where the trainers have got to: this trainer's
    own progress times the old world size, which is where all are under a round mode (bsp, wbsp*,
    hybrid), and about where they are under the others. Each iter() is the next epoch, unless
    set_epoch chose one.

        sampler = syncopate.torch.ShardSampler(dataset, sync, seed=1)
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, sampler=sampler)
    """

    def __init__(self, dataset, session: Session, shuffle: bool = True, seed: int = 0):
        self._size = len(dataset)
        self._session = session
        self._shuffle = shuffle
        self._seed = seed
        self._epoch = 0
        self._next_epoch = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iter() samples (its permutation), as DistributedSampler's."""
        self._next_epoch = epoch

    def __len__(self) -> int:
        rank, size = self._session.world_rank, self._session.world_size
        return len(range(rank, self._size, size))

    def __iter__(self):
        if self._next_epoch is not None:
            self._epoch, self._next_epoch = self._next_epoch, None
        epoch = self._epoch
        self._epoch += 1
        if self._shuffle:
            order = torch.randperm(self._size, generator=torch.Generator().manual_seed(self._seed * 1000003 + epoch))
        else:
            order = torch.arange(self._size)
        start, taken = 0, 0
        rank, size = self._session.world_rank, self._session.world_size
        while True:
            position = start + taken * size + rank
            if position >= self._size:
                return
            yield int(order[position])
            taken += 1
            now = (self._session.world_rank, self._session.world_size)
            if now != (rank, size):
                # Where the job has got to in the epoch, then the rest split among the trainers now.
                start += taken * size
                taken = 0
                rank, size = now
