"""Deprecated: renamed :mod:`verispec.conformance.pytest_suite` (it builds a test function for
an engine's own suite; it defines no pytest hook)."""

import sys

from verispec._compat import moved

sys.modules[__name__] = moved(__name__, "verispec.conformance.pytest_suite")
