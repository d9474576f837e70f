"""HostClock and parse_retry_after (skitter.frontier.politeness): pure, no clock but the numbers given."""

from __future__ import annotations

import calendar
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.frontier.politeness import HostClock, Politeness, parse_retry_after

NOW = 1_000_000.0


def clock(**policy) -> HostClock:
    return HostClock(Politeness(**policy))


# -- the gap --------------------------------------------------------------------------------------

def test_gap_is_the_plain_delay_by_default():
    c = clock(delay=1.5, adaptive=10.0)
    assert c.gap() == 1.5


def test_gap_takes_the_crawl_delay_when_longer():
    c = clock(delay=1.0)
    c.crawl_delay = 4.0
    assert c.gap() == 4.0
    c.crawl_delay = 0.5      # shorter than our own delay: ours wins
    assert c.gap() == 1.0


def test_gap_caps_the_crawl_delay():
    c = clock(delay=1.0, max_crawl_delay=60.0)
    c.crawl_delay = 86400.0
    assert c.gap() == 60.0


def test_gap_adaptive_multiple_of_the_last_response_time():
    c = clock(delay=1.0, adaptive=10.0)
    c.last_elapsed = 0.35
    assert c.gap() == pytest.approx(3.5)
    c.crawl_delay = 5.0
    assert c.gap() == 5.0
    c.last_elapsed = 0.8
    assert c.gap() == pytest.approx(8.0)


def test_the_adaptive_delay_is_capped():
    """A host that answers in 59 s waits the cap (60 s by default), not ten minutes; the cap does
    not shorten a longer Crawl-delay or the plain delay."""
    c = clock(delay=1.0, adaptive=10.0)
    c.last_elapsed = 59.0
    assert c.gap() == 60.0
    c = clock(delay=1.0, adaptive=10.0, max_adaptive=30.0, max_crawl_delay=120.0)
    c.last_elapsed = 59.0
    assert c.gap() == 30.0
    c.crawl_delay = 90.0
    assert c.gap() == 90.0


def test_adaptive_zero_turns_it_off():
    c = clock(delay=1.0, adaptive=0.0)
    c.last_elapsed = 30.0
    assert c.gap() == 1.0


@settings(max_examples=200, derandomize=True)
@given(delay=st.floats(0, 100), crawl=st.floats(0, 1e6), cap=st.floats(0, 1000), adaptive=st.floats(0, 50),
       elapsed=st.floats(0, 100), adaptive_cap=st.floats(0, 1000))
def test_gap_formula(delay, crawl, cap, adaptive, elapsed, adaptive_cap):
    c = clock(delay=delay, adaptive=adaptive, max_crawl_delay=cap, max_adaptive=adaptive_cap)
    c.crawl_delay = crawl
    c.last_elapsed = elapsed
    assert c.gap() == max(delay, min(crawl, cap), min(adaptive * elapsed, adaptive_cap))


# -- the clock through a request ---------------------------------------------------------------

def test_start_finish_and_the_next_time():
    c = clock(delay=2.0, per_host=1, adaptive=10.0)
    assert c.can_start(NOW)
    c.started(NOW)
    assert c.active == 1
    assert c.next_time == NOW + 2.0
    assert not c.can_start(NOW + 100)          # per_host=1: busy until finished
    c.finished(NOW + 0.5, elapsed=0.5)         # adaptive: 10 x 0.5 s = 5 s from the end
    assert c.active == 0 and c.last_elapsed == 0.5
    assert c.next_time == NOW + 0.5 + 5.0
    assert not c.can_start(NOW + 5.49)
    assert c.can_start(NOW + 5.5)


def test_finished_without_elapsed_keeps_the_last_one():
    c = clock(delay=1.0, adaptive=10.0)
    c.started(NOW)
    c.finished(NOW + 1, elapsed=0.3)
    c.started(NOW + 10)
    c.finished(NOW + 10, elapsed=None)         # e.g. a robots.txt wait: no response time
    assert c.last_elapsed == 0.3
    assert c.next_time == pytest.approx(NOW + 13.0)


