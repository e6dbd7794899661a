"""syncopate.Session and syncopate.torch against a real store and coordinator."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import syncopate


def w(*values):
    return np.array(values, dtype=np.float32)


def test_bad_parameters_are_errors_with_a_status():
    session = syncopate.Session(coordinator="127.0.0.1:1")
    with pytest.raises(syncopate.SyncopateError) as e:
        session.add("w", np.zeros(3, dtype=np.float64))
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(syncopate.SyncopateError) as e:
        session.add("w", np.zeros((4, 4), dtype=np.float32)[:, 1])  # not contiguous
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(syncopate.SyncopateError) as e:
        session.add_callbacks("w", [0, 3], lambda out: None, lambda values: None)  # empty shape
    assert e.value.code == "INVALID_ARGUMENT"
    session.add("w", w(1, 2))
    with pytest.raises(syncopate.SyncopateError) as e:
        session.add("w", w(1, 2))  # twice
    assert e.value.code == "INVALID_ARGUMENT"


def test_a_session_sets_grpcs_poll_engine_unless_the_user_chose_another():
    # In a fresh interpreter: how many epoll instances gRPC holds once a session has tried to
    # join (gRPC picks its engine when it first polls).
    code = """
import os, numpy, syncopate
session = syncopate.Session({"w": numpy.zeros(4, numpy.float32)}, coordinator="127.0.0.1:1",
                            join_timeout=0.2)
try:
    session.start()
except syncopate.SyncopateError:
    pass  # nobody listens there
links = []
for fd in os.listdir("/proc/self/fd"):
    try:
        links.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # the listing's own descriptor, closed since
        pass
