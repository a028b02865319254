"""A verispec engine behind an OpenAI-compatible completions API (``verispec serve-engine``).

The server is the other half of ``--engine openai:URL``: the reference engine, with or
without a planted bug, served the way real engines are, so that every check that can run on
a black box is shown to catch its bugs through HTTP too. It answers

* ``GET /v1/models``: the one model it serves;
* ``GET /health``: 200 once the engine is built;
* ``POST /v1/completions``: a token-id prompt (``prompt``: a list of ids, or a list holding
  one) with ``max_tokens``, ``temperature``, ``top_k`` (-1 or 0: off), ``top_p``, ``min_p``,
  ``seed``, ``stop_token_ids``, the three penalties (where the engine takes them), ``n`` = 1;
  the choice carries ``token_ids`` (as vLLM's ``return_token_ids`` gives them), an empty
  ``text`` (the engine has no tokenizer) and ``finish_reason``, with ``usage``. A text
  prompt, streaming, logprobs or ``n`` > 1 are refused with HTTP 400 and the reason; an
  unknown model is HTTP 404.

Requests that arrive together (within :data:`WINDOW_S` of the first, up to ``max_batch``)
go to the engine in one ``generate`` call, so concurrent clients are batched as a serving
engine batches them.
"""

from __future__ import annotations

import itertools
import json
import queue
import secrets
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from verispec.conformance.checks import get
from verispec.engines.openai_api import CAPABILITIES
from verispec.engines.protocol import Completion, Request, Sampling
from verispec.errors import UsageError, VerispecError

__all__ = ["WINDOW_S", "EngineServer", "parse_completion_request", "through_api"]

#: Seconds the batcher waits after a request for others to join its batch.
WINDOW_S = 0.01
#: The largest request body taken, in bytes.
MAX_BODY = 1 << 20


def through_api(checks: Sequence[str]) -> list[str]:
    """Those of ``checks`` that can run on an engine behind the API (``openai:URL``): the
    ones whose capabilities a black box has."""
    return [name for name in checks if not get(name).missing(CAPABILITIES)]


class BadRequest(Exception):
    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.status = status


def _number(body: dict[str, Any], key: str, default: Any, kind: type) -> Any:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise BadRequest(f"{key}={value!r} must be {'a number' if kind is float else 'an integer'}")
    return kind(value)


