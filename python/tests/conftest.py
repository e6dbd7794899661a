"""A real store shard and coordinator on 127.0.0.1:0 for each test, from the built binaries
(SYNCOPATE_BIN_DIR, set by CTest), with mutual TLS as in a real job: one CA per test run
(`syncopate certs`), and the tests' sessions hold a trainer pool certificate (any trainer name) through
SYNCOPATE_TLS_DIR."""

import json
import os
import subprocess
import time

import pytest

BIN_DIR = os.environ.get("SYNCOPATE_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))


def _await_ready(process, path, log, deadline_s=30.0):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{os.path.basename(path)}: exited {process.returncode}; see {log}")
        try:
            with open(path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.05)  # polling a file the process writes atomically, bounded by the deadline
    raise RuntimeError(f"{path} did not appear within {deadline_s} s; see {log}")


def _certs(*args):
    subprocess.run([os.path.join(BIN_DIR, "syncopate"), "certs", *args], check=True, capture_output=True)


@pytest.fixture(scope="session")
def tls_dirs(tmp_path_factory):
    """Certificate directories by role: the store's, the coordinator's, a trainer pool's."""
    root = tmp_path_factory.mktemp("tls")
    _certs("ca", f"--ca-dir={root}/ca")
    dirs = {}
    for role, who in (("store", "--name=store-0"), ("coordinator", "--name=coordinator-0"), ("trainer", "--pool")):
        dirs[role] = str(root / role)
        _certs("issue", f"--ca-dir={root}/ca", f"--role={role}", who, f"--out={dirs[role]}")
    return dirs


@pytest.fixture(autouse=True)
def trainer_certificate(tls_dirs, monkeypatch):
    monkeypatch.setenv("SYNCOPATE_TLS_DIR", tls_dirs["trainer"])
    monkeypatch.delenv("SYNCOPATE_INSECURE", raising=False)


class Cluster:
    def __init__(self, tmp_path, tls_dirs):
        self.tmp_path = tmp_path
        self.tls_dirs = tls_dirs
        self.processes = []

    def _spawn(self, role, args):
        ready = str(self.tmp_path / f"{role}.ready.json")
        log = str(self.tmp_path / f"{role}.log")
        argv = [os.path.join(BIN_DIR, f"syncopate-{role}"), "--listen=127.0.0.1:0",
                "--metrics-listen=127.0.0.1:0", f"--ready-file={ready}",
                f"--tls-dir={self.tls_dirs[role]}"] + args
        # As in a real job, the servers keep gRPC's default engine: this process's sessions set
        # poll for themselves (rpc::PreferPollForAFewConnections), which children would inherit.
        env = {k: v for k, v in os.environ.items()
               if k not in ("GRPC_POLL_STRATEGY", "GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS")}
        with open(log, "w") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.processes.append(process)
        return process, _await_ready(process, ready, log)

    def start(self, mode="bsp", trainers=1, extra=()):
        _, store = self._spawn("store", [])
        self.coordinator_process, coordinator = self._spawn(
            "coordinator",
            [f"--stores=127.0.0.1:{store['grpc_port']}", f"--mode={mode}",
             f"--min-trainers={trainers}", "--eviction-timeout=5s", *extra])
        self.coordinator = f"127.0.0.1:{coordinator['grpc_port']}"
        return self

    def kill_coordinator(self):
        self.coordinator_process.kill()
        self.coordinator_process.wait(timeout=10)

    def stop(self):
        for p in reversed(self.processes):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@pytest.fixture
def cluster(tmp_path, tls_dirs):
    c = Cluster(tmp_path, tls_dirs)
    yield c
    c.stop()
