"""syncopate.torch, and the PyTorch example, against a real store and coordinator."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import syncopate
import syncopate.torch
import torch

EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/pytorch/train.py")


def attach_both(models, cluster, **options):
    """Attaches two models as ranks 0 and 1 of a two-trainer job (attach waits for both)."""
    syncs = [None, None]

    def join(rank):
        syncs[rank] = syncopate.torch.attach(models[rank], coordinator=cluster.coordinator, rank=rank,
                                             **options)

    t = threading.Thread(target=join, args=(1,))
    t.start()
    join(0)
    t.join(timeout=60)
    return syncs


def step_both(syncs, losses):
    t = threading.Thread(target=lambda: syncs[1].step(losses[1]))
    t.start()
    assert syncs[0].step(losses[0]) is True
    t.join(timeout=60)


def train_step(model, inputs):
    """One SGD step on `inputs` (train mode); returns the loss."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(inputs).sum()
    loss.backward()
    optimizer.step()
    return loss.item()


def test_parameters_are_shared_not_copied(cluster):
    cluster.start(mode="bsp", trainers=2)
    models, pointers, stepped, losses = [], [], [], []
    for rank in range(2):
        torch.manual_seed(0)  # the same initial model
        models.append(torch.nn.Linear(4, 3))
        pointers.append({n: p.data_ptr() for n, p in models[-1].named_parameters()})
    syncs = attach_both(models, cluster)
    assert all(syncopate.torch.shares_memory(p) for p in models[0].parameters())
    for rank, model in enumerate(models):  # different data: different steps
        losses.append(train_step(model, torch.full((2, 4), float(rank + 1))))
        stepped.append({n: p.detach().clone() for n, p in model.named_parameters()})
    step_both(syncs, losses)
    for rank, model in enumerate(models):
        for n, p in model.named_parameters():
            assert p.data_ptr() == pointers[rank][n]  # the same memory, written in place
            mean_step = (stepped[0][n] + stepped[1][n]) / 2
            torch.testing.assert_close(p.detach(), mean_step)
            if n == "weight":  # (the bias's gradient does not depend on the data)
                assert not torch.allclose(p.detach(), stepped[rank][n])
    for sync in syncs:
        sync.close()


def batch_norm_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))


