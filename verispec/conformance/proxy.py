"""The harness side of the engine process: requests with time limits, restarts after a hang."""

from __future__ import annotations

import base64
import time
from typing import Any

from verispec.engines.protocol import Completion, Request
from verispec.errors import MissingDependency, ServerUnavailable, UsageError
from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout
from verispec.verdicts import Failure

__all__ = ["EngineError", "EngineOutputError", "EngineProxy"]


class EngineError(Exception):
    """The engine crashed, hung, or refused one request; ``failure`` says which
    (:attr:`Failure.CRASH` or :attr:`Failure.MISUSE`)."""

    failure = Failure.CRASH

    def __init__(self, message: str, failure: Failure = Failure.CRASH) -> None:
        super().__init__(message)
        self.failure = failure


class EngineOutputError(EngineError):
    """The engine answered, but with output no correct engine gives (ids outside the
    vocabulary, more tokens than allowed): a detection, not a crash."""

    def __init__(self, message: str) -> None:
        super().__init__(message, Failure.BAD_OUTPUT)


class EngineProxy:
    """An engine running in its own process (:class:`verispec.isolation.Worker`).

    ``timeout_s`` bounds every request; after a hang or a crash the process is restarted
    (the next request pays the start-up) and the failed request raises :class:`EngineError`.
    ``calls`` counts generated requests; ``seconds`` the wall time spent waiting on the engine.
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
        self.spec = engine
        self.device = device
        self.options = options or {}
        self.timeout_s = timeout_s
        self.worker = Worker(
            "verispec.conformance.engine_worker",
            {"engine": engine, "device": device, "options": self.options},
            startup_timeout_s=startup_timeout_s,
            threads=threads,
        )
        self.calls = 0
        self.seconds = 0.0
        self._start()
        info = self._ask({"op": "info"})
        self.name = str(info["name"])
        self.vocab_size = int(info["vocab_size"])
        self.capabilities = frozenset(info["capabilities"])
        self.gamma = info.get("gamma")
        self.device_description = str(info.get("device", device))
        unsupported = info.get("unsupported") or {}
        self.unsupported: dict[str, str] = {str(k): str(v) for k, v in unsupported.items()}
        #: the engine's documented order of temperature and truncation (``core.transforms.ORDERS``)
        self.sampling_order = str(info.get("sampling_order") or "temperature-first")
        #: the largest logit gap the engine measured between batched and one-at-a-time evaluation
        self.logit_noise = float(info.get("logit_noise") or 0.0)
        #: output tokens the engine commits before its first round (a bigram plan starts there)
        self.drafting_lead = int(info.get("drafting_lead") or 0)
        self.notes: list[str] = [str(n) for n in info.get("notes") or ()]
        self.prompts: list[tuple[int, ...]] = [tuple(int(t) for t in p) for p in info.get("prompts") or ()]
        self.prompt_kinds: list[str] = [str(k) for k in info.get("prompt_kinds") or ()]
        #: the engine's own time for the last generate call, measured in its process
        self.last_generate_seconds: float | None = None

    @property
    def restarts(self) -> int:
        return self.worker.restarts

    @property
    def startup_seconds(self) -> float:
        """Process start-up and model loading, over every (re)start."""
        return self.worker.startup_seconds

    def _start(self) -> None:
        """Start the engine: a factory that fails is the caller's usage error, named."""
        try:
            self.worker.start()
        except WorkerTimeout as exc:
            self.close()
            raise UsageError(f"engine={self.spec!r} {exc}") from None
        except (RemoteError, WorkerCrashed) as exc:
            self.close()
            if isinstance(exc, RemoteError) and exc.kind == "usage":
                raise UsageError(exc.message) from None
            if isinstance(exc, RemoteError) and exc.type == "MissingDependency":
                raise MissingDependency.carried(f"engine={self.spec!r}: {exc.message}") from None
            if isinstance(exc, RemoteError) and exc.type == "ServerUnavailable":
                raise ServerUnavailable(f"engine={self.spec!r}: {exc.message}") from None
            raise UsageError(f"engine={self.spec!r} could not be built: {exc}") from None

    def _ask(self, message: dict[str, Any], *, timeout_s: float | None = None) -> dict[str, Any]:
        if not self.worker.alive:
            self._start()
        limit = timeout_s or self.timeout_s
        start = time.perf_counter()
        try:
            return self.worker.ask(message, limit)
        except WorkerTimeout:
            raise EngineError(
                f"no answer within {limit:g} s (time limit); the engine was restarted"
            ) from None
        except WorkerCrashed as exc:
            raise EngineError(str(exc)) from None
        except RemoteError as exc:
            failure = Failure.MISUSE if exc.kind == "usage" else Failure.CRASH
            raise EngineError(str(exc), failure) from None
        finally:
            self.seconds += time.perf_counter() - start

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> EngineProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # protocol
    def generate(self, request: Request) -> Completion:
        return self.generate_many([request])[0]

    def generate_many(self, requests: list[Request]) -> list[Completion]:
        """One generate call for the requests (a batch for engines with the ``batch``
        capability); the time limit is the per-request limit times their number. ``calls``
        counts requests."""
        self.calls += len(requests)
        answer = self._ask(
            {"op": "generate", "requests": [r.to_json() for r in requests]},
            timeout_s=self.timeout_s * len(requests),
        )
        seconds = answer.get("seconds")
        self.last_generate_seconds = float(seconds) if isinstance(seconds, int | float) else None
        completions = answer.get("completions")
        if not isinstance(completions, list) or len(completions) != len(requests):
            got = len(completions) if isinstance(completions, list) else completions
            raise EngineError(f"answered {got} completions for a batch of {len(requests)} requests")
        return [Completion.from_json(c) for c in completions]

    def logits_along(self, model: str, prompt: tuple[int, ...], tokens: list[int]) -> Any:
        """The ``model``'s logits predicting each of ``tokens`` (a float32 array, one row each)."""
        import numpy as np  # deferred: heavy

        answer = self._ask(
            {"op": "logits_along", "model": model, "prompt": list(prompt), "tokens": list(tokens)}
        )
        rows, vocab = answer["shape"]
        data = np.frombuffer(base64.b64decode(answer["float32"]), dtype="<f4")
        if data.size != rows * vocab:
            raise EngineError(f"logits_along answered {data.size} values for shape {answer['shape']}")
        return data.reshape(rows, vocab)
