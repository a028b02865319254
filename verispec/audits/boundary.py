"""Boundary mode: a black-box verifier run with its randomness pinned to the edges of its range.

Plain sampling almost never draws a uniform of exactly 0 (probability 2^-24 per float32 draw,
2^-53 per float64 one), yet a verifier that accepts when ``U <= p/q`` accepts, at ``U = 0``, a
draft whose target probability is 0: a token outside the target's top-k, say. The boundary
mode makes those draws certain. Each round of each audit instance is run with every uniform
the verifier draws pinned to one boundary:

* ``zero``: 0;
* ``below-one``: the largest float below 1 in the draw's own width (``1 - 2^-24`` in float32,
  ``1 - 2^-53`` in float64), which puts a categorical draw by inverse CDF in its last cell;
* ``ratio``: the acceptance ratio ``min(1, p(x)/q(x))`` of the drafted tokens, in the draw's
  width (the j-th value of a draw, or the j-th scalar draw of a round, gets draft j's ratio,
  a tree's drafted nodes counted in node order; a ratio of 1 pins the largest value below
  1), so that a ``<`` and a ``<=`` comparison differ. The ratio is verispec's, in float64 and
  then rounded: a verifier that computes it otherwise can land an ulp away.

The uniforms are the verifier's own draws: from the ``rng`` verispec passes (a
:class:`PinnedGenerator` standing in for a ``numpy.random.Generator``: ``random`` and
``uniform``), and, intercepted in the audit worker's process, from numpy's and Python's
global generators and torch's (``torch.rand``, ``torch.rand_like``, ``Tensor.uniform_``).
Categorical draws the verifier makes by other means (``Tensor.exponential_`` for an
exponential race, ``torch.multinomial``) have no boundary value that is a draw of the real
generator; they are left to it and tallied, so the report says which draws were not pinned.
Every emitted token is then checked against the instance's processed target law at its
position: a token of target probability 0 there is a **boundary finding**, reported with the
probability per uniform draw that the real generator produces that boundary (``2^-24`` or
``2^-53`` by the width the verifier drew in), a number a maintainer can act on. A verifier
that drew nothing the mode can pin is inconclusive, never passed.
"""

from __future__ import annotations

import contextlib
import math
import random as pyrandom
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from verispec.audits.rounds import BlackBoxError, ChainRounds, TreeRounds
from verispec.core.random import SeededRandom
from verispec.verifiers.float_execution import FloatInstance

__all__ = [
    "BOUNDARIES",
    "PinnedGenerator",
    "Unpinnable",
    "boundary_value",
    "pinned_globals",
    "probe_instance",
]

#: The boundaries, in the order they are run.
BOUNDARIES = ("zero", "below-one", "ratio")

#: Mantissa bits of a uniform of each width: a uniform on the grid of 2^-bits takes one
#: given value with probability 2^-bits.
GRID_BITS = {"float32": 24, "float64": 53}


def boundary_value(boundary: str, width: str, index: int, ratios: list[float]) -> float:
    """The pinned value of the ``index``-th uniform of a draw of ``width``."""
    if boundary == "zero":
        return 0.0
    if boundary == "below-one":
        return 1.0 - 2.0 ** -GRID_BITS[width]
    if boundary == "ratio":
        r = ratios[min(index, len(ratios) - 1)] if ratios else 0.0
        if width == "float32":
            import numpy as np  # deferred: heavy

            r = float(np.float32(r))
        # a uniform is never 1: a ratio of 1 pins the largest value below it
        return min(r, 1.0 - 2.0 ** -GRID_BITS[width])
    raise ValueError(f"boundary={boundary!r} is not one of {', '.join(BOUNDARIES)}")


@dataclass
class Pins:
    """The boundary in force for the current round, and a tally of what was pinned."""

    boundary: str = "zero"
    ratios: list[float] = field(default_factory=list)
    scalar_index: int = 0
    draws: dict[str, int] = field(default_factory=dict)
    unpinned: dict[str, int] = field(default_factory=dict)

    def start_round(self, ratios: list[float]) -> None:
        self.ratios = ratios
        self.scalar_index = 0

    def values(self, count: int, width: str, source: str) -> list[float]:
        self.draws[f"{source} ({width})"] = self.draws.get(f"{source} ({width})", 0) + count
        if count == 1:
            value = boundary_value(self.boundary, width, self.scalar_index, self.ratios)
            self.scalar_index += 1
            return [value]
        return [boundary_value(self.boundary, width, j, self.ratios) for j in range(count)]

    def passed_through(self, source: str, count: int) -> None:
        """Tally a draw left to the real generator (one the mode has no boundary for)."""
        self.unpinned[source] = self.unpinned.get(source, 0) + count