def test_floating_point_buffers_are_synchronised_integer_ones_stay_local(cluster):
    cluster.start(mode="bsp", trainers=2)
    models = [batch_norm_model(), batch_norm_model()]
    assert set(syncopate.torch.synchronised_tensors(models[0])) == {
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"}
    syncs = attach_both(models, cluster)
    losses, statistics = [], []
    for rank, model in enumerate(models):  # different data: different running statistics
        losses.append(train_step(model, torch.arange(8.0).reshape(2, 4) * (rank + 1)))
        statistics.append(model[1].running_mean.clone())
    assert not torch.allclose(statistics[0], statistics[1])
    step_both(syncs, losses)
    for model in models:
        torch.testing.assert_close(model[1].running_mean, (statistics[0] + statistics[1]) / 2)
        assert model[1].num_batches_tracked.item() == 1  # an integer buffer: each trainer's own
    for sync in syncs:
        sync.close()


def test_buffers_false_synchronises_only_parameters():
    assert set(syncopate.torch.synchronised_tensors(batch_norm_model(), buffers=False)) == {
        "0.weight", "0.bias", "1.weight", "1.bias"}


def test_the_resnet_example_trains_under_the_job(cluster, tmp_path):
    cluster.start(mode="bsp", trainers=1)
    env = dict(os.environ, SYNCOPATE_COORDINATOR=cluster.coordinator, SYNCOPATE_MAX_STEPS="3")
    done = subprocess.run([sys.executable, EXAMPLE, "--model=resnet", "--eval-samples=64"], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "joined the bsp job" in done.stdout
    assert "leaving after 3 steps" in done.stdout


def test_load_into_checks_every_name_and_shape_before_changing_anything(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    trained = {n: torch.full_like(t, 0.5) for n, t in syncopate.torch.synchronised_tensors(model).items()}
    np.savez(tmp_path / "model.npz", **{n: t.numpy() for n, t in trained.items()})
    torch.save(trained, tmp_path / "model.pt")
    for name in ("model.npz", "model.pt"):
        fresh = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
        syncopate.torch.load_into(fresh, str(tmp_path / name))
        for n, t in syncopate.torch.synchronised_tensors(fresh).items():
            assert torch.equal(t, trained[n]), (name, n)
    # Another model: refused, naming the mismatches, and left as it was.
    other = torch.nn.Sequential(torch.nn.Linear(3, 4))
    before = other[0].weight.detach().clone()
    with pytest.raises(syncopate.SyncopateError) as refused:
        syncopate.torch.load_into(other, str(tmp_path / "model.pt"))
    assert refused.value.code == "INVALID_ARGUMENT"
    assert "0.weight: shape (2, 3) in the file, (4, 3) in the model" in refused.value.message
    assert "1.running_mean: not in the model" in refused.value.message
    assert torch.equal(other[0].weight, before)
    with pytest.raises(syncopate.SyncopateError):
        syncopate.torch.load_into(model, str(tmp_path / "model.bin"))


def test_save_model_writes_what_load_into_reads_by_the_models_own_names(tmp_path):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    model[1].running_mean.fill_(0.25)
    unsaved = tmp_path / "unsaved.npz"
    sync = syncopate.torch.attach(model, start=False, coordinator="127.0.0.1:1", save_model=str(unsaved))
    paths = [str(tmp_path / "model.npz"), tmp_path / "model.pt"]  # a str and an os.PathLike
    with pytest.raises(syncopate.SyncopateError) as refused:
        sync.save_model([paths[0], str(tmp_path / "model.bin")])
    assert refused.value.code == "INVALID_ARGUMENT"
    assert not os.path.exists(paths[0]), "nothing is written when a path is refused"
    sync.save_model(paths)
    for path in paths:
        fresh = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
        syncopate.torch.load_into(fresh, path)
        for name, tensor in syncopate.torch.synchronised_tensors(fresh).items():
            assert torch.equal(tensor, syncopate.torch.synchronised_tensors(model)[name]), (path, name)
    sync.close()
    assert not unsaved.exists(), "close() before a clean end (no step returned False) saves nothing"


class _FakeWorld:
    """What ShardSampler reads of a session: world_rank and world_size, changed by the test."""

    def __init__(self, rank, size):
        self.world_rank, self.world_size = rank, size


def test_shard_sampler_gives_live_trainers_disjoint_parts_and_reshards_when_one_leaves():
    data = list(range(100))
    worlds = [_FakeWorld(r, 3) for r in range(3)]
    samplers = [syncopate.torch.ShardSampler(data, w, seed=7) for w in worlds]
    # A whole epoch in a world of three: disjoint parts that cover the dataset.
    parts = [list(s) for s in samplers]
    assert sorted(sum(parts, [])) == data
    assert len(set(parts[0]) & set(parts[1])) == 0
    assert [len(s) for s in samplers] == [34, 33, 33]
    # The next epoch is another permutation, the same on every trainer.
    again = [list(s) for s in samplers]
    assert again != parts and sorted(sum(again, [])) == data
    # In step (as under bsp) for 10 samples each, then trainer 2 leaves: the two left read the
    # rest of the epoch between them, nothing twice and nothing missed.
    iterators = [iter(s) for s in samplers]
    seen = [next(it) for _ in range(10) for it in iterators]
    worlds[2].world_rank, worlds[2].world_size = 0, 0  # gone
    worlds[0].world_size = worlds[1].world_size = 2
    rest = list(iterators[0]) + list(iterators[1])
    assert sorted(seen + rest) == data


def test_tensors_the_library_cannot_address_are_staged_through_one_flat_buffer(cluster):
    # float64 parameters (as CUDA ones would be) go through one flat float32 host buffer per
    # device, copied once each way per step: the round's mean step reaches them all the same.
    cluster.start(mode="bsp", trainers=2)
    models, stepped, losses = [], [], []
    for rank in range(2):
        torch.manual_seed(0)
        models.append(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).double())
    syncs = attach_both(models, cluster)
    assert not any(syncopate.torch.shares_memory(p) for p in models[0].parameters())
    assert len(syncs[0]._staging._groups) == 1  # one device, one buffer
    for rank, model in enumerate(models):
        losses.append(train_step(model, torch.full((2, 4), float(rank + 1), dtype=torch.float64)))
        stepped.append({n: p.detach().clone() for n, p in model.named_parameters()})
    step_both(syncs, losses)
    for model in models:
        for n, p in model.named_parameters():
            mean_step = (stepped[0][n] + stepped[1][n]) / 2
            torch.testing.assert_close(p.detach(), mean_step, rtol=1e-6, atol=1e-6)
    for sync in syncs:
        sync.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA build of PyTorch and a GPU")
@pytest.mark.parametrize("mode", ["bsp", "wbsp-overlap"])
def test_cuda_parameters_train_under_the_job(cluster, mode):
    # CUDA tensors through the flat pinned buffers: the models stay on the GPU and take the job's.
    cluster.start(mode=mode, trainers=2)
    models = []
    for rank in range(2):
        torch.manual_seed(0)
        models.append(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).cuda())
    syncs = attach_both(models, cluster)
    assert syncs[0]._staging._groups[0][1].is_pinned()
    for _ in range(20):
        losses = [train_step(m, torch.randn(8, 4, device="cuda")) for m in models]
        step_both(syncs, losses)
    for model in models:
        assert all(p.is_cuda and torch.isfinite(p).all() for p in model.parameters())
    if mode == "bsp":  # every trainer holds the same round
        for a, b in zip(models[0].parameters(), models[1].parameters()):
            torch.testing.assert_close(a, b)
    for sync in syncs:
        sync.close()
