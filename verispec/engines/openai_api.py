"""Any engine through the API it already serves: an OpenAI-compatible completions server.

``verispec conform --engine openai:URL`` drives a running server as a black box. Each request
goes to ``POST URL/v1/completions`` with a token-id prompt and the request's settings
(``max_tokens``, ``temperature``, ``top_k``, ``top_p``, ``min_p``, ``seed``,
``stop_token_ids``, ``ignore_eos``, ``return_token_ids``: vLLM's names), several at once so
that the server batches them; what comes back is the completion's token ids and finish
reason. Drafts cannot be placed and rounds are not seen, so the checks that need them are
skipped with the reason.

The baseline is not the server's: it is a local checkpoint of the same model, scored by
transformers token by token (``--size`` for a built-in pair's target, ``--target PATH`` for
a checkpoint folder), and the report says which. Where the server drafts with a model of its
own, ``--draft PATH`` names a local copy of it: the engine then declares ``draft-model``, and
``sampling-law`` orders tokens by the target-to-draft ratio, where drafting bugs put their
mass (without it, a draft bug moves a token's law as much but is seen with less power). The
server's vocabulary cannot be read through the API; a token id outside the baseline's
vocabulary fails ``ids-in-vocab``.

The API key, where the server wants one, is read from the environment
(``VERISPEC_API_KEY``, else ``OPENAI_API_KEY``), never from an option, so it is never written
to a report or a log.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from verispec.engines.model_pairs import load_pair
from verispec.engines.protocol import Completion, Request, Sampling, probe_sequence, refuse_unsupported
from verispec.engines.torchlm import along
from verispec.errors import ServerUnavailable, UsageError

__all__ = ["API_KEY_VARIABLES", "CAPABILITIES", "OpenAIServer", "base_url", "make_openai"]

#: What a black box offers: the baseline is local, requests go out together, seeds are sent.
CAPABILITIES = frozenset({"target-logits", "batch", "seeded"})
#: Where the API key is read from, in this order.
API_KEY_VARIABLES = ("VERISPEC_API_KEY", "OPENAI_API_KEY")
#: Requests in flight at once (the server batches what arrives together).
CONCURRENCY = 8
#: Seconds an HTTP call may take before the server counts as out of time.
HTTP_TIMEOUT = 120.0
#: The most of a server's answer an error repeats.
ANSWER_CHARS = 400
#: The truncations a server may refuse, each probed at start-up with a one-token request
#: (``--fix no-NAME`` leaves one unsent, for a server a known bug makes fail on it).
TRUNCATIONS = {
    "min_p": Sampling(1.0, min_p=0.1),
    "top_p": Sampling(1.0, top_p=0.9),
    "top_k": Sampling(1.0, top_k=5),
}
#: ``--fix`` names: the truncation a workaround leaves unsent.
FIXES = {f"no-{name.replace('_', '-')}": name for name in TRUNCATIONS}


def _message(answer: str) -> str:
    """The error message of an OpenAI-style error body, else the body."""
    try:
        return str(json.loads(answer)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return answer


def base_url(url: str) -> str:
    """``url`` without a trailing slash or ``/v1``: the server's root. Only http and https
    are taken."""
    root = url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    if not root.startswith(("http://", "https://")) or len(root.split("://", 1)[1]) == 0:
        raise UsageError(
            f"engine='openai:{url}': the URL must start with http:// or https:// and name a host"
        )
    return root


class OpenAIServer:
    """A completions server as a verispec engine (see the module's description)."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        size: str = "ci",
        target: str | None = None,
        draft: str | None = None,
        seed: int = 0,
        device: str = "cpu",
        fixes: Sequence[str] = (),
        concurrency: int = CONCURRENCY,
    ) -> None:
        unknown = [f for f in fixes if f not in FIXES]
        if unknown:
            raise UsageError(f"--fix={unknown[0]!r} is not one of {', '.join(FIXES)} (for openai:URL)")
        self.fixes = tuple(sorted(fixes))
        self.url = base_url(url)
        self._key = next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), None)
        served = self._served_models()
        if model is None:
            if len(served) != 1:
                raise UsageError(
                    f"engine='openai:{url}' serves {len(served)} models ({', '.join(served) or 'none'}): "
                    "name one with --model"
                )
            model = served[0]
        elif model not in served:
            raise ServerUnavailable(
                f"{self.url}/v1/models does not list model={model!r}; it serves {', '.join(served) or 'none'}"
            )
        self.model = model
        self.concurrency = concurrency
        pair = load_pair(size, seed=seed, device=device, target=target, draft=draft or target)
        self.baseline = pair.target
        self.draft = pair.draft if draft is not None else None
        self.vocab_size = pair.vocab_size
        self.prompts = list(pair.prompts)
        self.prompt_kinds = list(pair.prompt_kinds)
        self.name = f"openai[{model}]" + (f"+fix[{','.join(self.fixes)}]" if self.fixes else "")
        self.gamma = None
        self.capabilities = CAPABILITIES | ({"draft-model"} if draft is not None else set())
        #: penalties are not sent: servers differ in what a penalty does, and a request
        #: carries one only to engines that declare vLLM's semantics (``penalties``)
        self.unsupported: dict[str, str] = {
            FIXES[f]: f"not sent (--fix {f}: the server fails on it)" for f in self.fixes
        }
        self._probe()
        self.notes = [
            f"an OpenAI-compatible server at {self.url}, model {model!r}, as it is configured (a black "
            "box: drafts are not placed and rounds are not seen); requests in flight at once: "
            f"{concurrency}; baseline: {pair.describe() if draft else 'the target of ' + pair.describe()} "
            "scored by transformers token by token, not the server's own numbers"
            + ("; the draft checkpoint stands for the server's draft model" if draft else "")
        ] + [f"{name} is not sent: {why}" for name, why in self.unsupported.items()]

    # ----------------------------------------------------------------- HTTP
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One HTTP call; the JSON answer, or :class:`ServerUnavailable` naming the URL and
        repeating the server's answer."""
        where = f"{self.url}{path}"
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(where, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
                text = response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            answer = exc.read().decode("utf-8", errors="replace")[:ANSWER_CHARS]
            error = ServerUnavailable(f"{method} {where} answered HTTP {exc.code}: {answer}")
            error.status, error.answer = exc.code, _message(answer)
            raise error from None
        except urllib.error.URLError as exc:
            raise ServerUnavailable(f"{method} {where}: cannot connect ({exc.reason})") from None
        except TimeoutError:
            raise ServerUnavailable(f"{method} {where}: no answer within {HTTP_TIMEOUT:g} s") from None
        except OSError as exc:
            raise ServerUnavailable(f"{method} {where}: {exc}") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise ServerUnavailable(
                f"{method} {where} did not answer JSON, so it is not an OpenAI-compatible server: "
                f"{text[:ANSWER_CHARS]!r}"
            ) from None

    def _served_models(self) -> list[str]:
        answer = self._call("GET", "/v1/models")
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or not all(isinstance(m, dict) and "id" in m for m in data):
            raise ServerUnavailable(
                f"GET {self.url}/v1/models is not an OpenAI model list: {json.dumps(answer)[:ANSWER_CHARS]}"
            )
        return [str(m["id"]) for m in data]

    def _probe(self) -> None:
        """One greedy token, to fail at start-up on a server that takes no token-id prompts
        or returns no token ids; then one sampled token with each truncation not left out:
        one the server refuses (HTTP 400) is declared unsupported with its answer, so that
        the checks take their alternatives; one that fails the server (HTTP 5xx) stops the
        run, naming the workaround."""
        prompt = tuple(probe_sequence(self.prompts, self.vocab_size)[:4])
        self._one(Request(prompt, 1))
        for name, sampling in TRUNCATIONS.items():
            if name in self.unsupported:
                continue
            value = getattr(sampling, name)
            try:
                self._one(Request(prompt, 1, sampling))
            except ServerUnavailable as exc:
                status = exc.status
                if status == 400:
                    self.unsupported[name] = f"the server refuses it: {exc.answer}"
                elif status is not None and status >= 500:
                    fix = next(f for f, n in FIXES.items() if n == name)
                    raise ServerUnavailable(
                        f"a one-token request with {name}={value} failed the server ({exc}); it may have "
                        f"stopped: if this is a known bug, restart it and pass --fix {fix} to test the rest"
                    ) from None
                else:
                    raise

    # ----------------------------------------------------------------- the engine
    def payload(self, request: Request) -> dict[str, Any]:
        """The completions request for ``request`` (vLLM's names for the extensions)."""
        s = request.sampling
        if not request.speculative:
            raise UsageError(f"{self.name}: a server cannot be asked to decode without speculation")
        if request.script is not None:
            raise UsageError(f"{self.name}: a server takes no draft scripts")
        if s.penalised:
            raise UsageError(f"{self.name}: penalties are not sent to a server (no 'penalties' capability)")
        refuse_unsupported(self.name, self.unsupported, s)
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": list(request.prompt),
            "max_tokens": request.max_new_tokens,
            "temperature": s.temperature,
            "seed": request.seed,
            "n": 1,
            "ignore_eos": True,
            "return_token_ids": True,
        }
        if s.top_k is not None:
            body["top_k"] = s.top_k
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.min_p is not None:
            body["min_p"] = s.min_p
        if request.stop_ids:
            body["stop_token_ids"] = list(request.stop_ids)
        return body

    def _one(self, request: Request) -> Completion:
        answer = self._call("POST", "/v1/completions", self.payload(request))
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
            raise ServerUnavailable(
                f"POST {self.url}/v1/completions did not answer one choice: "
                f"{json.dumps(answer)[:ANSWER_CHARS]}"
            )
        choice = choices[0]
        tokens = choice.get("token_ids")
        if not isinstance(tokens, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in tokens
        ):
            raise ServerUnavailable(
                f"POST {self.url}/v1/completions returned no token ids (it needs return_token_ids, as vLLM "
                f"takes it); the choice was {json.dumps(choice)[:ANSWER_CHARS]}"
            )
        reason = choice.get("finish_reason")
        if reason not in ("stop", "length"):
            raise ServerUnavailable(
                f"POST {self.url}/v1/completions gave finish_reason={reason!r}, not 'stop' or 'length'"
            )
        return Completion(list(tokens), reason)

    def generate(self, requests: list[Request]) -> list[Completion]:
        """Every request in flight at once (up to :attr:`concurrency`), so that the server
        batches them; completions in the requests' order."""
        if len(requests) <= 1:
            return [self._one(r) for r in requests]
        for r in requests:
            self.payload(r)  # a request the server cannot be asked fails before any is sent
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.baseline, prompt, tokens)

    def draft_logits_along(self, prompt: Any, tokens: Any) -> Any:
        if self.draft is None:
            raise UsageError(f"{self.name}: no --draft checkpoint was given")
        return along(self.draft, prompt, tokens)


#: The factory of ``openai:URL`` (the engine process passes the URL and the CLI's options).
make_openai = OpenAIServer