def parse_completion_request(body: Any, *, model: str, vocab_size: int, penalties: bool) -> Request:
    """The verispec request for a completions request body, or :class:`BadRequest` naming the
    field and its value."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if body.get("model") != model:
        raise BadRequest(
            f"The model `{body.get('model')}` does not exist; this server serves {model!r}.",
            HTTPStatus.NOT_FOUND,
        )
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]
    if isinstance(prompt, str) or (isinstance(prompt, list) and any(isinstance(p, str) for p in prompt)):
        raise BadRequest("prompt: this server takes token-id prompts only (the engine has no tokenizer)")
    if (
        not isinstance(prompt, list)
        or not prompt
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        raise BadRequest(f"prompt={prompt!r} must be a non-empty list of token ids")
    bad = [t for t in prompt if not 0 <= t < vocab_size]
    if bad:
        raise BadRequest(f"prompt holds id {bad[0]} outside the vocabulary 0..{vocab_size - 1}")
    for key, refusal in (("stream", "streaming is not served"), ("logprobs", "logprobs are not served")):
        if body.get(key) not in (None, False, 0):
            raise BadRequest(f"{key}={body.get(key)!r}: {refusal}")
    if _number(body, "n", 1, int) != 1:
        raise BadRequest(f"n={body.get('n')!r}: only n = 1 is served")
    top_k = _number(body, "top_k", None, int)
    top_p = _number(body, "top_p", None, float)
    min_p = _number(body, "min_p", None, float)
    stops = body.get("stop_token_ids") or []
    if not isinstance(stops, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in stops):
        raise BadRequest(f"stop_token_ids={stops!r} must be a list of token ids")
    penalty = {
        key: _number(body, key, neutral, float)
        for key, neutral in (
            ("frequency_penalty", 0.0),
            ("presence_penalty", 0.0),
            ("repetition_penalty", 1.0),
        )
    }
    try:
        sampling = Sampling(
            _number(body, "temperature", 1.0, float),
            top_k=None if top_k in (None, 0, -1) else top_k,
            top_p=None if top_p in (None, 1.0) else top_p,
            min_p=min_p if min_p else None,
            **penalty,
        )
    except UsageError as exc:
        raise BadRequest(str(exc)) from None
    if sampling.penalised and not penalties:
        raise BadRequest("penalties: this engine does not apply them (no 'penalties' capability)")
    seed = body.get("seed")
    max_tokens = _number(body, "max_tokens", 16, int)
    if max_tokens < 0:
        raise BadRequest(f"max_tokens={max_tokens!r} must be >= 0")
    return Request(
        tuple(prompt),
        max_tokens,
        sampling,
        seed=secrets.randbits(31) if seed is None else _number(body, "seed", 0, int),
        stop_ids=tuple(stops),
    )


class EngineServer:
    """Serve ``engine`` as ``model`` on ``host:port`` (0: a free port, see :attr:`port`)."""

    def __init__(
        self, engine: Any, *, model: str, host: str = "127.0.0.1", port: int = 0, max_batch: int = 8
    ) -> None:
        self.engine = engine
        self.model = model
        self.max_batch = max_batch
        self.penalties = "penalties" in set(getattr(engine, "capabilities", ()))
        self._queue: queue.Queue[tuple[Request, Future[Completion]]] = queue.Queue()
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the client reports
                return

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: HTTPStatus, message: str) -> None:
                kind = "NotFoundError" if status == HTTPStatus.NOT_FOUND else "BadRequestError"
                if status >= 500:
                    kind = "InternalServerError"
                self._send(status, {"error": {"message": message, "type": kind, "code": int(status)}})

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": server.model, "object": "model", "owned_by": "verispec"}],
                        },
                    )
                elif self.path.rstrip("/") == "/health":
                    self._send(200, {})
                else:
                    self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/completions":
                    self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes")
                    return
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                    request = parse_completion_request(
                        body,
                        model=server.model,
                        vocab_size=int(server.engine.vocab_size),
                        penalties=server.penalties,
                    )
                except json.JSONDecodeError:
                    self._error(HTTPStatus.BAD_REQUEST, "the body is not JSON")
                    return
                except BadRequest as exc:
                    self._error(exc.status, str(exc))
                    return
                try:
                    completion = server.submit(request).result()
                except VerispecError as exc:
                    self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"the engine failed: {exc}")
                    return
                except Exception as exc:  # the engine's own failure, reported to the client
                    self._error(
                        HTTPStatus.INTERNAL_SERVER_ERROR, f"the engine failed: {type(exc).__name__}: {exc}"
                    )
                    return
                self._send(200, server.answer(request, completion))

        try:
            self.http = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise UsageError(
                f"--port={port} on --host={host!r} cannot be bound: {exc.strerror or exc}"
            ) from None
        self.http.daemon_threads = True
        address = self.http.server_address
        self.host, self.port = str(address[0]), int(address[1])
        self._batcher = threading.Thread(target=self._batches, name="verispec-batcher", daemon=True)
        self._batcher.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def submit(self, request: Request) -> Future[Completion]:
        done: Future[Completion] = Future()
        self._queue.put((request, done))
        return done

    def _batches(self) -> None:
        """One ``generate`` call for the requests that arrived together."""
        while True:
            batch = [self._queue.get()]
            deadline = time.monotonic() + WINDOW_S
            while len(batch) < self.max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    batch.append(self._queue.get(timeout=left))
                except queue.Empty:
                    break
            try:
                completions = self.engine.generate([r for r, _ in batch])
            except Exception as exc:  # every request of the batch gets the engine's failure
                for _, done in batch:
                    done.set_exception(exc)
                continue
            for (_, done), completion in zip(batch, completions, strict=True):
                done.set_result(completion)

    def answer(self, request: Request, completion: Completion) -> dict[str, Any]:
        return {
            "id": f"cmpl-{next(self._ids)}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "text": "",
                    "token_ids": list(completion.tokens),
                    "logprobs": None,
                    "finish_reason": completion.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": len(request.prompt),
                "completion_tokens": len(completion.tokens),
                "total_tokens": len(request.prompt) + len(completion.tokens),
            },
        }

    def serve_forever(self) -> None:
        self.http.serve_forever()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