print(links.count("anon_inode:[eventpoll]"))
"""

    def epolls(env):
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        return int(out.stdout.decode())

    names = ("GRPC_POLL_STRATEGY", "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS")
    env = {k: v for k, v in os.environ.items() if k not in names}
    assert epolls(env) == 0
    assert epolls({**env, names[0]: "epoll1"}) > 0


def test_options_come_from_arguments_or_the_environment(monkeypatch):
    monkeypatch.delenv("SYNCOPATE_COORDINATOR", raising=False)
    with pytest.raises(syncopate.SyncopateError) as e:
        syncopate.Session()
    assert e.value.code == "INVALID_ARGUMENT" and "SYNCOPATE_COORDINATOR" in e.value.message
    monkeypatch.setenv("SYNCOPATE_COORDINATOR", "10.0.0.1:5000")
    monkeypatch.setenv("SYNCOPATE_RANK", "3")
    monkeypatch.setenv("SYNCOPATE_SLOWDOWN", "not a number")
    with pytest.raises(syncopate.SyncopateError) as e:
        syncopate.Session()
    assert "SYNCOPATE_SLOWDOWN" in e.value.message
    monkeypatch.setenv("SYNCOPATE_SLOWDOWN", "2.5")
    monkeypatch.setenv("SYNCOPATE_EVAL_INTERVAL", "500ms")  # as the chart writes durations
    options = syncopate.Session(rank=4).options
    assert options["eval_interval"] == 0.5
    assert options["coordinator"] == "10.0.0.1:5000"
    assert options["rank"] == 4 and options["name"] == "trainer-4"
    assert options["slowdown"] == 2.5


def test_tls_or_insecure_must_be_chosen(monkeypatch):
    monkeypatch.delenv("SYNCOPATE_TLS_DIR")
    with pytest.raises(syncopate.SyncopateError) as e:
        syncopate.Session(coordinator="127.0.0.1:1")
    assert e.value.code == "INVALID_ARGUMENT" and "insecure" in e.value.message
    with pytest.raises(syncopate.SyncopateError):
        syncopate.Session(coordinator="127.0.0.1:1", tls_dir="/x", insecure=True)
    monkeypatch.setenv("SYNCOPATE_INSECURE", "true")
    assert syncopate.Session(coordinator="127.0.0.1:1").options["insecure"] is True
    monkeypatch.setenv("SYNCOPATE_INSECURE", "maybe")
    with pytest.raises(syncopate.SyncopateError) as e:
        syncopate.Session(coordinator="127.0.0.1:1")
    assert "SYNCOPATE_INSECURE" in e.value.message


def test_a_session_whose_certificate_directory_is_missing_fails_to_start(tmp_path):
    session = syncopate.Session({"w": w(0)}, coordinator="127.0.0.1:1", tls_dir=str(tmp_path / "none"))
    with pytest.raises(syncopate.SyncopateError) as e:
        session.start()
    assert e.value.code == "NOT_FOUND" and "ca.crt" in e.value.message


def test_bad_timeouts_and_limits_are_refused():
    for bad in (
        {"rpc_timeout": 0},
        {"join_timeout": -1},
        {"directive_timeout": "0s"},
        {"max_steps": -1},
        {"save_model": "model.npz,model.bin"},
    ):
        with pytest.raises(syncopate.SyncopateError) as e:
            syncopate.Session(coordinator="127.0.0.1:1", **bad)
        assert e.value.code == "INVALID_ARGUMENT", bad


def test_a_failing_callback_ends_the_session_with_its_exception(cluster):
    cluster.start(mode="bsp", trainers=1)
    failing = {"now": False}

    def read(out):
        if failing["now"]:  # join and start succeed; a later read fails
            raise MemoryError("device out of memory")
        out[:] = 0

    session = syncopate.Session(coordinator=cluster.coordinator)
    session.add_callbacks("w", [2], read, lambda values: None)
    session.start()
    failing["now"] = True
    with pytest.raises(MemoryError):
        for _ in range(5):
            session.step()
    with pytest.raises(syncopate.SyncopateError) as e:
        session.step()  # over: the same error, nothing pushed
    assert e.value.code == "INTERNAL" and "read callback" in e.value.message
    session.close()


def test_an_unreachable_coordinator_is_unavailable_not_a_hang():
    session = syncopate.Session({"w": w(0, 0)}, coordinator="127.0.0.1:1", join_timeout=2)
    started = time.monotonic()
    with pytest.raises(syncopate.SyncopateError) as e:
        session.start()
    assert e.value.code == "UNAVAILABLE"
    assert time.monotonic() - started < 30


def _start_both(a, b):
    """Starts two sessions of a 2-trainer job (each start waits for the other to join)."""
    t = threading.Thread(target=b.start)
    t.start()
    a.start()
    t.join(timeout=60)
    assert not t.is_alive()


def test_bsp_writes_the_round_into_the_callers_own_arrays_and_releases_the_gil(cluster):
    cluster.start(mode="bsp", trainers=2)
    wa, wb = w(0, 0), w(0, 0)
    a = syncopate.Session({"w": wa}, coordinator=cluster.coordinator, rank=0)
    b = syncopate.Session({"w": wb}, coordinator=cluster.coordinator, rank=1)
    _start_both(a, b)
    assert a.mode == "bsp"
    wa += 1  # trainer a's local step
    wb += 3  # trainer b's
    result = {}
    ta = threading.Thread(target=lambda: result.setdefault("a", a.step(0.5)))
    ta.start()
    # a waits for b's clock inside step(); this thread runs Python meanwhile (the GIL is free).
    counted = 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        counted += 1
    assert ta.is_alive(), "a's step should wait for b's clock under bsp"
    assert counted > 1000
    assert b.step(0.5) is True
    ta.join(timeout=60)
    assert result["a"] is True
    # Round 1 = initial model + mean of the two deltas, written into each caller's array.
    np.testing.assert_array_equal(wa, w(2, 2))
    np.testing.assert_array_equal(wb, w(2, 2))
    a.close()
    b.close()


def test_a_job_that_compresses_pushes_compresses_a_python_trainers(cluster):
    cluster.start(mode="bsp", trainers=2, extra=["--compression=bf16"])
    wa, wb = w(0, 0), w(0, 0)
    a = syncopate.Session({"w": wa}, coordinator=cluster.coordinator, rank=0)
    b = syncopate.Session({"w": wb}, coordinator=cluster.coordinator, rank=1)
    _start_both(a, b)
    assert a.compression == "bf16"
    wa += 1.001  # bfloat16 holds 1 (8 bits of mantissa), not 1.001
    wb += 3
    ta = threading.Thread(target=lambda: a.step(0.5))
    ta.start()
    assert b.step(0.5) is True
    ta.join(timeout=60)
    assert not ta.is_alive()
    # Round 1 = the mean of the two deltas as bfloat16 carried them: (1 + 3) / 2.
    np.testing.assert_array_equal(wa, w(2, 2))
    np.testing.assert_array_equal(wb, w(2, 2))
    a.close()
    b.close()


def _train_dssync_to_its_final_average(cluster, wa, wb, **a_options):
    """Two dssync trainers on `wa` and `wb`, trained until the coordinator ends training (the
    evaluator, a, reports 0.9 against a target of 0.5) and both averaged their models in the final
    round. Returns the sessions and which of them owes the final average's accuracy."""
    cluster.start(mode="dssync", trainers=2, extra=["--target-accuracy=0.5"])
    a = syncopate.Session({"w": wa}, coordinator=cluster.coordinator, rank=0, eval_interval=0, **a_options)
    b = syncopate.Session({"w": wb}, coordinator=cluster.coordinator, rank=1)
    _start_both(a, b)
    due = {}

    def train(session, name):
        for _ in range(1000):
            if not session.step(0.1):
                due[name] = session.final_evaluation_due
                return
            if session.evaluation_due:
                session.report_accuracy(0.9)

    threads = [threading.Thread(target=train, args=(s, n)) for s, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    return a, b, due


def test_under_dssync_the_evaluator_leaves_with_the_final_averages_accuracy(cluster, tmp_path):
    # The last step() returns False with the average, which the evaluator's clean close() writes
    # where its save_model option says (as `syncopate local` asks of trainer 0).
    wa, wb = w(0, 0), w(2, 2)
    saved = [str(tmp_path / "final.npz"), str(tmp_path / "final.pt")]
    a, b, due = _train_dssync_to_its_final_average(cluster, wa, wb, save_model=",".join(saved))
    assert due == {"a": True, "b": False}
    np.testing.assert_allclose(wa, wb, rtol=1e-6)  # one model
    with pytest.raises(syncopate.SyncopateError) as e:
        a.close(final_accuracy=1.5)
    assert e.value.code == "INVALID_ARGUMENT"
    assert a.final_evaluation_due, "a refused close changes nothing"
    assert not os.path.exists(saved[0]), "written at close, not before"
    a.close(final_accuracy=0.75)
    b.close()
    with np.load(saved[0]) as npz:
        assert npz.files == ["w"]
        np.testing.assert_array_equal(npz["w"], wa)
    import torch  # Debian's python3-torch; the state dict loads without syncopate

    np.testing.assert_array_equal(torch.load(saved[1], weights_only=True)["w"].numpy(), wa)
    with pytest.raises(syncopate.SyncopateError):
        a.close(final_accuracy=float("nan"))  # refused even once closed
    log = tmp_path / "coordinator.log"
    deadline = time.monotonic() + 30
    while "averaged their models" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a log file, with a deadline
    text = log.read_text()
    assert "the final average's test accuracy: 0.75" in text, text[-2000:]
    assert "2 trainer(s) averaged their models" in text, text[-2000:]


def test_ctrl_c_ends_a_close_that_waits_for_a_gone_coordinator(cluster, capfd):
    # A trainer that finished the job waits, in close(), for a coordinator that went away to come
    # back and take its Leave (up to 2 minutes). Ctrl-C gives that wait up: KeyboardInterrupt is
    # raised from close(), and the session is closed.
    a, b, due = _train_dssync_to_its_final_average(cluster, w(0, 0), w(2, 2))
    assert due == {"a": True, "b": False}
    b.close()
    cluster.kill_coordinator()
    main = threading.main_thread().ident
    waiting_at = {}

    def in_the_native_close():
        # The main thread's Python frame stands still on the call into the library's close:
        # seen twice, 100 ms apart, it is inside the call (the GIL released), not on its way in.
        frame = sys._current_frames().get(main)
        if frame is None or frame.f_code.co_name != "_close":
            return False
        if not frame.f_code.co_filename.endswith(os.path.join("syncopate", "__init__.py")):
            return False
        here = (frame.f_lineno, frame.f_lasti)
        seen, waiting_at["last"] = waiting_at.get("last"), here
        return seen == here

    def interrupt():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if in_the_native_close():
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.1)  # polling the main thread's frame, with a deadline

    sender = threading.Thread(target=interrupt)
    started = time.monotonic()
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        a.close(final_accuracy=0.75)
    sender.join(timeout=30)
    assert time.monotonic() - started < 60, "the Leave's wait was not given up"
    assert "interrupted while the Leave waited for the coordinator" in capfd.readouterr().out
    a.close()  # closed: a no-op


