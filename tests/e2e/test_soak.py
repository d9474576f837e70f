"""Soak: the same web crawled under many randomised politeness settings must always finish, with
the same URL set (issue 17: a fast crawl with the user's default adaptive delay hung in a third of
the runs, and the benchmark's `--adaptive-delay 0` never showed it).

Each run draws delay (0 or small), adaptive delay (off, seed 002's 10, or 3), per-host 1–8 and
concurrency 1–128 from a seeded generator, on a demo web with a Crawl-delay host and two hosts that
answer a share of their URLs' first requests with 503 / 429 + Retry-After. Every run must exit 0
within its time limit with the state "finished", fetch exactly the ground truth's URLs (every
reachable allowed page; trap pages aside), and keep per-host connections within --per-host at the
server's side of the wire.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import defaultdict

import pytest

from skitter.demo.server import DemoServer, read_access_log
from skitter.demo.web import DemoConfig
from skitter.urls import canonicalize

pytestmark = pytest.mark.slow

RUNS = 6
CRAWL_DELAY = 0.05
WEB = DemoConfig(hosts=6, pages=500, seed=17, crawl_delay=CRAWL_DELAY)
FLAKY = (2, 3)          # host 2 answers 503, host 3 answers 429, on their first request to 10% of paths


def settings_for(run: int) -> dict:
    rng = random.Random(f"soak:{run}")
    return {"delay": rng.choice([0.0, 0.0, 0.002, 0.01]),
            "adaptive-delay": rng.choice([0.0, 10.0, 10.0, 3.0]),
            "per-host": rng.randint(1, 8),
            "concurrency": rng.choice([1, 2, 8, 32, 64, 128])}


def max_overlap(entries: list[dict]) -> int:
    events = sorted([(e["t0"], 1) for e in entries] + [(e["t1"], -1) for e in entries])
    most = cur = 0
    for _, step in events:
        cur += step
        most = max(most, cur)
    return most


@pytest.mark.parametrize("run", range(RUNS))
def test_randomised_politeness_always_finishes_with_the_same_urls(run, tmp_path):
    opts = settings_for(run)
    log = tmp_path / "access.jsonl"
    with DemoServer(WEB, access_log=log, flaky=FLAKY, flaky_share=0.1) as srv:
        args = [x for k, v in opts.items() for x in (f"--{k}", str(v))]
        cmd = [sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(tmp_path / "c"),
               "--max-crawl-delay", "1", "--quiet", *args]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the crawl with {opts} did not finish in 240 s")
        assert res.returncode == 0, (opts, res.stderr[-2000:])
        out = subprocess.run([sys.executable, "-m", "skitter", "export", str(tmp_path / "c"), "--format", "jsonl"],
                             capture_output=True, text=True, timeout=60, check=True)
        records = [json.loads(line) for line in out.stdout.splitlines()]
        stats = json.loads(subprocess.run([sys.executable, "-m", "skitter", "stats", str(tmp_path / "c"), "--json"],
                                          capture_output=True, text=True, timeout=60, check=True).stdout)
        web, entries = srv.web, read_access_log(log)
    assert stats["state"] == "finished", opts
    fetched = {r["url"] for r in records if r["status"] is not None and web.kind(r["url"]) != "trap"}
    expected = {canonicalize(u) for u in web.reachable(max_depth=10)}
    assert fetched == expected, (opts, sorted(expected - fetched)[:5], sorted(fetched - expected)[:5])
    refused = [e for e in entries if e["status"] in (429, 503)]
    assert refused, "the flaky hosts refused some first requests"
    assert all(r["status"] not in (429, 503) for r in records if r["url"] in expected), \
        "every refused URL was retried to success"
    by_host = defaultdict(list)
    for e in entries:
        by_host[e["host"]].append(e)
    for host, mine in by_host.items():
        assert max_overlap(mine) <= opts["per-host"], f"{host}: more than --per-host {opts['per-host']} at once"
