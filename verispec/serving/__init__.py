"""The serving contract: is a speculative engine faster, measured the way that cannot mislead?

``verispec serve`` and :func:`serve` run one engine with speculation on and off, request by
request, and report time per committed token, latency, the stream, the rounds and the
draft-length rule (the whole description: :mod:`verispec.serving.measure`). The package's
modules, one responsibility each:

* :mod:`~verispec.serving.measure`: serving the requests in both arms, alone and at
  concurrent load, and the conclusion (:func:`serve`, :class:`ServeResult`);
* :mod:`~verispec.serving.statistics`: the figures, computed from the timed requests (ratio of
  sums, paired bootstrap, stream and round summaries, the draft-length rule, the modelled
  speedup), with no engine and no rendering;
* :mod:`~verispec.serving.render`: the report as Markdown, HTML and plots, from its JSON.
"""

from __future__ import annotations

from verispec.serving.measure import ServeResult, serve
from verispec.serving.render import plots
from verispec.serving.statistics import (
    STREAM_ROUNDS,
    Timed,
    checked_times,
    length_rule,
    modelled_speedup,
    round_summary,
    rounds_of,
    speed_summary,
    stream_summary,
)

__all__ = [
    "STREAM_ROUNDS",
    "ServeResult",
    "Timed",
    "checked_times",
    "length_rule",
    "modelled_speedup",
    "plots",
    "round_summary",
    "rounds_of",
    "serve",
    "speed_summary",
    "stream_summary",
]
