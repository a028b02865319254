"""Deprecated: renamed :mod:`verispec.verifiers.float_execution` (it holds the float execution
of the verifiers, not sampling settings)."""

import sys

from verispec._compat import moved

sys.modules[__name__] = moved(__name__, "verispec.verifiers.float_execution")
