"""The compiled module ``skitter._speedups`` (Cython, optional: README "Compiled code"), or None:
when it was not built, or when ``SKITTER_PURE_PYTHON=1`` asks for the Python code, which stays the
reference (tests/unit/test_speedups.py compares the two). The one place that reads the
environment for it, so that the pure modules that use it do not."""

from __future__ import annotations

import os
from types import ModuleType


def speedups() -> ModuleType | None:
    if os.environ.get("SKITTER_PURE_PYTHON"):
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    return _speedups
