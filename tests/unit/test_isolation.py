"""Third-party code in its own process: answers, structured errors, time limits, restarts."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from verispec.errors import UsageError
from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout, load_function

ROOT = Path(__file__).resolve().parents[2]

#: How long a process may take to end before it is taken to never end: far above the
#: milliseconds the kernel's parent-death signal takes, or the watchdog's half second.
ENDS_WITHIN_S = 30.0

#: A parent that starts a worker (from its main thread, or from a thread that then ends),
#: which starts a process of its own; it prints both pids and keeps the worker computing
#: until the parent is killed.
WORKER_PARENT = """
import sys, threading
from verispec.isolation import Worker
mode, flag = sys.argv[1:]
worker = Worker("tests.fixtures.workers", {}, startup_timeout_s=60)
if mode == "thread":
    starter = threading.Thread(target=worker.start)
    starter.start()
    starter.join()
else:
    worker.start()
child = worker.ask({"op": "child"}, 60)["pid"]
print(worker.proc.pid, child, flush=True)
worker.ask({"op": "spin", "flag": flag}, 3600)
"""

#: A parent whose process pool (the one `verispec prove --jobs` uses) computes until it is killed.
POOL_PARENT = """
import os, sys, time
from verispec.isolation import process_pool
from tests.fixtures.workers import spin
with process_pool(1) as pool:
    print(pool.submit(os.getpid).result(), flush=True)
    pool.submit(spin, sys.argv[1])
    time.sleep(3600)
