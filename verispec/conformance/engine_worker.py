"""The engine process: hosts one engine and answers the harness over JSON lines.

``python -m verispec.conformance.engine_worker`` reads one configuration line
(``{"engine": spec, "device": ..., "options": {...}}``), then one request per line:

* ``{"op": "info"}``
* ``{"op": "generate", "request": {...}}`` (an exception is answered as ``{"error": ...}``)
* ``{"op": "logits_along", "model": "target" | "draft", "prompt": [...], "tokens": [...]}``,
  answered as ``{"shape": [rows, vocab], "float32": base64}`` (little-endian float32: exact
  for float32 logits and about 8 times smaller than JSON numbers at large vocabularies)

Running engines here keeps a crash or a hang away from the harness, which restarts this
process and goes on.
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from verispec.errors import UsageError

BUILT_INS = ("reference", "reference-paged", "reference-tree", "hf-assisted", "hf-lookup")


def _factory(spec: str) -> Callable[..., Any]:
    if spec == "reference":
        from verispec.engines.reference import make_reference

        return make_reference
    if spec == "reference-paged":
        from verispec.engines.reference import make_reference

        return lambda **kw: make_reference(page_size=4, **kw)
    if spec == "reference-tree":
        from verispec.engines.reference import make_reference

        return lambda **kw: make_reference(tree=(2, 2), page_size=4, **kw)
    if spec == "hf-assisted":
        from verispec.engines.hf import make_hf_assisted

        return make_hf_assisted
    if spec == "hf-lookup":
        from verispec.engines.hf import make_hf_lookup

        return make_hf_lookup
    if ":" not in spec:
        raise UsageError(f"engine={spec!r} is neither a built-in ({', '.join(BUILT_INS)}) nor module:factory")
    from verispec.smt.audit import load_function

    return load_function(spec)


def build_engine(spec: str, device: str, options: dict[str, Any]) -> Any:
    """Instantiate an engine; only the options the factory accepts are passed."""
    factory = _factory(spec)
    accepted: Any
    try:
        accepted = inspect.signature(factory).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    except (TypeError, ValueError):
        accepted, takes_all = {}, False
    kwargs = {k: v for k, v in {"device": device, **options}.items() if takes_all or k in accepted}
    engine = factory(**kwargs)
    for attr in ("generate", "vocab_size"):
        if not hasattr(engine, attr):
            raise UsageError(
                f"engine={spec!r}: the factory returned {type(engine).__name__} without {attr!r}"
            )
    return engine


def _logits_along(engine: Any, model: str, prompt: list[int], tokens: list[int]) -> dict[str, Any]:
    import numpy as np

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


def main() -> int:
    from verispec.engines.protocol import Request

    sys.path.insert(0, os.getcwd())
    try:
        import transformers

        transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:
        pass
    config = json.loads(sys.stdin.readline())
    try:
        engine = build_engine(config["engine"], config.get("device", "cpu"), config.get("options", {}))
    except UsageError as exc:  # already names the argument and value
        print(json.dumps({"fatal": str(exc)}), flush=True)
        return 0
    except Exception as exc:
        print(json.dumps({"fatal": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 0
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        try:
            if op == "info":
                answer: dict[str, Any] = {
                    "name": getattr(engine, "name", config["engine"]),
                    "vocab_size": int(engine.vocab_size),
                    "capabilities": sorted(getattr(engine, "capabilities", ())),
                    "gamma": getattr(engine, "gamma", None),
                }
            elif op == "generate":
                completion = engine.generate([Request.from_json(message["request"])])[0]
                answer = {"completion": completion.to_json()}
            elif op == "generate_batch":
                completions = engine.generate([Request.from_json(r) for r in message["requests"]])
                answer = {"completions": [c.to_json() for c in completions]}
            elif op == "logits_along":
                answer = _logits_along(engine, message["model"], message["prompt"], message["tokens"])
            else:
                answer = {"error": f"unknown op {op!r}"}
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=3)}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
