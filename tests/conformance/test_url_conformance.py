"""WHATWG URL conformance: every case of tests/data/url_cases*.json is its own test.

- url_cases.json: ``resolve(base, input) == href`` (relative references, http(s) base).
- url_cases_absolute.json: ``resolve(None, input) == href`` (parsed with no base) and, since
  these are all http(s) URLs, the canonical form of ``href`` parses again to itself.
- url_cases_failure.json: ``resolve(base, input) is None``, and canonicalize raises URLError.

The data comes from web-platform-tests (see tests/data/README.md). Bar: 100%.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skitter.urls import URLError, canonicalize, resolve

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))["cases"]


RELATIVE = _load("url_cases.json")
ABSOLUTE = _load("url_cases_absolute.json")
FAILURE = _load("url_cases_failure.json")


def _params(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in cases]


def test_case_files_are_complete() -> None:
    for cases, count in ((RELATIVE, 113), (ABSOLUTE, 116), (FAILURE, 50)):
        ids = [case["id"] for case in cases]
        assert len(ids) == len(set(ids)) == count


@pytest.mark.parametrize("case", _params(RELATIVE))
def test_relative(case: dict[str, Any]) -> None:
    assert resolve(case["base"], case["input"]) == case["href"]


@pytest.mark.parametrize("case", _params(ABSOLUTE))
def test_absolute(case: dict[str, Any]) -> None:
    href = resolve(None, case["input"])
    assert href == case["href"]
    # Every expected href is an http(s) URL: canonicalising it must work and be a fixed point.
    canonical = canonicalize(href)
    assert canonicalize(canonical) == canonical


@pytest.mark.parametrize("case", _params(FAILURE))
def test_failure(case: dict[str, Any]) -> None:
    assert resolve(case["base"], case["input"]) is None
    with pytest.raises(URLError):
        canonicalize(case["input"])
