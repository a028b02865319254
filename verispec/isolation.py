"""Third-party code in a process of its own: spawning, import paths, time limits, errors.

Engines, black-box verifiers and audited index functions are code verispec did not write;
each runs in a worker process so that a crash, a hang or a stray ``sys.exit`` cannot take
verispec's own state with it. The three harnesses share this module:

* the parent side, :class:`Worker`: starts ``python -m <module>``, sends one configuration
  line, then one JSON request per line, and waits for each answer under a time limit; a
  worker that hangs is killed and the next request starts a fresh one;
* the worker side, :func:`serve`: builds a handler from the configuration and answers
  requests until its input closes;
* the transport of errors: an exception in the worker crosses the boundary as a structured
  record (:func:`error_record`: its kind, exception type, message and the place that raised
  it), which the parent raises as :class:`RemoteError`, never as a string to parse back.

The worker's standard output carries the protocol only: whatever the code under test
prints goes to its standard error, which the parent sends to a file (never a pipe that
could fill up and deadlock) and quotes when the worker dies.

Every process verispec starts ends when the process that started it ends, by a signal
(SIGTERM, SIGKILL) or a crash, even while busy in a request (:func:`die_with_parent`,
installed by :func:`serve` and by :func:`process_pool`'s initializer): on Linux the kernel
kills it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), elsewhere a watchdog thread does. A worker
leads a process group of its own, so that the processes the code under test starts (vLLM's
engine core) end with it: the parent kills the whole group on a time limit or a close, and
a small reaper process in the group kills it once the worker has ended any other way. No
time limit is enforced inside the worker: while the parent lives its limit kills a hung
worker, and once it is gone the parent-death signal does; an alarm in the worker would take
``SIGALRM`` from the code under test.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import multiprocessing
import os
import queue
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, NoReturn, TypeVar

from verispec.errors import UsageError

__all__ = [
    "PARENT_PID_ENV",
    "RemoteError",
    "Worker",
    "WorkerCrashed",
    "WorkerTimeout",
    "die_with_parent",
    "error_record",
    "load_function",
    "process_pool",
    "serve",
    "worker_env",
]

#: How much of a dead worker's standard error is quoted.
STDERR_TAIL_LINES = 3

#: The environment variable that tells a worker the pid of the process that started it.
PARENT_PID_ENV = "VERISPEC_PARENT_PID"

#: How often the portable watchdog (platforms without ``prctl``) looks for its parent, in seconds.
WATCHDOG_PERIOD_S = 0.5

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_T = TypeVar("_T")


def load_function(spec: str, *, argument: str = "function") -> Callable[..., Any]:
    """Import ``module:attribute`` (dotted attributes allowed); errors name ``argument``."""
    if spec.count(":") != 1 or not all(spec.split(":")):
        raise UsageError(f"{argument}={spec!r} must be written module:function")
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"{argument}={spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"{argument}={spec!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise UsageError(f"{argument}={spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


def worker_env(threads: int | None = None, *, foreign: bool = False) -> dict[str, str]:
    """The worker's environment: the current folder importable (``mypkg:make`` resolves as it
    does for the user), with ``threads`` OpenMP, MKL and OpenBLAS (hence torch) capped to that
    many threads, and for a ``foreign`` interpreter (not the one running verispec) the folder
    holding verispec, so that its worker module imports there too."""
    env = dict(os.environ)
    paths = [os.getcwd()]
    if foreign:
        paths.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if threads is not None:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid``, the process that started it, ends.

    On Linux the kernel sends this process SIGKILL when its parent ends
    (``prctl(PR_SET_PDEATHSIG)``), which no busy loop, C extension or signal handler can
    delay. Elsewhere a daemon thread checks every :data:`WATCHDOG_PERIOD_S` seconds that
    ``parent_pid`` is still this process's parent and ends it with ``os._exit`` when it is
    not (code that holds the GIL delays it). A parent that ended before this call, a race
    the signal cannot cover, ends this process at once, as does one that is not its parent.
    """
    # the thread only where prctl is missing: on Linux the worker stays single-threaded, so
    # that an engine which forks (multiprocessing's fork start method) is not warned against it
    if not _parent_death_signal(signal.SIGKILL):
        watchdog = threading.Thread(
            target=_watch_parent, args=(parent_pid,), name="verispec-parent-watchdog", daemon=True
        )
        watchdog.start()
    if os.getppid() != parent_pid:
        _parent_gone(parent_pid)


def _parent_death_signal(signum: int) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent ends; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return bool(prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_PERIOD_S)
    _parent_gone(parent_pid)


def _parent_gone(parent_pid: int) -> NoReturn:
    """Exit at once (no cleanup: the code under test may be stuck), saying why on stderr."""
    os.write(
        2,
        f"verispec: pid {parent_pid}, which started this process, is no longer its parent "
        f"(now pid {os.getppid()}): it has ended, or the interpreter was started through a "
        "wrapper that does not exec it; exiting\n".encode(),
    )
    os._exit(1)