def test_next_time_never_moves_back():
    c = clock(delay=1.0)
    c.back_off(NOW, 100.0)
    c.started(NOW)
    c.finished(NOW + 1, elapsed=0.0)
    assert c.next_time == NOW + 100.0


def test_per_host_two():
    c = clock(delay=0.0, per_host=2, adaptive=0.0)
    c.started(NOW)
    assert c.can_start(NOW)
    c.started(NOW)
    assert not c.can_start(NOW)
    c.finished(NOW, elapsed=0.1)
    assert c.can_start(NOW)


def test_why_names_what_holds_the_host():
    """The watchdog's report named robots.txt's Crawl-delay for a host the adaptive delay held
    (10 × a 2-5 s response), and every back-off "politeness or due times" (a hold-out web)."""
    c = HostClock(Politeness(delay=0.5, adaptive=10.0, max_crawl_delay=60.0))
    assert c.why() == "--delay 0.5 s"
    c.crawl_delay = 0.9
    assert c.why() == "Crawl-delay 0.9 s"
    c.started(0.0)
    c.finished(3.0, 2.5)
    assert c.why() == "adaptive delay 25 s (10 × a 2.5 s response)"
    c.back_off(3.0, 90.0)
    assert c.why() == "a Retry-After or a retry's back-off"
    c.started(93.0)
    c.finished(93.1, 0.01)   # the back-off is behind it: the gap holds the host again
    assert c.why() == "Crawl-delay 0.9 s"


def test_back_off_is_capped():
    c = clock(max_retry_after=600.0)
    c.back_off(NOW, 30.0)
    assert c.next_time == NOW + 30.0
    c.back_off(NOW, 1e12)
    assert c.next_time == NOW + 600.0
    c.back_off(NOW, 5.0)                       # a shorter wait does not shorten a longer one
    assert c.next_time == NOW + 600.0


# -- Retry-After -------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("120", 120.0), ("0", 0.0), (" 7 ", 7.0), ("007", 7.0),
])
def test_retry_after_seconds(value, expected):
    assert parse_retry_after(value, NOW) == expected


def _epoch(y, mo, d, h, mi, s) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


@pytest.mark.parametrize("value", [
    "Sun, 06 Nov 1994 08:49:37 GMT",   # IMF-fixdate
    "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
    "Sun Nov  6 08:49:37 1994",        # obsolete asctime (RFC 9110 5.6.7: MUST be accepted; it is GMT)
])
def test_retry_after_http_date(value):
    when = _epoch(1994, 11, 6, 8, 49, 37)
    assert parse_retry_after(value, when - 120) == pytest.approx(120.0)


def test_retry_after_date_in_the_past_is_zero():
    when = _epoch(1994, 11, 6, 8, 49, 37)
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", when + 3600) == 0.0


@pytest.fixture
def far_from_utc(monkeypatch):
    """A local time zone 5 hours east of UTC (POSIX TZ string: no tzdata needed)."""
    monkeypatch.setenv("TZ", "XYZ-05")
    time.tzset()
    assert time.timezone == -5 * 3600
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("value", [
    "Sun, 06 Nov 1994 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
])
def test_retry_after_http_date_is_utc_whatever_the_local_zone(far_from_utc, value):
    when = _epoch(1994, 11, 6, 8, 49, 37)
    assert parse_retry_after(value, when - 60) == pytest.approx(60.0)


@pytest.mark.parametrize("value", [
    None, "", "   ", "soon", "-5", "1.5", "12abc", "Sun, 99 Foo 1994 08:49:37 GMT",
    "\xb2",          # a superscript two: str.isdigit() says yes, float() says no (latin-1 header byte)
    "1\xb2",
    "\u0661\u0662",  # Arabic-Indic digits: not the DIGIT of RFC 9110 delta-seconds
    "Sun, 06 Nov 99999999999 08:49:37 GMT",  # a year that overflows the C int of datetime
])
def test_retry_after_garbage_is_none(value):
    assert parse_retry_after(value, NOW) is None


