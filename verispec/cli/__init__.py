"""The ``verispec`` command line: one module per command, each a thin layer over the library.

Every command returns a :class:`~verispec.verdicts.RunVerdict`, and one policy
(:func:`verispec.verdicts.exit_code`) turns it into the exit code (a stable interface):
0 pass, 1 non-conformance, 2 usage error, 3 internal error, 4 missing dependency (an optional
package, or a server that cannot be used), 10 inconclusive. Misuse is a usage error printed
without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from verispec._version import __version__
from verispec.cli import audit, check, conform, controls, plan, prove, serve, serve_engine, smt
from verispec.cli._common import Parser
from verispec.errors import ExitCode, MissingDependency, UsageError, VerispecError
from verispec.verdicts import exit_code

__all__ = ["build_parser", "main"]

#: The commands, in the order ``verispec --help`` lists them.
COMMANDS = (prove, smt, plan, audit, conform, serve, serve_engine, controls, check)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="verispec",
        description="Prove and test that speculative decoding keeps the target model's distribution.",
        epilog="exit codes: 0 pass, 1 non-conformance, 2 usage error, 3 internal error, "
        "4 missing dependency (an optional package, or a server that cannot be used), 10 inconclusive",
    )
    parser.add_argument("--version", action="version", version=f"verispec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``verispec`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "handler", None) is None:
            parser.print_help()
            return int(ExitCode.USAGE_ERROR)
        args.argv = argv
        return int(exit_code(args.handler(args)))
    except MissingDependency as exc:
        print(f"verispec: {exc}", file=sys.stderr)
        return int(ExitCode.MISSING_DEPENDENCY)
    except UsageError as exc:
        print(f"verispec: error: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    except VerispecError as exc:
        print(f"verispec: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("verispec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`verispec controls list | head`): not an error of ours; point
        # stdout at devnull so that the interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception:
        traceback.print_exc()
        print(
            "verispec: internal error (this is a bug in verispec; please report it with the traceback above)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL_ERROR)


if __name__ == "__main__":
    sys.exit(main())
