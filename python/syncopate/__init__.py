"""Syncopate's client for Python: run your own training loop as a trainer of a Syncopate job.

    import syncopate
    with syncopate.Session({"w": w, "b": b}) as session:   # NumPy float32 arrays, shared
        while True:
            loss = train_one_step(w, b)                    # your step updates w and b in place
            if not session.step(loss):                     # push, obey the mode, load the model
                break
            if session.evaluation_due:
                session.report_accuracy(evaluate(w, b))

For PyTorch, syncopate.torch.attach(model) does the registration. Every option may come from an
environment variable (see ENVIRONMENT), so one script runs under `syncopate local
--trainer-command=...` and in a Kubernetes pod unchanged. docs/python.md is the reference.
"""

import contextlib
import os
import signal
import threading
import weakref
from typing import Callable, Dict, Iterator, Mapping, Optional, Sequence

import numpy as np

from ._errors import SyncopateError
from ._syncopate import _Session
from ._version import __version__

__all__ = ["Session", "SyncopateError", "ENVIRONMENT", "environment", "__version__"]

# Each option's environment variable, read when the argument is not given.
ENVIRONMENT = {
    "coordinator": "SYNCOPATE_COORDINATOR",  # host:port (required, by argument or here)
    "name": "SYNCOPATE_NAME",  # stable trainer name (default: trainer-<rank>)
    "rank": "SYNCOPATE_RANK",  # this trainer's index (default 0)
    "slowdown": "SYNCOPATE_SLOWDOWN",  # stretch each step's compute to F x (default 1)
    "step_time": "SYNCOPATE_STEP_TIME",  # emulated accelerator step, e.g. 200ms (default 0)
    "max_steps": "SYNCOPATE_MAX_STEPS",  # leave after this many steps (default 0: never)
    "max_rejoins": "SYNCOPATE_MAX_REJOINS",  # rejoins after an eviction (default 3)
    "eval_interval": "SYNCOPATE_EVAL_INTERVAL",  # seconds between evaluations (default 2)
    "metrics_listen": "SYNCOPATE_METRICS_LISTEN",  # Prometheus address (default: none)
    "peer_listen": "SYNCOPATE_PEER_LISTEN",  # Peer service address (default 127.0.0.1:0)
    "peer_address": "SYNCOPATE_PEER_ADDRESS",  # host:port peers dial (default: from listen)
    "egress_rate": "SYNCOPATE_EGRESS_RATE",  # emulated upload limit, e.g. 100mbit (default none)
    "ingress_rate": "SYNCOPATE_INGRESS_RATE",  # emulated download limit (default none)
    "ready_file": "SYNCOPATE_READY_FILE",  # where to write the ports once joined
    "trace_file": "SYNCOPATE_TRACE_FILE",  # JSON-lines trace of clocks and pulls
    "rpc_timeout": "SYNCOPATE_RPC_TIMEOUT",  # seconds per store RPC (default 30)
    "join_timeout": "SYNCOPATE_JOIN_TIMEOUT",  # seconds to reach the coordinator (default 30)
    "directive_timeout": "SYNCOPATE_DIRECTIVE_TIMEOUT",  # seconds without a directive (120)
    "tls_dir": "SYNCOPATE_TLS_DIR",  # ca.crt, tls.crt, tls.key: mutual TLS (docs/security.md)
    "insecure": "SYNCOPATE_INSECURE",  # true: no TLS (one of tls_dir and insecure is required)
    "save_model": "SYNCOPATE_SAVE_MODEL",  # at a clean end, write the model here (.npz, .pt; a,b)
}

_DEFAULTS = {
    "coordinator": "",
    "name": "",
    "rank": 0,
    "slowdown": 1.0,
    "step_time": 0.0,
    "max_steps": 0,
    "max_rejoins": 3,
    "eval_interval": 2.0,
    "metrics_listen": "",
    "peer_listen": "127.0.0.1:0",
    "peer_address": "",
    "egress_rate": "",
    "ingress_rate": "",
    "ready_file": "",
    "trace_file": "",
    "rpc_timeout": 30.0,
    "join_timeout": 30.0,
    "directive_timeout": 120.0,
    "tls_dir": "",
    "insecure": False,
    "save_model": "",
}


