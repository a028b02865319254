"""The audit worker: answers a parent audit's requests with a black box's samples.

It runs as ``python -m verispec.audits.worker`` in a worker process (:mod:`verispec.isolation`):
each instance is sampled in chunks, one request each, the sampler's state kept in the worker
between them; the parent kills the worker when an instance exceeds its time limit, keeps the
chunks already answered and restarts it on the next instance. An audit of a callable answers
the same requests in its own process (:func:`handler`), so both run one protocol.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from verispec.audits.boundary import probe_instance
from verispec.audits.instances import from_spec
from verispec.audits.rounds import InstanceSampler
from verispec.isolation import load_function, serve

__all__ = ["handler"]


def handler(verify: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The answer to each request for ``verify``: ``{"index", "spec", "n", "seed"}`` draws ``n``
    rounds of the instance ``spec`` (``"resume": true`` continues the instance's random streams
    from the last request, ``"drafts": "self"`` lets the black box draft for itself);
    ``"mode": "boundary"`` probes the instance with its uniforms pinned
    (:func:`~verispec.audits.boundary.probe_instance`)."""
    current: dict[str, Any] = {}  # the instance being sampled in chunks: its key and sampler

    def handle(item: dict[str, Any]) -> dict[str, Any]:
        if item.get("mode") == "boundary":
            return probe_instance(verify, from_spec(item["spec"]), item["n"], item["seed"])
        key = (item["index"], item["seed"])
        if not item.get("resume"):
            sampler = InstanceSampler(
                verify, from_spec(item["spec"]), item["seed"], item.get("drafts", "given")
            )
            current.update(key=key, sampler=sampler)
        elif current.get("key") != key:  # resuming streams this process never drew would repeat draws
            raise RuntimeError(f"asked to resume instance {item['index']}, which this worker is not sampling")
        return dict(current["sampler"].run(item["n"]))

    return handle


def _handler(config: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return handler(load_function(config["function"]))


if __name__ == "__main__":
    sys.exit(serve(_handler))
