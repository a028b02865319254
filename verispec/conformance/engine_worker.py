"""The engine process: hosts one engine and answers the harness (:mod:`verispec.isolation`).

``python -m verispec.conformance.engine_worker`` reads one configuration line
(``{"engine": spec, "device": ..., "options": {...}}``), builds the engine, then answers:

* ``{"op": "info"}``: name, vocabulary size, capabilities, gamma, the device it runs on, the
  sampling features it cannot take (``unsupported``, feature -> reason), the order in which
  it applies the temperature and the truncations (``sampling_order``), the largest logit gap
  it measured between a position evaluated in a batch and alone (``logit_noise``), how many
  output tokens it commits before its first round (``drafting_lead``), notes for the report,
  and its real text prompts (token ids) where it has some;
* ``{"op": "generate", "requests": [...]}``: one completion per request;
* ``{"op": "logits_along", "model": "target" | "draft", "prompt": [...], "tokens": [...]}``,
  answered as ``{"shape": [rows, vocab], "float32": base64}`` (little-endian float32: exact
  for float32 logits and about 8 times smaller than JSON numbers at large vocabularies).

An exception crosses back as a structured error record; a crash or a hang is the harness's
to handle (it restarts this process and goes on).
"""

from __future__ import annotations

import base64
import functools
import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

from verispec.engines import registry
from verispec.engines.openai_api import make_openai
from verispec.engines.protocol import Request
from verispec.errors import UsageError
from verispec.isolation import load_function, serve
from verispec.report import describe_device

#: Engine options the CLI sets, by the option that sets them (for the usage error).
OPTION_FLAGS = {
    "mutations": "--mutation",
    "size": "--size",
    "device": "--device",
    "fixes": "--fix",
    "target": "--target",
    "draft": "--draft",
    "model": "--model",
}


def _factory(spec: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """What builds the engine, and the function whose signature says which options it takes."""
    if spec.startswith("openai:"):
        return functools.partial(make_openai, spec[len("openai:") :]), make_openai
    if ":" in spec:
        factory = load_function(spec, argument="engine")
        return factory, factory

    builtin = registry.get(spec)
    return builtin.make, builtin.factory


def _parameters(factory: Callable[..., Any]) -> tuple[set[str], bool]:
    """The factory's keyword names, and whether it takes ``**kwargs``."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return set(), False
    return set(params), any(p.kind is p.VAR_KEYWORD for p in params.values())


def build_engine(spec: str, device: str, options: dict[str, Any]) -> Any:
    """Instantiate an engine. An option its factory does not take is a usage error naming
    the option (never a silently clean run); ``device`` is passed where it is taken, and is an
    error elsewhere only when it is not the default ``cpu``."""
    factory, signature = _factory(spec)
    accepted, takes_all = _parameters(signature)
    kwargs: dict[str, Any] = {}
    for key, value in {"device": device, **options}.items():
        if takes_all or key in accepted:
            kwargs[key] = value
        elif key != "device" or value != "cpu":
            flag = OPTION_FLAGS.get(key, key)
            raise UsageError(f"engine={spec!r} does not take {flag} (its factory has no {key!r} parameter)")
    engine = factory(**kwargs)
    for attr in ("generate", "vocab_size"):
        if not hasattr(engine, attr):
            raise UsageError(
                f"engine={spec!r}: the factory returned {type(engine).__name__} without {attr!r}"
            )
    capabilities = set(getattr(engine, "capabilities", ()))
    for model in ("target", "draft"):
        wanted = "target-logits" if model == "target" else "draft-model"
        if wanted in capabilities and not _exposes(engine, model):
            raise UsageError(
                f"engine={spec!r} declares {wanted!r} but has neither {model}_logits nor {model}_logits_along"
            )
    return engine


def _exposes(engine: Any, model: str) -> bool:
    return hasattr(engine, f"{model}_logits_along") or hasattr(engine, f"{model}_logits")


def _logits_along(engine: Any, model: str, prompt: list[int], tokens: list[int]) -> dict[str, Any]:
    import numpy as np  # deferred: heavy

    name = f"{model}_logits_along"
    if not tokens:
        return {"shape": [0, 0], "float32": ""}
    if hasattr(engine, name):
        rows = getattr(engine, name)(prompt, tokens)
    else:
        fn = getattr(engine, f"{model}_logits", None)
        if fn is None:
            raise UsageError(f"the engine exposes no {model} logits")
        rows = fn([tuple(prompt + tokens[:i]) for i in range(len(tokens))])
    if hasattr(rows, "detach"):
        rows = rows.detach().float().cpu().numpy()
    array = np.ascontiguousarray(np.asarray(rows, dtype="<f4"))
    if array.ndim != 2 or array.shape[0] != len(tokens):
        raise UsageError(
            f"{name}: expected {len(tokens)} rows of logits, got an array of shape {tuple(array.shape)}"
        )
    return {"shape": list(array.shape), "float32": base64.b64encode(array.tobytes()).decode("ascii")}


def _device(engine: Any, asked: str) -> str:
    """The device the engine really runs on: its ``device`` attribute, or its first
    parameter's, described with the accelerator's name where there is one."""
    found = getattr(engine, "device", None)
    if found is None:
        for attr in ("target", "model", "hf_target"):
            model = getattr(engine, attr, None)
            if model is not None and hasattr(model, "parameters"):
                found = next(model.parameters()).device
                break
    return describe_device(str(found) if found is not None else asked)


def _handler(config: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    try:
        import transformers  # deferred: heavy

        transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:
        pass
    engine = build_engine(config["engine"], config.get("device", "cpu"), config.get("options", {}))

    def handle(message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "info":
            return {
                "name": getattr(engine, "name", config["engine"]),
                "vocab_size": int(engine.vocab_size),
                "capabilities": sorted(getattr(engine, "capabilities", ())),
                "gamma": getattr(engine, "gamma", None),
                "device": _device(engine, config.get("device", "cpu")),
                "unsupported": dict(getattr(engine, "unsupported", {}) or {}),
                "sampling_order": str(getattr(engine, "sampling_order", "temperature-first")),
                "logit_noise": float(getattr(engine, "logit_noise", 0.0) or 0.0),
                "drafting_lead": int(getattr(engine, "drafting_lead", 0) or 0),
                "notes": [str(n) for n in getattr(engine, "notes", ()) or ()],
                "prompts": [list(p) for p in getattr(engine, "prompts", ()) or ()],
                "prompt_kinds": [str(k) for k in getattr(engine, "prompt_kinds", ()) or ()],
            }
        if op == "generate":
            requests = [Request.from_json(r) for r in message["requests"]]
            start = time.perf_counter()  # the engine's own time, without the pipe to the harness
            completions = engine.generate(requests)
            seconds = time.perf_counter() - start
            return {"completions": [c.to_json() for c in completions], "seconds": seconds}
        if op == "logits_along":
            return _logits_along(engine, message["model"], message["prompt"], message["tokens"])
        raise UsageError(f"op={op!r} is not one of info, generate, logits_along")

    return handle


def main() -> int:
    return serve(_handler)


if __name__ == "__main__":
    sys.exit(main())
