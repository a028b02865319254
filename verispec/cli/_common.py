"""What every command shares: the parser that turns misuse into usage errors, option types
whose errors name the option, and progress on standard error."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any, NoReturn

from verispec.errors import UsageError
from verispec.stats.plan import check_rate

__all__ = ["Parser", "add_budget_options", "int_at_least", "model_options", "progress", "rate"]


class Parser(argparse.ArgumentParser):
    """argparse that reports misuse as a verispec usage error (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        # "argument --jobs: --jobs=0 must be >= 1" reads better without its preamble
        raise UsageError(re.sub(r"^argument (\S+): (\1=)", r"\2", message))


def int_at_least(name: str, minimum: int) -> Any:
    """An argparse type for integers ``>= minimum`` whose errors name the option."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name}={value} must be >= {minimum}")
        return value

    return parse


def rate(name: str) -> Any:
    """An argparse type for a rate in (0, 1) (``--alpha``, ``--power``), validated by the one
    function that validates rates everywhere (:func:`verispec.stats.plan.check_rate`)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={text!r} is not a number") from None
        try:
            return check_rate(name, value)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def add_budget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a smoke-test budget (seconds)")
    p.add_argument(
        "--instances",
        type=int_at_least("--instances", 0),
        default=None,
        help="random round instances per exact verifier (default 2000; 150 with --quick)",
    )
    p.add_argument(
        "--seed", type=int_at_least("--seed", 0), default=0, help="seed of the random instances (default 0)"
    )
    p.add_argument(
        "--jobs",
        type=int_at_least("--jobs", 1),
        default=default_jobs(),
        help="parallel processes (default: min(2, CPUs))",
    )


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """The engine factory's options from ``--size``, ``--target`` and ``--draft``, and from
    ``--mutation`` and ``--fix`` where the command has them."""
    options: dict[str, Any] = {}
    for key in ("size", "target", "draft"):
        if getattr(args, key, None):
            options[key] = getattr(args, key)
    for flag, key in (("mutation", "mutations"), ("fix", "fixes")):
        if getattr(args, flag, None):
            options[key] = getattr(args, flag)
    return options
