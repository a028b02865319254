"""Failure kinds, kept apart all the way to the exit code.

* :class:`UsageError`: the caller asked for something invalid (bad argument, unknown name).
* :class:`NonConformance`: the thing under test is wrong.
* :class:`InternalError`: verispec itself is wrong; please report it.
* :class:`MissingDependency`: an optional dependency is not installed.
* :class:`ServerUnavailable`: a server the run talks to cannot be used (exit 4 as well: the
  run needs something that is not there).
"""

from __future__ import annotations

import difflib
import enum
import functools
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable

__all__ = [
    "ExitCode",
    "InternalError",
    "MissingDependency",
    "NonConformance",
    "ServerUnavailable",
    "UsageError",
    "VerispecError",
    "installed",
    "require",
    "unknown_name",
]


class ExitCode(enum.IntEnum):
    """Exit codes of the ``verispec`` command line (a stable interface)."""

    OK = 0
    NON_CONFORMANCE = 1
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3
    MISSING_DEPENDENCY = 4
    INCONCLUSIVE = 10


class VerispecError(Exception):
    """Base class of every error verispec raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL_ERROR


class UsageError(VerispecError, ValueError):
    """An argument is invalid. The message names the argument and repeats its value."""

    exit_code = ExitCode.USAGE_ERROR


class NonConformance(VerispecError):
    """The implementation under test broke its contract (for example, returned a bad block)."""

    exit_code = ExitCode.NON_CONFORMANCE


class InternalError(VerispecError, RuntimeError):
    """verispec reached a state its own invariants forbid."""

    exit_code = ExitCode.INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (this is a bug in verispec; please report it)")


class MissingDependency(VerispecError, ImportError):
    """An optional dependency is needed; the message gives the install command."""

    exit_code = ExitCode.MISSING_DEPENDENCY

    def __init__(self, module: str, extra: str, install: str | None = None) -> None:
        command = install or f"pip install 'verispec[{extra}]'"
        super().__init__(f"this feature needs the optional dependency {module!r}; install it with: {command}")
        self.module = module
        self.extra = extra

    @classmethod
    def carried(cls, message: str) -> MissingDependency:
        """The error as it crossed from a worker process (its message already names the install)."""
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.module, error.extra = "", ""
        return error


class ServerUnavailable(VerispecError):
    """A server the run talks to cannot be used: it cannot be reached, does not answer as an
    OpenAI-compatible server, does not serve the model, or ran out of time. The message names
    the URL and repeats the server's answer (never a secret)."""

    exit_code = ExitCode.MISSING_DEPENDENCY
    #: the HTTP status, where the server answered one, and its error message
    status: int | None = None
    answer: str = ""


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def installed(module: str) -> bool:
    """Whether the top-level ``module`` is installed: an installed distribution provides it
    and it can be found. A bare folder of that name on the path (a source checkout never
    built, a folder of scripts) is not an installation, though ``importlib.util.find_spec``
    finds it."""
    return bool(_distributions().get(module)) and importlib.util.find_spec(module) is not None


def require(module: str, extra: str) -> object:
    """Import an optional dependency or raise :class:`MissingDependency`."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingDependency(module, extra) from exc


def unknown_name(argument: str, value: str, known: Iterable[str]) -> UsageError:
    """A usage error for an unknown name, suggesting the closest known ones."""
    known = sorted(known)
    close = difflib.get_close_matches(value, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return UsageError(f"{argument}={value!r} is not a known name{hint} (known: {', '.join(known)})")