@settings(max_examples=300, derandomize=True)
@given(st.text(max_size=40))
def test_retry_after_never_raises(value):
    result = parse_retry_after(value, NOW)
    assert result is None or result >= 0.0


# -- a slow response, then a fast one (a hold-out tester's stalling server) ------------------------

def test_a_fast_response_after_a_slow_one_asks_for_its_own_gap_only():
    """The start after a 3.6 s response reserved 36 s; its own 0.3 s response then held the host
    for those 36 s instead of 3 s (every stall cost two long gaps)."""
    c = clock(delay=0.0, adaptive=10.0)
    t = NOW
    c.started(t)
    c.finished(t + 3.6, 3.6)
    assert c.next_time == pytest.approx(t + 3.6 + 36.0)
    t2 = c.next_time
    c.started(t2)                     # reserves 36 s from the old response time
    c.finished(t2 + 0.3, 0.3)
    assert c.next_time == pytest.approx(t2 + 0.3 + 3.0)
    assert "0.3 s response" in c.why()


def test_a_retry_after_outlives_the_remade_time():
    c = clock(delay=0.0, adaptive=10.0)
    c.started(NOW)
    c.back_off(NOW + 0.1, 120.0)      # another request's 503 with Retry-After: 120
    c.finished(NOW + 0.2, 0.2)
    assert c.next_time == pytest.approx(NOW + 120.1)


def test_with_two_at_once_starts_stay_a_gap_apart():
    c = clock(delay=1.0, adaptive=10.0, per_host=2)
    c.started(NOW)
    assert not c.can_start(NOW + 0.99)
    c.started(NOW + 1.0)              # the second request, a gap later
    c.finished(NOW + 1.05, 0.05)      # the first one's response: 0.5 s of adaptive delay, 1 s of delay
    assert c.next_time == pytest.approx(NOW + 2.05)   # past the second start's own gap
    c.finished(NOW + 1.2, 0.3)        # a slow one: 3 s
    assert c.next_time == pytest.approx(NOW + 4.2)


@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 5.0)), min_size=1, max_size=20))
@settings(max_examples=200, deadline=None)
def test_one_at_a_time_each_start_waits_the_gap_of_the_response_before_it(steps):
    """With one request at a time, each start comes at least max(delay, 10 × the last response
    time) after the last response ended, and never later than that unless a back-off holds it."""
    c = clock(delay=0.5, adaptive=10.0, max_adaptive=60.0)
    t = NOW
    for wait, elapsed in steps:
        t = max(t, c.next_time) + wait / 10
        assert c.can_start(t)
        c.started(t)
        t += elapsed
        c.finished(t, elapsed)
        assert c.next_time == pytest.approx(t + max(0.5, min(10 * elapsed, 60.0)))


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("value", ["1000000000", "9" * 400, "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_urls_retry_waits_at_most_the_retry_after_cap(status, value):
    """A 503 with Retry-After: 10^9 held its URL for 31 years (a 400-digit one: for ever, stored as
    inf) while the host's hold was capped: the URL's retry is capped alike (README: at most 10
    minutes, and the URL is retried)."""
    from skitter.decide import Rules, decide
    from skitter.frontier.politeness import MAX_RETRY_AFTER
    from skitter.models import Candidate, FetchResult

    result = FetchResult("http://h.example/", status=status, headers=[("Retry-After", value)])
    d = decide(Candidate("http://h.example/"), result, None, None, Rules(), 1.8e9)
    assert d.kind == "retry" and d.retry_in == d.retry_after == MAX_RETRY_AFTER == 600.0
    assert parse_retry_after(value, 1.8e9) == 600.0   # the one place it is capped
