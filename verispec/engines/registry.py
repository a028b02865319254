"""The built-in engines and their planted bugs, each registered where it is written.

An adapter module declares its engines with :func:`builtin_engine` on the factory::

    @builtin_engine("hf-lookup", summary="...", extra="transformers", capabilities=(...))
    def make_hf_lookup(*, size="ci", seed=0, gamma=3, device="cpu"): ...

its planted bugs with :func:`verispec.engines.bugs.planted_bug` beside the seam each one
replaces, and adds its module to :data:`MODULES`. The CLI's help, the docs' engine table, the
test parameters, ``--engine NAME`` and the controls catalog all read this registry.
``options`` are fixed keyword arguments the factory gets for that name (``reference-tree`` is
``make_reference`` with a tree shape). The capabilities are declared once, here: the
registry hands them to the engine it builds. Listing the registry imports the adapter
modules, which import torch and transformers only when a factory runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.engines.bugs import PlantedBug, registered
from verispec.engines.protocol import CAPABILITIES
from verispec.errors import MissingDependency, UsageError, installed, unknown_name

__all__ = [
    "MODULES",
    "BuiltinEngine",
    "bugs",
    "builtin_engine",
    "engines",
    "get",
    "names",
    "planted",
    "quick_blind_spots",
]

#: The adapter modules that register built-in engines, in the order they are listed.
MODULES = (
    "verispec.engines.reference",
    "verispec.engines.hf",
    "verispec.engines.vllm_engines",
    "verispec.engines.llama_cpp_engines",
    "verispec.engines.ort_genai_engines",
    "verispec.engines.openvino_engines",
)

#: What the optional extras install (``pip install 'verispec[EXTRA]'``).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "transformers": ("torch", "transformers"),
    "vllm": ("torch", "transformers", "vllm"),
    "vllm-suffix": ("torch", "transformers", "vllm", "arctic_inference"),
    "llama-cpp": ("torch", "transformers", "gguf", "llama_cpp"),
    "onnxruntime-genai": ("torch", "transformers", "onnx", "onnx_ir", "onnxruntime_genai"),
    "openvino": ("torch", "transformers", "openvino", "openvino_genai", "openvino_tokenizers"),
}

#: Install commands for what ``pip install 'verispec[extra]'`` cannot provide.
EXTRA_INSTALL: dict[str, str] = {
    "llama-cpp": "pip install 'verispec[llama-cpp]' (llama-cpp-python compiles llama.cpp from its source: "
    "about 6 minutes on 2 cores, with gcc and cmake)",
    "vllm-suffix": "pip install 'verispec[vllm]', then arctic-inference==0.3.0 built from its source against "
    "the CPU torch (it publishes no wheel; docs/reference/vllm.md, 'Suffix decoding', has the commands)",
}


@dataclass(frozen=True)
class BuiltinEngine:
    """A built-in engine: its name, factory, the optional extra it needs and the capabilities
    its instances declare."""

    name: str
    factory: Callable[..., Any]
    summary: str
    capabilities: frozenset[str]
    extra: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: the engine whose planted-bug records this one takes (``reference-paged`` takes
    #: ``reference``'s); its own name by default
    mutants_of: str | None = None

    def make(self, **kwargs: Any) -> Any:
        """Build the engine (checking its extra first), with the capabilities declared here."""
        self.require()
        engine = self.factory(**{**self.options, **kwargs})
        engine.capabilities = self.capabilities
        return engine

    @property
    def install(self) -> str:
        """The command that installs what the engine needs ("" when nothing)."""
        if not self.extra:
            return ""
        return EXTRA_INSTALL.get(self.extra, f"pip install 'verispec[{self.extra}]'")

    def require(self) -> None:
        """Raise :class:`MissingDependency` (exit code 4) when the extra is not installed."""
        for module in EXTRA_MODULES.get(self.extra or "", ()):
            if not installed(module):
                raise MissingDependency(module, self.extra or module, self.install)

    @property
    def mutants(self) -> list[str]:
        """The planted bugs this engine takes (``--mutation``)."""
        return [b.name for b in bugs() if b.engine in {self.name, self.mutants_of}]


_ENGINES: dict[str, BuiltinEngine] = {}


def builtin_engine(
    name: str,
    *,
    summary: str,
    capabilities: tuple[str, ...] | frozenset[str],
    extra: str | None = None,
    mutants_of: str | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated factory as the built-in engine ``name`` (stackable)."""
    unknown = sorted(set(capabilities) - set(CAPABILITIES))
    if unknown:
        raise UsageError(f"capabilities of {name!r} hold {unknown}, not among {', '.join(CAPABILITIES)}")

    def register(factory: Callable[..., Any]) -> Callable[..., Any]:
        if name in _ENGINES:
            raise UsageError(f"engine={name!r} is already registered")
        _ENGINES[name] = BuiltinEngine(
            name, factory, summary, frozenset(capabilities), extra, options, mutants_of
        )
        return factory

    return register


def _load() -> None:
    for module in MODULES:
        importlib.import_module(module)


def engines() -> list[BuiltinEngine]:
    """Every built-in engine, in registration order."""
    _load()
    return list(_ENGINES.values())


def names() -> list[str]:
    return [e.name for e in engines()]


def get(name: str) -> BuiltinEngine:
    """The built-in engine ``name``; an unknown name suggests the closest ones."""
    _load()
    try:
        return _ENGINES[name]
    except KeyError:
        raise unknown_name("engine", name, _ENGINES) from None


def bugs(engine: str | None = None) -> list[PlantedBug]:
    """Every built-in engine's planted bugs (in the order the adapters declare them), or those
    of one engine."""
    _load()
    return [b for b in registered() if engine is None or b.engine == engine]


def planted(engine: str, mutations: Sequence[str]) -> list[PlantedBug]:
    """The records of the bugs ``mutations`` of ``engine``, for its factory to plant; a bug of
    another engine, or an unknown one, is a usage error naming it."""
    mine = {b.name: b for b in bugs(engine)}
    chosen = []
    for name in mutations:
        if name not in mine:
            elsewhere = sorted({b.engine for b in bugs() if b.name == name})
            if elsewhere:
                raise UsageError(
                    f"mutation={name!r} applies to the {' and '.join(elsewhere)} engine only, not {engine!r}"
                )
            raise unknown_name("mutation", name, mine)
        chosen.append(mine[name])
    return chosen


def quick_blind_spots(checks: Sequence[str]) -> list[PlantedBug]:
    """The planted bugs that ``checks`` must catch and whose records say the quick sizes cannot
    see them: what a quick run of those checks is blind to."""
    return [b for b in bugs() if b.quick_miss and set(b.caught_by) & set(checks)]
