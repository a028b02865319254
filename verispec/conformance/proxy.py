"""The harness side of the engine process: requests with time limits, restarts after a hang."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from typing import Any

from verispec.engines.protocol import Completion, Request
from verispec.errors import UsageError

__all__ = ["EngineError", "EngineOutputError", "EngineProxy"]


class EngineError(Exception):
    """The engine crashed, hung, or answered something unusable for one request."""


class EngineOutputError(EngineError):
    """The engine answered, but with output no correct engine gives (ids outside the
    vocabulary, more tokens than allowed): a detection, not a crash."""


class EngineProxy:
    """An engine running in its own process.

    ``timeout_s`` bounds every request; after a hang or a crash the process is restarted
    (the next request pays the start-up) and the failed request raises :class:`EngineError`.
    ``calls`` counts generate calls; ``seconds`` the wall time spent waiting on the engine.
    ``threads`` caps the engine process's CPU threads (OpenMP and MKL), for engines run side
    by side.
    """

    def __init__(
        self,
        engine: str,
        *,
        device: str = "cpu",
        options: dict[str, Any] | None = None,
        timeout_s: float = 120.0,
        startup_timeout_s: float = 600.0,
        threads: int | None = None,
    ) -> None:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise UsageError(f"threads={threads!r} must be a positive integer or None")
        self.spec = engine
        self.device = device
        self.options = options or {}
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.threads = threads
        self.proc: Any = None
        self.calls = 0
        self.seconds = 0.0
        self.restarts = 0
        self.startup_seconds = 0.0  # process start-up and model loading, every (re)start
        info = self._ask({"op": "info"}, startup=True)
        self.name = str(info["name"])
        self.vocab_size = int(info["vocab_size"])
        self.capabilities = frozenset(info["capabilities"])
        self.gamma = info.get("gamma")

    # process management
    def _start(self) -> None:
        started = time.perf_counter()
        try:
            self._spawn()
        finally:
            self.startup_seconds += time.perf_counter() - started

    def _spawn(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        if self.threads is not None:
            env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(self.threads)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verispec.conformance.engine_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.proc.stdin.write(
            json.dumps({"engine": self.spec, "device": self.device, "options": self.options}) + "\n"
        )
        self.proc.stdin.flush()
        ready = self._read(self.startup_timeout_s)
        if ready is None:
            self.close()
            raise UsageError(f"engine={self.spec!r} did not start within {self.startup_timeout_s:g} s")
        if "fatal" in ready:
            self.close()
            raise UsageError(f"engine={self.spec!r} could not be built: {ready['fatal']}")

    def _read(self, timeout: float) -> dict[str, Any] | None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=timeout):
                return None
        line = self.proc.stdout.readline()
        if not line:
            return {"error": "the engine process exited"}
        return json.loads(line)  # type: ignore[no-any-return]

    def _ask(
        self, message: dict[str, Any], *, startup: bool = False, timeout_s: float | None = None
    ) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.restarts += 1
            self._start()
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        start = time.perf_counter()
        limit = self.startup_timeout_s if startup else timeout_s or self.timeout_s
        answer = self._read(limit)
        self.seconds += time.perf_counter() - start
        if answer is None:
            self.close()
            raise EngineError(f"no answer within {limit:g} s (time limit); the engine was restarted")
        if "error" in answer:
            if answer["error"] == "the engine process exited":
                self.close()
            raise EngineError(answer["error"])
        return answer

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream:
                    stream.close()
            self.proc = None

    def __enter__(self) -> EngineProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # protocol
    def generate(self, request: Request) -> Completion:
        self.calls += 1
        return Completion.from_json(self._ask({"op": "generate", "request": request.to_json()})["completion"])

    def generate_many(self, requests: list[Request]) -> list[Completion]:
        """One generate call for a whole batch (engines with the ``batch`` capability); the
        time limit is the per-request limit times the batch size. ``calls`` counts requests."""
        if len(requests) == 1:
            return [self.generate(requests[0])]
        self.calls += len(requests)
        answer = self._ask(
            {"op": "generate_batch", "requests": [r.to_json() for r in requests]},
            timeout_s=self.timeout_s * len(requests),
        )
        completions = answer.get("completions")
        if not isinstance(completions, list) or len(completions) != len(requests):
            got = len(completions) if isinstance(completions, list) else completions
            raise EngineError(f"answered {got} completions for a batch of {len(requests)} requests")
        return [Completion.from_json(c) for c in completions]

    def logits_along(self, model: str, prompt: tuple[int, ...], tokens: list[int]) -> Any:
        """The ``model``'s logits predicting each of ``tokens`` (a float32 array, one row each)."""
        import base64

        import numpy as np

        answer = self._ask(
            {"op": "logits_along", "model": model, "prompt": list(prompt), "tokens": list(tokens)}
        )
        rows, vocab = answer["shape"]
        data = np.frombuffer(base64.b64decode(answer["float32"]), dtype="<f4")
        if data.size != rows * vocab:
            raise EngineError(f"logits_along answered {data.size} values for shape {answer['shape']}")
        return data.reshape(rows, vocab)