class Unpinnable(AttributeError):
    """The verifier drew randomness the boundary mode cannot pin."""


class PinnedGenerator:
    """Stands in for the ``numpy.random.Generator`` a black box receives: ``random`` and
    ``uniform`` return pinned uniforms; ``choice`` and ``integers`` turn them into draws the
    way numpy does (the inverse CDF, ``searchsorted(u, side="right")``; ``floor(u * n)``); any
    other method raises :class:`Unpinnable` naming it."""

    def __init__(self, pins: Pins) -> None:
        self._pins = pins

    def _draw(self, size: Any, width: str, source: str) -> Any:
        import numpy as np  # deferred: heavy

        if size is None:
            return self._pins.values(1, width, source)[0]
        shape = (size,) if isinstance(size, int) else tuple(size)
        count = math.prod(shape)
        return np.asarray(self._pins.values(count, width, source), dtype=width).reshape(shape)

    def random(self, size: Any = None, dtype: Any = None, out: Any = None) -> Any:
        import numpy as np  # deferred: heavy

        width = "float32" if dtype is not None and np.dtype(dtype) == np.float32 else "float64"
        return self._draw(size, width, "rng.random")

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
        u = self._draw(size, "float64", "rng.uniform")
        return low + (high - low) * u

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None) -> Any:
        import numpy as np  # deferred: heavy

        if size is not None or not replace:
            raise Unpinnable("the boundary mode pins single draws with replacement of rng.choice")
        n = int(a) if isinstance(a, int | np.integer) else len(a)
        u = self._draw(None, "float64", "rng.choice")
        if p is None:
            index = min(int(u * n), n - 1)
        else:
            cdf = np.cumsum(np.asarray(p, dtype=np.float64))
            cdf /= cdf[-1]
            index = int(cdf.searchsorted(u, side="right"))
        return index if isinstance(a, int | np.integer) else a[index]

    def integers(self, low: int, high: int | None = None, size: Any = None, **_: Any) -> Any:
        if high is None:
            low, high = 0, low
        if size is not None:
            raise Unpinnable("the boundary mode pins single draws of rng.integers")
        u = self._draw(None, "float64", "rng.integers")
        return low + min(int(u * (high - low)), high - low - 1)

    def __getattr__(self, name: str) -> Any:
        raise Unpinnable(
            f"the boundary mode pins rng.random, uniform, choice and integers; the verifier called rng.{name}"
        )


@contextlib.contextmanager
def pinned_globals(pins: Pins) -> Iterator[None]:
    """Pin the global generators' uniforms in this process for the duration: numpy's legacy
    functions, Python's ``random.random``, and torch's ``rand``, ``rand_like`` and
    ``Tensor.uniform_`` where torch is already imported."""
    import numpy as np  # deferred: heavy

    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, replacement: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    def np_random(size: Any = None) -> Any:
        return PinnedGenerator(pins)._draw(size, "float64", "numpy.random")

    patch(np.random, "random", np_random)
    patch(np.random, "random_sample", np_random)
    patch(np.random, "rand", lambda *shape: np_random(shape or None))
    patch(pyrandom, "random", lambda: pins.values(1, "float64", "random.random")[0])
    torch = sys.modules.get("torch")
    if torch is not None:

        def width_of(dtype: Any) -> str:
            return "float64" if dtype == torch.float64 else "float32"

        def filled(shape: Any, dtype: Any, device: Any = None) -> Any:
            dtype = dtype or torch.get_default_dtype()
            count = math.prod(shape)
            values = pins.values(count, width_of(dtype), "torch")
            return torch.tensor(values, dtype=dtype, device=device).reshape(shape)

        def rand(*size: Any, dtype: Any = None, device: Any = None, **_: Any) -> Any:
            shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else tuple(size)
            return filled(shape, dtype, device)

        def rand_like(tensor: Any, *, dtype: Any = None, device: Any = None, **_: Any) -> Any:
            return filled(tuple(tensor.shape), dtype or tensor.dtype, device or tensor.device)

        def uniform_(self: Any, from_: float = 0.0, to: float = 1.0, **_: Any) -> Any:
            u = filled(tuple(self.shape), self.dtype, self.device)
            return self.copy_(from_ + (to - from_) * u)

        exponential_ = torch.Tensor.exponential_
        multinomial = torch.multinomial

        def counted_exponential_(self: Any, *args: Any, **kwargs: Any) -> Any:
            pins.passed_through("Tensor.exponential_", self.numel())
            return exponential_(self, *args, **kwargs)

        def counted_multinomial(input: Any, num_samples: int, *args: Any, **kwargs: Any) -> Any:
            rows = 1 if input.dim() == 1 else input.shape[0]
            pins.passed_through("torch.multinomial", rows * int(num_samples))
            return multinomial(input, num_samples, *args, **kwargs)

        patch(torch, "rand", rand)
        patch(torch, "rand_like", rand_like)
        patch(torch.Tensor, "uniform_", uniform_)
        patch(torch.Tensor, "exponential_", counted_exponential_)
        patch(torch, "multinomial", counted_multinomial)
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _ratios(view: Any, tokens: tuple[int, ...], rows: Any) -> list[float]:
    out = []
    for i, (x, q) in enumerate(zip(tokens, rows, strict=True)):
        p = float(view.target_probs(tuple(tokens[:i]))[x])
        qx = float(q[x])
        out.append(min(1.0, p / qx) if qx > 0 else 1.0)
    return out