def environment(name: str, default: str = "") -> str:
    """A job setting that `syncopate local` and the Helm chart hand a user's trainer, for the
    script's own use: SYNCOPATE_WORLD (number of data shards), SYNCOPATE_DATA_SHARD,
    SYNCOPATE_LEARNING_RATE, SYNCOPATE_BATCH_SIZE, SYNCOPATE_SEED, SYNCOPATE_DEVICE; the chart
    also sets SYNCOPATE_DATA_DIR."""
    return os.environ.get(name, default)


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(value) -> float:
    """Seconds from a number or a duration such as "5s", "500ms", "2m" (as the chart writes them)."""
    if isinstance(value, str):
        text = value.strip()
        for unit in sorted(_UNITS, key=len, reverse=True):
            if text.endswith(unit) and text[: -len(unit)].strip():
                return float(text[: -len(unit)]) * _UNITS[unit]
    return float(value)


def _flag(value) -> bool:
    """A boolean from True/False or an environment string: 1/true/yes/on or 0/false/no/off/""."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(value)


def _model_paths(paths) -> list:
    """Model file paths from one path (a str, comma-separated for several, or an os.PathLike) or a
    sequence of them."""
    if isinstance(paths, (str, os.PathLike)):
        return [p.strip() for p in os.fspath(paths).split(",") if p.strip()]
    return [os.fspath(p) for p in paths]


def _resolve(given: Mapping[str, object]) -> Dict[str, object]:
    options = {}
    for key, default in _DEFAULTS.items():
        value = given.get(key)
        if value is None:
            value = os.environ.get(ENVIRONMENT[key], default)
        try:
            if isinstance(default, bool):
                options[key] = _flag(value)
            elif key.endswith(("_interval", "_timeout", "_time")):
                options[key] = _seconds(value)
            else:
                options[key] = type(default)(value)
        except (TypeError, ValueError):
            raise SyncopateError(
                "INVALID_ARGUMENT", f"{key} (or {ENVIRONMENT[key]}) is not a {type(default).__name__}: {value!r}"
            ) from None
    if not options["coordinator"]:
        raise SyncopateError(
            "INVALID_ARGUMENT", "no coordinator address: pass coordinator= or set SYNCOPATE_COORDINATOR"
        )
    if bool(options["tls_dir"]) == options["insecure"]:
        raise SyncopateError(
            "INVALID_ARGUMENT",
            "give either tls_dir= (SYNCOPATE_TLS_DIR: mutual TLS) or insecure=True (SYNCOPATE_INSECURE=1: none)",
        )
    if not options["name"]:
        options["name"] = f"trainer-{options['rank']}"
    if options["slowdown"] < 1.0:
        raise SyncopateError("INVALID_ARGUMENT", f"slowdown must be at least 1, not {options['slowdown']}")
    for key in ("rpc_timeout", "join_timeout", "directive_timeout"):
        if options[key] <= 0:
            raise SyncopateError("INVALID_ARGUMENT", f"{key} must be positive, not {options[key]}")
    bad = [path for path in _model_paths(options["save_model"]) if not path.endswith((".npz", ".pt"))]
    if bad:
        raise SyncopateError(
            "INVALID_ARGUMENT", f"save_model (or SYNCOPATE_SAVE_MODEL): a model file ends in .npz or .pt, not {bad[0]!r}"
        )
    for key in ("max_steps", "max_rejoins", "eval_interval", "step_time"):
        if options[key] < 0:
            raise SyncopateError("INVALID_ARGUMENT", f"{key} cannot be negative, not {options[key]}")
    return options


class Session:
    """One trainer's membership of a Syncopate job, driven by your training loop.

    Register the parameters (in the constructor, or with add/add_callbacks), call start() (or
    enter the `with` block), then call step(loss) after each local training step: it pushes the
    change, obeys the coordinator's mode (waits within the staleness bound, pulls a round or the
    live model and rebases onto it, or exchanges with peers) and leaves the synchronised model in
    your arrays. It returns False when training is over (the session has then left the job).

    Arrays are shared, not copied: the library reads and writes your float32 arrays in place, and
    only inside start() and step(); do not change them from another thread meanwhile.

    The GIL is released while the session waits or transfers. Ctrl-C raises KeyboardInterrupt from
    the waiting call after the session left the job; with handle_sigterm (the default, from the
    main thread) SIGTERM makes the next step() return False, so the loop ends and the job is left
    cleanly. Errors are SyncopateError with the status code (UNAVAILABLE, ABORTED, ...).
    """

    def __init__(
        self,
        parameters: Optional[Mapping[str, np.ndarray]] = None,
        *,
        coordinator: Optional[str] = None,
        name: Optional[str] = None,
        rank: Optional[int] = None,
        slowdown: Optional[float] = None,
        step_time: Optional[float] = None,
        max_steps: Optional[int] = None,
        max_rejoins: Optional[int] = None,
        eval_interval: Optional[float] = None,
        metrics_listen: Optional[str] = None,
        peer_listen: Optional[str] = None,
        peer_address: Optional[str] = None,
        egress_rate: Optional[str] = None,
        ingress_rate: Optional[str] = None,
        ready_file: Optional[str] = None,
        trace_file: Optional[str] = None,
        rpc_timeout: Optional[float] = None,
        join_timeout: Optional[float] = None,
        directive_timeout: Optional[float] = None,
        tls_dir: Optional[str] = None,
        insecure: Optional[bool] = None,
        save_model: Optional[str] = None,
        handle_sigterm: bool = True,
    ):
        given = dict(locals())
        self._options = _resolve(given)
        self._session = _Session(self._options)
        self._handle_sigterm = handle_sigterm
        self._previous_sigterm = None
        self._started = False
        self._closed = False
        self._finished = False  # step() returned False: training is over
        # Set by syncopate.torch for tensors the library cannot address: copies them into the
        # registered host arrays before start() and step() (they read them) and back after.
        self._staging = None
        # Leaves the job when the session is collected or the interpreter exits without close().
        self._finalizer = weakref.finalize(self, self._session.close)
        for key, array in (parameters or {}).items():
            self.add(key, array)

    @property
    def options(self) -> Dict[str, object]:
        """The options in effect (arguments, else environment, else defaults)."""
        return dict(self._options)

    def add(self, name: str, array: np.ndarray) -> None:
        """Registers `array` (float32, C-contiguous, writeable) as parameter `name`, shared."""
        if not isinstance(array, np.ndarray):
            raise SyncopateError("INVALID_ARGUMENT", f"parameter {name!r} is not a NumPy array")
        self._session.add_array(name, array)

    def add_callbacks(
        self,
        name: str,
        shape: Sequence[int],
        read: Callable[[np.ndarray], None],
        write: Callable[[np.ndarray], None],
    ) -> None:
        """Registers a parameter the library cannot address (a CUDA tensor, say): read(out) fills
        the flat float32 array `out` with its values, write(values) sets them from `values`."""
        self._session.add_callbacks(name, [int(d) for d in shape], read, write)

    def start(self) -> "Session":
        """Joins the job, offers these parameters as the initial model (the job keeps the first
        trainer's), and loads the model the coordinator names into them. Does nothing when the
        session has started (so `with syncopate.torch.attach(model) as sync:` works)."""
        if self._started:
            return self
        self._started = True
        self._install_sigterm()
        try:
            if self._staging:
                self._staging.to_host()
            self._session.start()
            if self._staging:
                self._staging.from_host()
        except BaseException:
            self.close()
            raise
        return self

    def step(self, loss: float = 0.0) -> bool:
        """Call after each local training step. True: go on; False: training is over."""
        if self._staging is None:
            more = self._session.step(float(loss))
        else:
            self._staging.to_host()
            more = self._session.step(float(loss))
            self._staging.from_host()
        self._finished = not more
        return more

    @property
    def evaluation_due(self) -> bool:
        """The coordinator wants this trainer's test accuracy: evaluate, then report_accuracy."""
        return self._session.evaluation_due()

    def report_accuracy(self, accuracy: float) -> None:
        """The test accuracy (in [0, 1]) of your current model, sent with the next step; after the
        last step (an evaluation still due when step() returned False), with the Leave at close()."""
        self._session.report_accuracy(float(accuracy))

    @property
    def final_evaluation_due(self) -> bool:
        """After the last step() of a job that ends with a final average (dssync), on the trainer
        the coordinator asks: evaluate your model (it holds the average) and pass the accuracy to
        close(final_accuracy=...), which leaves the job with it."""
        return self._session.final_accuracy_due()

    @property
    def steps(self) -> int:
        return self._session.steps()

    @property
    def rank(self) -> int:
        """This trainer's rank, as configured (argument or SYNCOPATE_RANK)."""
        return int(self._options["rank"])

    @property
    def world_rank(self) -> int:
        """This trainer's place among the trainers now in the job, by rank: 0 to world_size - 1."""
        return self._session.world()[0]

    @property
    def world_size(self) -> int:
        """How many trainers are in the job now (as of the last step), updated as they join and
        leave."""
        return self._session.world()[1]

    @property
    def rejoins(self) -> int:
        """How often this trainer rejoined the job after it was evicted (at most max_rejoins)."""
        return self._session.rejoins()

    @property
    def mode(self) -> str:
        return self._session.welcome()["mode"]

    @property
    def trainer_id(self) -> int:
        return self._session.welcome()["trainer_id"]

    @property
    def compression(self) -> str:
        """How the job compresses pushes ("none", "bf16", "fp16", "topk:0.01"): the coordinator's
        --compression, which this session applies to every push (docs/compression.md)."""
        return self._session.welcome()["compression"]

    def timings(self) -> Dict[str, float]:
        """Seconds since joining: compute, wait, communication, wall."""
        return self._session.timings()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Wrap work that stops training for longer than a step (a validation pass, a first
        torch.compile step, a checkpoint save) in `with session.paused(): ...`: the coordinator
        does not evict this trainer for making no progress meanwhile. The session's heartbeats go
        on, so a trainer that dies while paused is still evicted; under a round mode the others
        may wait for it."""
        self._session.set_paused(True)
        try:
            yield
        finally:
            self._session.set_paused(False)

    def save_model(self, path) -> None:
        """Writes the registered parameters as they are now (after training: the job's model;
        under dssync, the final average) to `path` (a str or os.PathLike), a .npz or .pt file that
        syncopate.torch.load_into, NumPy and PyTorch read, as RUN_DIR/model.npz and model.pt are
        written; a list of paths writes each. Every path is checked first (SyncopateError
        INVALID_ARGUMENT, nothing written). With the save_model option (SYNCOPATE_SAVE_MODEL, which
        `syncopate local` gives trainer 0 in peer-to-peer modes) close() does this by itself at a
        clean end."""
        if self._staging and self._started:
            self._staging.to_host()  # the tensors as they are now, not as the last step left them
        self._session.save_model(_model_paths(path))

    def request_stop(self) -> None:
        """Asks the session to end: the next step() returns False. Safe from a signal handler."""
        self._session.request_stop()

    def close(self, final_accuracy: Optional[float] = None) -> None:
        """Leaves the job (if still in it) and stops the session's threads. Idempotent.
        `final_accuracy` (in [0, 1]): the final average's test accuracy, when final_evaluation_due;
        the job reports it (summary.json's final_average). At a clean end (step() returned
        False, and no exception left a `with` block) with the save_model option, writes the model
        there (save_model) after leaving."""
        if final_accuracy is not None and not 0.0 <= float(final_accuracy) <= 1.0:
            raise SyncopateError("INVALID_ARGUMENT", f"an accuracy is in [0, 1], got {final_accuracy}")
        self._close(final_accuracy, clean=True)

    def _close(self, final_accuracy: Optional[float], clean: bool) -> None:
        if self._closed:
            return
        self._closed = True  # before the call, which releases the GIL: one close leaves
        try:  # a Leave waiting for a coordinator to come back gives up on Ctrl-C, raised here
            if final_accuracy is not None:
                self._session.close(float(final_accuracy))
            self._finalizer()
            # A clean end: training is over and the script got there without an exception.
            if clean and self._finished and self._options["save_model"]:
                self.save_model(self._options["save_model"])
        finally:
            self._restore_sigterm()

    def __enter__(self) -> "Session":
        return self.start()

    def __exit__(self, exc_type, exc, traceback) -> None:
        self._close(None, clean=exc_type is None)

    def _install_sigterm(self) -> None:
        if not self._handle_sigterm or threading.current_thread() is not threading.main_thread():
            return
        self._previous_sigterm = signal.signal(signal.SIGTERM, lambda *_: self.request_stop())

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
