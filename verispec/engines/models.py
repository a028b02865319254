"""Deprecated: renamed :mod:`verispec.engines.model_pairs` (two modules were named ``models``)."""

import sys

from verispec._compat import moved

sys.modules[__name__] = moved(__name__, "verispec.engines.model_pairs")
