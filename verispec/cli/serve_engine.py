"""``verispec serve-engine``: a verispec engine behind an OpenAI-compatible completions API."""

from __future__ import annotations

import argparse
import signal
from typing import Any

from verispec.cli._common import int_at_least, model_options, progress
from verispec.conformance.api_server import EngineServer
from verispec.conformance.engine_worker import build_engine
from verispec.engines import registry
from verispec.verdicts import RunVerdict


def add_parser(sub: Any) -> None:
    built_ins = ", ".join(registry.names())
    p = sub.add_parser(
        "serve-engine",
        help="serve a verispec engine (a planted bug included) behind an OpenAI-compatible API",
        description="Build an engine (built-in: "
        f"{built_ins}; or module:factory) in this process and serve it at http://HOST:PORT/v1 "
        "(GET /v1/models, GET /health, POST /v1/completions with token-id prompts; requests that "
        "arrive together are batched), the counterpart of `verispec conform --engine openai:URL`. "
        "Prints the URL once it is ready and serves until interrupted. Exit 0 when stopped, 2 when "
        "the port cannot be bound.",
    )
    p.add_argument("--engine", default="reference", metavar="NAME|MODULE:FACTORY", help="default reference")
    p.add_argument("--device", default="cpu", help="device passed to the engine factory (default cpu)")
    p.add_argument("--size", default=None, help="model pair for built-in engines (default: the engine's, ci)")
    for flag in ("target", "draft"):
        p.add_argument(f"--{flag}", default=None, metavar="PATH", help=f"a checkpoint folder as the {flag}")
    p.add_argument("--mutation", action="append", default=[], metavar="NAME", help="plant a catalogued bug")
    p.add_argument(
        "--fix", action="append", default=[], metavar="NAME", help="apply a known engine bug's fix"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--port", type=int_at_least("--port", 0), default=8000, help="port (0: a free one)")
    p.add_argument("--model", default=None, help="the model name to serve (default the engine's name)")
    p.add_argument(
        "--max-batch", type=int_at_least("--max-batch", 1), default=8, help="requests per generate call"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    options = model_options(args)
    progress(f"serve-engine: building {args.engine}")
    engine = build_engine(args.engine, args.device, options)
    model = args.model or str(getattr(engine, "name", args.engine))
    server = EngineServer(engine, model=model, host=args.host, port=args.port, max_batch=args.max_batch)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"serving {model!r} at {server.url}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        progress("serve-engine: stopped")
    finally:
        server.close()
    return RunVerdict.PASS