def test_a_coordinator_gone_mid_run_is_an_error_not_a_hang(cluster):
    cluster.start(mode="asp", trainers=1)
    session = syncopate.Session({"w": w(0, 0)}, coordinator=cluster.coordinator,
                                directive_timeout=20)
    session.start()
    assert session.step(0.1) is True
    cluster.kill_coordinator()
    started = time.monotonic()
    with pytest.raises(syncopate.SyncopateError) as e:
        for _ in range(100):
            session.step(0.1)
    assert e.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"), e.value
    assert time.monotonic() - started < 60
    session.close()


def test_request_stop_ends_the_loop_cleanly(cluster):
    cluster.start(mode="ssp", trainers=1)
    session = syncopate.Session({"w": w(0)}, coordinator=cluster.coordinator).start()
    with session:  # start() again (by with) does nothing
        assert session.step() is True
        session.request_stop()
        assert session.step() is False
        assert session.step() is False


def test_a_declared_pause_is_not_taken_for_a_stuck_trainer(cluster):
    # Under bsp, a reports clock 1 and waits for b. b pauses (an evaluation, a checkpoint save)
    # for three progress timeouts: it stays in the job, and its next step closes the round.
    cluster.start(mode="bsp", trainers=2, extra=["--progress-timeout=1s"])
    a = syncopate.Session({"w": w(0, 0)}, coordinator=cluster.coordinator, rank=0)
    # No rejoin: an eviction would end b's session with ABORTED instead of passing unseen.
    b = syncopate.Session({"w": w(0, 0)}, coordinator=cluster.coordinator, rank=1, max_rejoins=0)
    _start_both(a, b)
    result = {}
    ta = threading.Thread(target=lambda: result.setdefault("a", a.step(0.5)))
    ta.start()
    with b.paused():
        time.sleep(3.0)  # the pause under test, not a synchronisation
    assert b.step(0.5) is True
    ta.join(timeout=60)
    assert result["a"] is True
    assert (b.rejoins, a.world_size) == (0, 2)
    a.close()
    b.close()


def test_world_size_and_rank_follow_the_trainers_in_the_job(cluster):
    cluster.start(mode="asp", trainers=2)
    a = syncopate.Session({"w": w(0, 0)}, coordinator=cluster.coordinator, rank=0)
    b = syncopate.Session({"w": w(0, 0)}, coordinator=cluster.coordinator, rank=1)
    _start_both(a, b)
    assert a.step(0.1) and b.step(0.1)
    assert (a.world_rank, a.world_size, a.rank) == (0, 2, 0)
    assert (b.world_rank, b.world_size, b.rank) == (1, 2, 1)
    a.close()
    for _ in range(1000):  # asp: each step is granted at once; b hears of a's leaving
        assert b.step(0.1)
        if b.world_size == 1:
            break
    assert (b.world_rank, b.world_size) == (0, 1)
    b.close()
