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
tensors' own memory). Other parameters (CUDA tensors) are staged through a host buffer, pinned
when CUDA is available. Only parameters are synchronised: buffers such as BatchNorm's running
statistics stay each trainer's own.
"""

from typing import Dict, Optional

import numpy as np
import torch

from . import Session

__all__ = ["attach", "shares_memory"]


def shares_memory(parameter: torch.Tensor) -> bool:
    """Whether attach() shares this parameter's memory rather than staging it."""
    return (
        parameter.device.type == "cpu"
        and parameter.dtype == torch.float32
        and parameter.is_contiguous()
    )


def _add_staged(session: Session, name: str, parameter: torch.nn.Parameter) -> None:
    pin = torch.cuda.is_available()
    staged = torch.empty(parameter.shape, dtype=torch.float32, pin_memory=pin)
    flat = staged.numpy().reshape(-1)

    def read(out: np.ndarray) -> None:
        with torch.no_grad():
            staged.copy_(parameter.detach())
        np.copyto(out, flat)

    def write(values: np.ndarray) -> None:
        np.copyto(flat, values)
        with torch.no_grad():
            parameter.copy_(staged)

    session.add_callbacks(name, list(parameter.shape) or [1], read, write)


def attach(model: torch.nn.Module, start: bool = True, **options) -> Session:
    """Registers every trainable parameter of `model` (by its name in named_parameters) with a new
    syncopate.Session and, unless start=False, starts it: on return the model holds the job's
    model. `options` are Session's (coordinator=..., or the SYNCOPATE_* environment)."""
    session = Session(**options)
    parameters: Dict[str, torch.nn.Parameter] = {
        name: p for name, p in model.named_parameters() if p.requires_grad
    }
    if not parameters:
        raise ValueError("the model has no trainable parameters")
    for name, parameter in parameters.items():
        if shares_memory(parameter):
            session.add(name, parameter.detach().numpy())
        else:
            _add_staged(session, name, parameter)
    if start:
        session.start()
    return session
