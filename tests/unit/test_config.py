"""The settings registry: every default typed once (on CrawlConfig), bounds enforced from the CLI."""

import subprocess
import sys
from dataclasses import fields

import pytest

from skitter.config import SETTINGS, CrawlConfig
from skitter.errors import UsageError


def test_every_config_field_but_the_start_is_a_setting_with_its_default():
    names = {f.name for f in fields(CrawlConfig)} - {"seeds", "resolve"}
    assert {s.name for s in SETTINGS} == names
    defaults = CrawlConfig()
    for s in SETTINGS:
        assert getattr(defaults, s.name) == s.default
        assert isinstance(s.default, s.type), s.name
        assert s.at_least is None or s.default >= s.at_least, s.name
        assert s.choices is None or s.default in s.choices, s.name


@pytest.mark.parametrize("s", [s for s in SETTINGS if s.at_least is not None], ids=lambda s: s.name)
def test_a_value_below_the_bound_is_refused_naming_the_flag(s):
    below = s.at_least - (1 if s.type is int else 0.0005)
    with pytest.raises(UsageError, match=f"--{s.name.replace('_', '-')} must be at least"):
        CrawlConfig(**{s.name: s.type(below)}).validate()
    CrawlConfig(**{s.name: s.type(s.at_least) if s.name != "near_dup_window" else 0}).validate()


@pytest.mark.parametrize("s", [s for s in SETTINGS if s.type in (int, float) and s.name != "rate"],
                         ids=lambda s: s.name)   # (--rate: its own bounds, below)
def test_a_value_above_the_bound_or_not_finite_is_refused_naming_the_flag(s):
    """nan passed every lower bound (--delay nan crawled with no delay, --index-interval nan ended in
    an internal error), inf hung or overflowed curl, a number beyond 64 bits broke SQLite: every
    number of a setting is finite and bounded above (hold-out checks of bad input)."""
    flag = f"--{s.name.replace('_', '-')}"
    bad: list = [2 ** 64] + ([float("nan"), float("inf"), 1e300] if s.type is float else [])
    for value in bad:
        with pytest.raises(UsageError, match=f"{flag} must be (at most|a finite number)"):
            CrawlConfig(**{s.name: value}).validate()
    if s.at_most is not None:
        CrawlConfig(**{s.name: s.type(s.at_most)}).validate()


def test_the_cli_refuses_a_bound_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "skitter", "crawl", "http://127.0.0.1:9/", "-o",
                             str(tmp_path / "c"), "--per-host", "0"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == ["skitter: error: --per-host must be at least 1, got 0"]
    assert not (tmp_path / "c" / "crawl.db").exists()


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf"), 1e300, 1e6 + 1])
def test_a_recrawl_rate_out_of_range_is_refused(rate):
    """--rate is above 0 and at most 1e6 revisits a second: inf, or 1e300, used to pass here and
    break the recrawl's planning pass (an internal error, exit code 1)."""
    with pytest.raises(UsageError, match="--rate must be above 0 and at most 1000000"):
        CrawlConfig(rate=rate).validate()


@pytest.mark.parametrize("rate", [1e-6, 1.0, 1e6])
def test_a_recrawl_rate_in_range_is_taken(rate):
    assert CrawlConfig(rate=rate).validate().rate == rate
