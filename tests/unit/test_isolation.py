"""Third-party code in its own process: answers, structured errors, time limits, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from verispec.errors import UsageError
from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout, load_function

ROOT = Path(__file__).resolve().parents[2]


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


class TestLoadFunction:
    def test_errors_name_the_argument(self) -> None:
        with pytest.raises(UsageError, match="engine='nope' must be written module:function"):
            load_function("nope", argument="engine")
        with pytest.raises(UsageError, match="cannot import 'no_such_module'"):
            load_function("no_such_module:f")
        with pytest.raises(UsageError, match=r"'verispec\.errors' has no attribute 'nope'"):
            load_function("verispec.errors:nope")
        assert load_function("verispec.errors:unknown_name").__name__ == "unknown_name"
