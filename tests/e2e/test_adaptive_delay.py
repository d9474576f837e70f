"""The adaptive delay (seed 002: wait a multiple of the last response time) grows for a slow
server, checked at the server's side. That a busy crawler does not take its own event loop's lag
for the server's time is tests/e2e/test_fetch.py::test_response_time_is_the_servers_and_not_the_event_loops."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sites import StaticSite, hub_site

# alone (Makefile): politeness is checked from the server's side, by when requests arrived, and on
# two cores shared with three other test processes a starved server logs arrivals late
pytestmark = [pytest.mark.slow, pytest.mark.alone]


def crawl(*args: str, timeout: float = 180) -> None:
    res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *args, "--quiet"], capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr


def test_a_slow_server_is_given_a_multiple_of_its_response_time(tmp_path):
    root = hub_site(tmp_path / "site", 5)
    with StaticSite(root, latency=0.1) as site:
        crawl(site.base + "/", "-o", str(tmp_path / "c"), "--delay", "0", "--adaptive-delay", "5",
              "--per-host", "1")
        every = sorted(site.log, key=lambda h: h.t0)
        hits = [h for h in every if h.path != "/robots.txt"]
    assert len(hits) == 6
    # robots.txt's response paces the first page too (it was asked for 2 ms after it)
    assert every[0].path == "/robots.txt" and every[1].t0 - every[0].t1 >= 0.45
    # each response takes 0.1 s; the next request waits 5 × 0.1 s after it ends
    gaps = [b.t0 - a.t1 for a, b in zip(hits, hits[1:])]
    assert min(gaps) >= 0.45, gaps