"""


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, ended but not yet reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has taken the pid
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return False  # it ended between the two looks
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        state = state.strip() or "Z"
    return not state.startswith("Z")


def ends_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for(flag: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not flag.exists():
        assert time.monotonic() < deadline, f"the request did not start within {seconds:g} s"
        time.sleep(0.05)


def kill_if_running(pid: int | None) -> None:
    """Kill ``pid`` and its process group, left behind by a failing test."""
    if pid is not None and running(pid):
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)


@pytest.fixture
def worker(monkeypatch):
    monkeypatch.chdir(ROOT)
    with Worker("tests.fixtures.workers", {}, startup_timeout_s=60) as w:
        yield w


class TestWorker:
    def test_a_request_gets_its_answer(self, worker) -> None:
        assert worker.ask({"op": "echo", "value": [1, 2]}, 30) == {"echo": [1, 2]}

    def test_an_exception_crosses_as_a_record_and_the_worker_goes_on(self, worker) -> None:
        with pytest.raises(RemoteError) as info:
            worker.ask({"op": "raise"}, 30)
        error = info.value
        assert (error.kind, error.type, error.message) == ("exception", "ValueError", "boom")
        assert "workers.py:" in error.where and "in handle" in error.where
        assert str(error) == "ValueError: boom"
        assert worker.ask({"op": "echo", "value": 1}, 30) == {"echo": 1} and worker.restarts == 0

    def test_a_usage_error_keeps_its_kind(self, worker) -> None:
        with pytest.raises(RemoteError) as info:
            worker.ask({"op": "usage"}, 30)
        assert info.value.kind == "usage" and info.value.message == "size='x' is not a size"

    def test_a_hang_hits_the_time_limit_and_the_next_request_restarts(self, worker) -> None:
        with pytest.raises(WorkerTimeout, match=r"no answer within 0\.5 s"):
            worker.ask({"op": "hang"}, 0.5)
        assert not worker.alive
        assert worker.ask({"op": "echo", "value": 2}, 30) == {"echo": 2} and worker.restarts == 1

    def test_a_half_written_answer_does_not_hang_the_parent(self, worker) -> None:
        with pytest.raises(WorkerTimeout):
            worker.ask({"op": "partial"}, 0.5)

    def test_a_dead_worker_is_reported_with_its_stderr(self, worker) -> None:
        with pytest.raises(WorkerCrashed, match="exited with code 7: dying now"):
            worker.ask({"op": "exit"}, 30)

    def test_stray_output_and_a_flood_on_stderr_do_not_break_the_protocol(self, worker) -> None:
        """stdout carries the protocol only; stderr goes to a file, never a pipe that fills."""
        assert worker.ask({"op": "print"}, 30) == {"ok": True}

    def test_a_handler_that_cannot_be_built_is_raised_at_start(self, monkeypatch) -> None:
        monkeypatch.chdir(ROOT)
        with Worker("tests.fixtures.workers", {"fail": True}) as w, pytest.raises(RemoteError) as info:
            w.start()
        assert info.value.type == "RuntimeError" and info.value.message == "cannot build"

    def test_threads_are_validated(self) -> None:
        with pytest.raises(UsageError, match="threads=0 must be a positive integer or None"):
            Worker("tests.fixtures.workers", {}, threads=0)


@pytest.mark.skipif(sys.platform == "win32", reason="Worker needs POSIX: process groups, select() on pipes")
class TestWorkerLifetime:
    """Every process verispec starts ends with the process that started it, even while busy."""

    @pytest.mark.parametrize("started_from", ["main", "thread"])
    @pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
    def test_a_busy_worker_ends_when_its_parent_is_killed(self, tmp_path, sig, started_from) -> None:
        """The worker's own processes too: its group's reaper kills them once it has ended."""
        flag = tmp_path / "busy"
        with (tmp_path / "parent.err").open("w+") as stderr:
            parent = subprocess.Popen(
                [sys.executable, "-c", WORKER_PARENT, started_from, str(flag)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            worker_pid = child_pid = None
            try:
                assert parent.stdout is not None
                line = parent.stdout.readline()
                assert line, f"the parent started no worker: {stderr.seek(0) or stderr.read()}"
                worker_pid, child_pid = map(int, line.split())
                wait_for(flag, ENDS_WITHIN_S)
                parent.send_signal(sig)
                parent.wait(timeout=ENDS_WITHIN_S)
                assert ends_within(worker_pid, ENDS_WITHIN_S), f"worker {worker_pid} outlived its parent"
                assert ends_within(child_pid, ENDS_WITHIN_S), f"the worker's child {child_pid} outlived it"
            finally:  # the orphans first: they may hold the parent's stdout open
                kill_if_running(worker_pid)
                kill_if_running(child_pid)
                parent.kill()
                parent.communicate()  # reaps it and closes its stdout

    def test_a_busy_pool_process_ends_when_its_parent_is_killed(self, tmp_path) -> None:
        flag = tmp_path / "busy"
        with (tmp_path / "parent.err").open("w+") as stderr:
            parent = subprocess.Popen(
                [sys.executable, "-c", POOL_PARENT, str(flag)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            pool_pid = None
            try:
                assert parent.stdout is not None
                line = parent.stdout.readline()
                assert line, f"the parent started no pool: {stderr.seek(0) or stderr.read()}"
                pool_pid = int(line)
                wait_for(flag, ENDS_WITHIN_S)
                parent.kill()
                parent.wait(timeout=ENDS_WITHIN_S)
                assert ends_within(pool_pid, ENDS_WITHIN_S), f"pool process {pool_pid} outlived its parent"
            finally:  # the orphan first: it may hold the parent's stdout open
                kill_if_running(pool_pid)
                parent.kill()
                parent.communicate()  # reaps it and closes its stdout

    def test_a_process_whose_parent_is_already_gone_exits_at_once(self) -> None:
        """The race the parent-death signal cannot cover: the parent ended before the call
        (here: the pid given is not the parent's)."""
        code = "import os; from verispec.isolation import die_with_parent; die_with_parent(os.getppid() + 1)"
        done = subprocess.run(
            [sys.executable, "-c", code + "; print('still here')"], cwd=ROOT, capture_output=True, text=True
        )
        assert (done.returncode, done.stdout) == (1, "")
        assert "which started this process, is no longer its parent" in done.stderr

    def test_closing_a_worker_ends_the_processes_it_started(self, worker) -> None:
        """The worker leads its own process group: an engine's processes die with it."""
        child = worker.ask({"op": "child"}, 30)["pid"]
        try:
            assert running(child)
            worker.close()
            assert ends_within(child, ENDS_WITHIN_S), f"the worker's child {child} outlived it"
        finally:
            kill_if_running(child)

    def test_a_worker_started_from_a_thread_outlives_that_thread(self, worker) -> None:
        """Linux's parent-death signal follows the thread that started the child: workers are
        started from a thread that lasts as long as the process."""
        starter = threading.Thread(target=worker.start)
        starter.start()
        starter.join()
        pid = worker.proc.pid
        time.sleep(0.2)  # a worker bound to the ended thread would be killed by now
        assert worker.ask({"op": "echo", "value": 3}, 30) == {"echo": 3}
        assert worker.restarts == 0 and worker.proc.pid == pid


class TestLoadFunction:
    def test_errors_name_the_argument(self) -> None:
        with pytest.raises(UsageError, match="engine='nope' must be written module:function"):
            load_function("nope", argument="engine")
        with pytest.raises(UsageError, match="cannot import 'no_such_module'"):
            load_function("no_such_module:f")
        with pytest.raises(UsageError, match=r"'verispec\.errors' has no attribute 'nope'"):
            load_function("verispec.errors:nope")
        assert load_function("verispec.errors:unknown_name").__name__ == "unknown_name"
