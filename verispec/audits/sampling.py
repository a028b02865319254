"""Sampling a black box, for every audit mode: where it runs, chunks, time limits, progress.

A :class:`Lane` is where a black box answers the audit worker's requests
(:func:`verispec.audits.worker.handler`): a worker process for ``"module:function"``
(:mod:`verispec.isolation`: a time limit per request; a hang or a crash is that request's
answer, and the next request starts a fresh worker), or this process for a callable the user
trusts (no time limit). :func:`sample_in_chunks` draws one instance in chunks whose sizes the
design chooses from the verifier's speed, never from its outputs; the chunks answered are
kept whatever happens to a later one, and a progress line follows a chunk at most every
:data:`CHUNK_SECONDS`. :func:`answer_each` sends one request per instance (the boundary mode).

The chunk constants are here, and only here.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from verispec.audits.worker import handler
from verispec.errors import UsageError
from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout

__all__ = [
    "BUDGETED_FIRST_CHUNK",
    "CHUNK_SECONDS",
    "GROWTH",
    "PLANNED_FIRST_CHUNK",
    "WORKER_THREADS",
    "Drawn",
    "Isolation",
    "Lane",
    "answer_each",
    "check_isolation",
    "open_lane",
    "sample_in_chunks",
    "target_name",
]

#: Threads (OpenMP, MKL, OpenBLAS, hence torch) per worker process unless the user asks for
#: more: on a loaded machine a torch verifier's default threads ran 30x slower.
WORKER_THREADS = 1
#: Seconds a planned design's chunk is sized to take at the speed the last one ran; also the
#: least time between two progress lines of an instance.
CHUNK_SECONDS = 2.0
#: Calls in a planned instance's first chunk: few, so that a slow verifier's first chunk is
#: not lost to the time limit (a chunk lost loses only itself) and its speed is known soon.
#: The planned design resumes the instance's random streams from chunk to chunk, so its chunk
#: sizes never change its samples.
PLANNED_FIRST_CHUNK = 256
#: Samples in a budgeted instance's first chunk, after which the e-process is first checked.
#: Each budgeted chunk draws from a seed of its own, so the chunk sizes are part of that
#: design: this value fixes the samples (and the p-values) of a seeded sample budget.
BUDGETED_FIRST_CHUNK = 1000
#: A budgeted chunk is at most this many times the samples drawn before it (the e-process is
#: checked after every chunk: a stop overshoots the samples it needed by at most this factor).
GROWTH = 2


@dataclass(frozen=True)
class Isolation:
    """How an audited function runs: ``threads`` per worker process (``None``: the libraries'
    defaults), the interpreter ``python`` (``None``: verispec's own), and whose ``drafts`` it
    verifies (``"given"``: verispec's, drawn from the declared law; ``"self"``: it drafts
    itself, :class:`~verispec.audits.rounds.SelfDraftRounds`)."""

    threads: int | None = WORKER_THREADS
    python: str | None = None
    drafts: str = "given"

    def worker(self, function: str, timeout_s: float) -> Worker:
        """A started audit worker. One that cannot start is a usage error (the function cannot
        be imported, a package missing under ``python``, an import that kills the process),
        never an instance's fault."""
        worker = Worker(
            "verispec.audits.worker",
            {"function": function},
            startup_timeout_s=timeout_s,
            threads=self.threads,
            python=self.python,
        )
        try:
            worker.start()
        except (WorkerCrashed, WorkerTimeout) as exc:
            worker.close()
            under = f" under {self.python}" if self.python else ""
            raise UsageError(
                f"function={function!r}: the audit worker could not start{under}: {exc}"
            ) from None
        except RemoteError as exc:
            worker.close()
            raise UsageError(
                exc.message if exc.kind == "usage" else f"function={function!r}: {exc}"
            ) from None
        except BaseException:
            worker.close()
            raise
        return worker


def check_isolation(
    threads: int | None, python: str | None, drafts: str = "given", kind: str = "chain"
) -> Isolation:
    """Check the worker's ``threads``, ``python`` and the black box's ``drafts``."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise UsageError(f"threads={threads!r} must be a positive integer or None")
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UsageError(f"python={python!r} is not an executable file")
    if drafts not in ("given", "self"):
        raise UsageError(f"drafts={drafts!r} must be 'given' or 'self'")
    if drafts == "self" and kind != "chain":
        raise UsageError(f"drafts='self' audits chain black boxes only (kind={kind!r})")
    return Isolation(threads, python, drafts)


def target_name(function: str | Callable[..., Any], seed: Any) -> str:
    """Check an audit's ``function`` and ``seed``; the name its report and command use."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed={seed!r} must be a non-negative integer")
    if isinstance(function, str):
        if function.count(":") != 1 or not all(function.split(":")):
            raise UsageError(f"function={function!r} must be written module:function")
        return function
    return str(getattr(function, "__qualname__", repr(function)))


@dataclass(frozen=True)
class Lane:
    """Where a black box answers requests: ``ask(request, timeout_s)``. ``isolated``: in a
    worker process, where the time limit holds; a callable answers here, without one."""

    ask: Callable[[dict[str, Any], float], dict[str, Any]]
    isolated: bool


@contextlib.contextmanager
def open_lane(function: str | Callable[..., Any], isolation: Isolation, timeout_s: float) -> Iterator[Lane]:
    """A lane for ``function``: ``"module:function"`` in a started worker process (closed on
    exit), a callable in this process. Every request says whose drafts the black box verifies."""
    drafts = isolation.drafts
    if isinstance(function, str):
        with isolation.worker(function, timeout_s) as worker:
            yield Lane(lambda request, limit: _ask(worker, {**request, "drafts": drafts}, limit), True)
    else:
        handle = handler(function)
        yield Lane(lambda request, _limit: handle({**request, "drafts": drafts}), False)


def _ask(worker: Worker, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One request to the audit worker; a crash or an exception is the answer's error, a
    hang its ``"time_limit"``."""
    try:
        return dict(worker.ask(request, timeout_s))
    except WorkerTimeout:
        return {"time_limit": f"did not finish within {timeout_s:g} s (time limit)"}
    except WorkerCrashed as exc:
        return {"error": f"the audit process crashed: {exc}"}
    except RemoteError as exc:
        if exc.kind == "usage":  # the function could not be loaded
            raise UsageError(exc.message) from None
        where = f" at {exc.where}" if exc.where else ""
        return {"error": f"the audit worker raised {exc}{where}"}


@dataclass
class Drawn:
    """What an instance's chunks gave: the completed sequences and the block lengths counted,
    the contract error that ended it, the time limit that cut it short (the answer's text, or
    ``""`` when the instance's time was spent before a request) and the size of the chunk it
    cut, and the seconds spent waiting for answers."""

    counts: Counter[str] = field(default_factory=Counter)
    blocks: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    time_limit: str | None = None
    cut_chunk: int = 0
    seconds: float = 0.0

    @property
    def n(self) -> int:
        """The samples drawn."""
        return sum(self.counts.values())


def sample_in_chunks(
    lane: Lane,
    request: Callable[[int, int], dict[str, Any]],
    first: int,
    next_size: Callable[[Drawn, int, float], int],
    *,
    timeout_s: float,
    limit_each_chunk: bool = False,
    stop: Callable[[Drawn], bool] | None = None,
    on_progress: Callable[[str], None] | None = None,
    goal: int | None = None,
) -> Drawn:
    """Sample one instance in chunks, the one loop of every sampling design.

    ``request(chunk, size)`` is the request for the ``chunk``-th chunk (from 0) of ``size``
    calls; ``first`` is the first size and ``next_size(drawn, size, seconds)`` each next one,
    from the samples drawn and the last chunk's size and seconds (below 1: the instance is
    done). ``timeout_s`` limits the whole instance, or each chunk with ``limit_each_chunk``;
    a lane in this process has no time limit. After each chunk, ``stop(drawn)`` may end the
    sampling early (the budgeted design's e-process). An error or a time limit ends it too;
    the chunks answered before are kept. ``on_progress`` receives a line (``goal``: the
    samples planned) after a chunk at most every :data:`CHUNK_SECONDS`, and after the last.
    """
    drawn = Drawn()
    start = told = time.monotonic()
    deadline = start + timeout_s
    size, chunk = first, 0
    while size >= 1:
        began = time.monotonic()
        limit = timeout_s if limit_each_chunk or not lane.isolated else deadline - began
        answer = lane.ask(request(chunk, size), limit) if limit > 0 else {"time_limit": ""}
        took = time.monotonic() - began
        drawn.seconds += took
        chunk += 1
        drawn.counts.update(answer.get("counts", {}))
        drawn.blocks.update(answer.get("block_lengths", {}))
        if answer.get("error"):
            drawn.error = answer["error"]
            break
        if "time_limit" in answer:
            drawn.time_limit, drawn.cut_chunk = answer["time_limit"], size
            break
        size = 0 if stop is not None and stop(drawn) else next_size(drawn, size, took)
        now = time.monotonic()
        if on_progress and (now - told >= CHUNK_SECONDS or size < 1):
            told = now
            of = "" if goal is None else f"/{goal:,}"
            on_progress(f"{drawn.n:,}{of} samples, {drawn.n / max(now - start, 1e-9):,.0f} calls/s")
    return drawn


def answer_each(
    lane: Lane,
    requests: list[dict[str, Any]],
    timeout_s: float,
    on_answer: Callable[[int, dict[str, Any]], None],
) -> None:
    """One request per instance, each within ``timeout_s``: a time limit is that instance's
    error (the boundary mode keeps nothing of a probe cut short)."""
    for request in requests:
        answer = lane.ask(request, timeout_s)
        if "time_limit" in answer:
            answer = {"error": answer["time_limit"]}
        on_answer(request["index"], answer)