def _tree_ratios(tree: Any) -> list[float]:
    """``min(1, p/q)`` of every drafted node, in node order (its parent's rows, its token)."""
    out = []
    for node in range(1, len(tree.tokens)):
        parent, x = tree.parents[node], tree.tokens[node]
        p, q = float(tree.target_probs[parent][x]), float(tree.draft_probs[parent][x])
        out.append(min(1.0, p / q) if q > 0 else 1.0)
    return out


class _ChainProbe:
    """One chain round for the probe: the verifier's arguments and the drafts' ratios."""

    def __init__(self, view: Any, seed: int) -> None:
        self.view, self.rounds = view, ChainRounds(view, SeededRandom(seed))

    def next(self) -> tuple[tuple[Any, ...], list[float], Callable[[Any], list[int]], list[int]]:
        tokens = self.rounds.drafts()
        inputs = self.rounds.inputs(tokens)
        ratios = _ratios(self.view, tokens, inputs[1])
        return inputs, ratios, lambda raw: self.rounds.check(raw, tokens), list(tokens)


class _TreeProbe:
    """One tree round for the probe: the drafted tree's view and its nodes' ratios."""

    def __init__(self, view: Any, seed: int) -> None:
        self.rounds = TreeRounds(view, SeededRandom(seed))

    def next(self) -> tuple[tuple[Any, ...], list[float], Callable[[Any], list[int]], list[int]]:
        tree = self.rounds.draft()
        return (
            (self.rounds.inputs(tree),),
            _tree_ratios(tree),
            lambda raw: self.rounds.check(raw, tree),
            list(tree.tokens[1:]),
        )


def probe_instance(verify: Callable[..., Any], item: Any, calls: int, seed: int) -> dict[str, Any]:
    """Run ``verify`` ``calls`` rounds of ``item`` at each boundary (chain or tree
    instances); return the findings (tokens of target probability 0), the pinned draws by
    source and width, the draws left to the generator, and the error that stopped a
    boundary, if any. A tree finding's ``drafts`` are the tree's drafted tokens in node order."""
    view: Any = FloatInstance(item.instance)
    findings: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    unpinnable: dict[str, str] = {}
    pins = Pins()
    rng = PinnedGenerator(pins)
    for boundary in BOUNDARIES:
        pins.boundary = boundary
        # the same drafts at every boundary
        probe = _TreeProbe(view, seed) if item.kind == "tree" else _ChainProbe(view, seed)
        seen: set[tuple[int, ...]] = set()
        for i in range(calls):
            inputs, ratios, check, drafts = probe.next()
            pins.start_round(ratios)
            try:
                with pinned_globals(pins):
                    raw = verify(*inputs, rng)
                block = check(raw)
            except Unpinnable as exc:
                unpinnable[boundary] = str(exc)
                break
            except BlackBoxError as exc:
                errors[boundary] = f"round {i + 1}: the verifier {exc}"
                break
            except Exception as exc:
                errors[boundary] = f"round {i + 1}: the verifier raised {type(exc).__name__}: {exc}"
                break
            for j, t in enumerate(block):
                if float(view.target_probs(tuple(block[:j]))[t]) == 0.0 and tuple(block[: j + 1]) not in seen:
                    seen.add(tuple(block[: j + 1]))
                    findings.append(
                        {
                            "boundary": boundary,
                            "position": j,
                            "token": t,
                            "block": block,
                            "drafts": drafts,
                            "accepted_draft": j < len(block) - 1,
                        }
                    )
    return {
        "findings": findings,
        "draws": dict(pins.draws),
        "unpinned": dict(pins.unpinned),
        "errors": errors,
        "unpinnable": unpinnable,
    }