#: The reaper of a worker's process group (see :func:`_reap_group_after_this_worker`).
_REAPER = """
import os, signal, sys, time
worker, period = int(sys.argv[1]), float(sys.argv[2])
while os.getppid() == worker:
    time.sleep(period)
os.killpg(0, signal.SIGKILL)
"""

_reaper: subprocess.Popen[bytes] | None = None


def _reap_group_after_this_worker() -> None:
    """Start a small process that waits for this worker to end, however it ends, then kills
    the worker's process group, itself included.

    The parent-death signal kills the worker alone, with no chance to clean up, and the
    processes it started would outlive it (vLLM's engine core, which holds the GPU, does
    not end with its parent: vllm-project/vllm issue 55510); they are in its group unless
    they left it (``setsid``). The reaper polls like the watchdog, from a process of its
    own, so nothing the worker runs can delay it; ``-I -S`` keep its start to milliseconds.
    """
    global _reaper
    _reaper = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid()), str(WATCHDOG_PERIOD_S)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # never the protocol's pipe: the parent reads its end to EOF
    )


def process_pool(max_workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers end when this process ends (:func:`die_with_parent` is
    their initializer).

    They are started with ``spawn`` on every platform: each is then a child of this process
    (under ``forkserver``, Python 3.14's default on Linux, the fork server would be their
    parent) and inherits no lock another thread held (``fork``). They start from the thread
    that submits to the pool, and Linux kills them when that thread ends: keep the pool in a
    ``with`` block in that thread.
    """
    return ProcessPoolExecutor(
        max_workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )


_Start = tuple[Callable[[], Any], Future[Any]]
_starter: tuple[threading.Thread, queue.SimpleQueue[_Start]] | None = None
_starter_lock = threading.Lock()


def _from_a_lasting_thread(start: Callable[[], _T]) -> _T:
    """``start()``, called from a thread that lasts as long as this process.

    Linux sends the parent-death signal when the *thread* that started the child ends, not
    its process, so a worker started from a short-lived thread (an audit lane, a thread
    pool's job) and used after it would be killed. The main thread lasts as long as the
    process; from any other thread the start is handed to one daemon thread kept for it (a
    forked child, where that thread does not exist, starts its own).
    """
    global _starter
    if threading.current_thread() is threading.main_thread():
        return start()
    with _starter_lock:
        if _starter is None or not _starter[0].is_alive():
            jobs: queue.SimpleQueue[_Start] = queue.SimpleQueue()
            thread = threading.Thread(target=_run_starts, args=(jobs,), name="verispec-starter", daemon=True)
            thread.start()
            _starter = (thread, jobs)
        jobs = _starter[1]
    done: Future[_T] = Future()
    jobs.put((start, done))
    return done.result()


def _run_starts(jobs: queue.SimpleQueue[_Start]) -> None:
    while True:
        start, done = jobs.get()
        try:
            done.set_result(start())
        except BaseException as exc:  # raised again in the thread that asked
            done.set_exception(exc)


def error_record(exc: BaseException) -> dict[str, Any]:
    """An exception as a structured record: ``kind`` (``usage`` for a :class:`UsageError`,
    else ``exception``), ``type``, ``message``, ``where`` (file:line of the innermost frame)
    and a short ``traceback``."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return {
        "kind": "usage" if isinstance(exc, UsageError) else "exception",
        "type": type(exc).__name__,
        "message": str(exc),
        "where": where,
        "traceback": "".join(traceback.format_exception(exc, limit=-4)),
    }


@dataclass(eq=False)
class RemoteError(Exception):
    """An exception raised by the code in the worker, carried back as a record."""

    kind: str  # "usage" or "exception"
    type: str
    message: str
    where: str = ""
    traceback: str = ""

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RemoteError:
        return cls(
            str(record.get("kind", "exception")),
            str(record.get("type", "Exception")),
            str(record.get("message", "")),
            str(record.get("where", "")),
            str(record.get("traceback", "")),
        )

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


class WorkerTimeout(Exception):
    """The worker gave no answer within the time limit; it was killed."""


class WorkerCrashed(Exception):
    """The worker process ended without answering (its standard error's tail is quoted)."""


class Worker:
    """The parent side of one worker process (see the module docstring).

    ``module`` is run as ``python -m module`` under ``python`` (default: this interpreter);
    ``config`` is its first input line. The process starts on the first :meth:`ask` and is
    restarted after a hang or a crash; ``restarts`` counts those, ``startup_seconds`` the
    time spent starting. A worker that cannot build its handler answers with an error record,
    raised as :class:`RemoteError` from :meth:`start`.
    """

    def __init__(
        self,
        module: str,
        config: dict[str, Any],
        *,
        startup_timeout_s: float = 600.0,
        threads: int | None = None,
        python: str | None = None,
    ) -> None:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise UsageError(f"threads={threads!r} must be a positive integer or None")
        self.module = module
        self.config = config
        self.startup_timeout_s = startup_timeout_s
        self.threads = threads
        self.python = python or sys.executable
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self.restarts = 0
        self.startup_seconds = 0.0
        self._started_once = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the process and wait for its ready line (or its build error)."""
        started = time.perf_counter()
        try:
            self._spawn()
        finally:
            self.startup_seconds += time.perf_counter() - started

    def _spawn(self) -> None:
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close(), with the process)
        env = worker_env(self.threads, foreign=self.python != sys.executable)
        env[PARENT_PID_ENV] = str(os.getpid())  # serve() makes the worker die with this process
        stderr = self._stderr
        # A session (hence a process group) of its own, so that the processes an engine starts
        # (vLLM's engine core, compile workers) end with the worker instead of keeping a core
        # or the GPU: close() kills the group when the worker hangs or is done, and serve()'s
        # reaper when the worker ends any other way (its parent's death included). An engine
        # that signals its own group on shutdown cannot reach verispec either. The terminal's
        # Ctrl-C reaches the parent only, which closes its workers (or dies, and they with it).
        self.proc = _from_a_lasting_thread(
            lambda: subprocess.Popen(
                [self.python, "-m", self.module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,
            )
        )
        self._buffer = b""
        self._send(self.config)
        try:
            ready = self._receive(self.startup_timeout_s)
        except WorkerTimeout:
            self.close()
            raise WorkerTimeout(f"did not start within {self.startup_timeout_s:g} s") from None
        except WorkerCrashed:
            self.close()
            raise
        if "fatal" in ready:
            self.close()
            raise RemoteError.from_record(ready["fatal"])

    def ask(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and return its answer; the worker's own exception is raised as
        :class:`RemoteError` (the worker goes on), a hang as :class:`WorkerTimeout` and a dead
        worker as :class:`WorkerCrashed` (both leave the worker closed, restarted next time)."""
        if not self.alive:
            self.start()
        self._send(message)
        try:
            answer = self._receive(timeout_s)
        except (WorkerTimeout, WorkerCrashed):
            self.close()
            raise
        if "exception" in answer:
            raise RemoteError.from_record(answer["exception"])
        return answer

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the worker is gone: reading its answer reports that

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        """One answer line, read without blocking past the deadline (a partial line never hangs)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(timeout=remaining):
                    raise WorkerTimeout(f"no answer within {timeout_s:g} s (time limit)")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise WorkerCrashed(self._exit_text())
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise WorkerCrashed(f"answered {line[:80]!r}, not a JSON object")
        return answer

    def _exit_text(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        text = "the process exited" if code is None else f"the process exited with code {code}"
        tail = self.stderr_tail()
        return f"{text}: {tail}" if tail else text

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The last lines the worker wrote to its standard error, joined by `` | ``."""
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:])

    def close(self) -> None:
        """Kill the worker and its process group (the processes it started), if it runs."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # none left (macOS: zombies)
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream:
                    # a request still buffered for a worker that died cannot be flushed
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()
            self.proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Handler = Callable[[dict[str, Any]], dict[str, Any]]


def serve(build: Callable[[dict[str, Any]], Handler]) -> int:
    """The worker's main loop: read the configuration line, ``build`` the handler (a failure
    is answered as ``{"fatal": record}``), answer ``{"ready": true}``, then one answer per
    request line (an exception as ``{"exception": record}``) until the input closes.

    The protocol keeps the real standard output; the code under test writes to standard
    error whatever it prints. Started by :class:`Worker`, which passes its pid in
    ``VERISPEC_PARENT_PID``, the worker first binds itself to end with that parent
    (:func:`die_with_parent`) and the process group it leads to end with it. The variable
    is taken out of the environment, so that processes the handler starts do not inherit it.
    """
    parent = os.environ.pop(PARENT_PID_ENV, None)
    if parent:
        die_with_parent(int(parent))
        if os.getpgrp() == os.getpid():  # the group is this worker's own (Worker starts it so)
            _reap_group_after_this_worker()
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.path.insert(0, os.getcwd())

    def answer(data: dict[str, Any]) -> None:
        channel.write(json.dumps(data) + "\n")
        channel.flush()

    try:
        handler = build(json.loads(sys.stdin.readline()))
    except Exception as exc:
        answer({"fatal": error_record(exc)})
        return 0
    answer({"ready": True})
    for line in sys.stdin:
        try:
            reply = handler(json.loads(line))
        except Exception as exc:
            reply = {"exception": error_record(exc)}
        answer(reply)
    return 0
