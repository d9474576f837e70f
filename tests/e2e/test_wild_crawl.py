"""End-to-end: real `skitter crawl` runs on the wild web (skitter.demo.wild: Zipf host sizes,
robots.txt drawn per host, Crawl-delay, transient 503/429, a slow host, redirects, traps), served on
loopback, against the generator's ground truth and, for politeness, the server's access log.

Two crawls: (a) the user's defaults but ``--delay 0 --per-host 4 --concurrency 32`` (so the
adaptive delay, 10 x the response time, paces each host), on 127.0.10.1-12 like the hold-out web;
(b) the same with ``--adaptive-delay 0``, on host names (``--resolve``), so links also spell hosts
in upper case. 1,000 documents make ~1,600 URLs with the variants, traps and errors (two values
per facet: the faceted search's 79 URLs, not 159, on what is already a big host).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from urllib.parse import urlsplit

import pytest

from skitter.demo.wild import WildConfig, WildWeb
from skitter.demo.wild_server import WildServer, read_access_log

# alone (Makefile): politeness is checked from the server's side, by when requests arrived, and on
# two cores shared with three other test processes a starved server logs arrivals late
pytestmark = [pytest.mark.slow, pytest.mark.alone]

BASE = WildConfig(seed=1, hosts=12, pages=1000, page_kb=(1, 16), host_zipf=0.8, crawl_delay=(0.1, 0.25),
                  transient_hosts=2, transient_share=0.05, latency=(0.01, 0.02), facets=(2, 2, 2))
PER_HOST = 4
DEADLINE = 90.0   # seconds a crawl may take (~20 s on an idle 2-core machine)
CRAWL = ["--delay", "0", "--per-host", str(PER_HOST), "--concurrency", "32", "--quiet"]
MODES = {"defaults": [], "no-adaptive": ["--adaptive-delay", "0"]}


def config() -> WildConfig:
    """The Crawl-delay on the three smallest hosts, the latency on the fourth: a bigger host at
    0.25 s a request would take minutes (the test's time, not the crawler's)."""
    info = WildWeb(BASE, [f"http://127.0.10.{g + 1}:1" for g in range(BASE.hosts)]).info()
    small = [g for _, g in sorted((h["documents"], g) for g, h in enumerate(info) if h["robots"] != "500")]
    return replace(BASE, crawl_delay_hosts=tuple(small[:3]), slow_hosts=(small[3],))


def skitter(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skitter", *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ)


@pytest.fixture(scope="module", params=list(MODES))
def crawl(request, tmp_path_factory):
    mode = request.param
    tmp = tmp_path_factory.mktemp(f"wild-{mode}")
    names = [f"host{g}.wild.test" for g in range(BASE.hosts)] if mode == "no-adaptive" else None
    with WildServer(config(), names=names, access_log=tmp / "access.jsonl") as srv:
        web = srv.web
        t0 = time.monotonic()
        res = skitter("crawl", *web.seeds(), "-o", str(tmp / "c"), *CRAWL, *MODES[mode], *srv.resolve_args(),
                      timeout=2 * DEADLINE)
        took = time.monotonic() - t0
        assert res.returncode == 0, res.stderr[-2000:]
        ip_of = dict(zip([urlsplit(b).netloc for b in web.base_urls], srv.addresses()))
    out = skitter("export", str(tmp / "c"), "--format", "jsonl", timeout=60)
    assert out.returncode == 0, out.stderr
    stats = json.loads(skitter("stats", str(tmp / "c"), "--json", timeout=60).stdout)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    print(f"wild crawl ({mode}): {took:.1f} s, {len(records)} records")
    yield web, web.reachable(), records, read_access_log(tmp / "access.jsonl"), took, stats, ip_of


def test_finishes_in_bounded_time(crawl) -> None:
    _, _, _, _, took, stats, _ = crawl
    assert stats["state"] == "finished"
    assert took < DEADLINE


def test_fetches_the_ground_truth(crawl) -> None:
    """Every URL the ground truth has, with its final status, and no other (the pages only an
    exact duplicate's links lead to included: the next test)."""
    web, truth, records, _, _, _, _ = crawl
    fetched = {r["url"]: r["status"] for r in records if r["fetch_order"] is not None}
    expected = dict(truth)
    missing, extra = sorted(set(expected) - set(fetched)), sorted(set(fetched) - set(expected))
    assert (missing[:10], extra[:10]) == ([], [])
    assert {u: s for u, s in fetched.items() if s != expected[u]} == {}
    skipped = [r for r in records if r["fetch_order"] is None]
    assert skipped and all(r["error"].startswith("robots:") for r in skipped)
    assert {r["url"] for r in skipped if not web.robots_allowed(r["url"])} == {r["url"] for r in skipped}


def test_follows_the_links_of_a_duplicate_at_another_base(crawl) -> None:
    """/docs/x/ has the same bytes as /docs/x (fetched first), but its relative link print.html
    resolves to a page nothing else links: a duplicate's links are followed where they differ."""
    web, truth, records, _, _, _, _ = crawl
    fetched = {r["url"] for r in records if r["fetch_order"] is not None}
    behind = {u for u in truth if web.kind(u) == "print"}
    assert behind and behind <= fetched


def by_host(log: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for e in log:
        out[e["host"]].append(e)
    for entries in out.values():
        entries.sort(key=lambda e: e["t0"])
    return out


def test_politeness_from_the_servers_side(crawl) -> None:
    web, _, _, log, _, _, ip_of = crawl
    assert log and all(e["ua"].startswith("skitter/") for e in log)
    hosts = by_host(log)
    for host, entries in hosts.items():
        events = sorted([(e["t0"], 1) for e in entries] + [(e["t1"], -1) for e in entries])
        at_once = peak = 0
        for _, step in events:
            at_once += step
            peak = max(peak, at_once)
        assert peak <= PER_HOST, f"{peak} connections at once to {host}"
    delayed = {ip_of[urlsplit(b).netloc]: web.crawl_delay(b + "/") for b in web.base_urls if web.crawl_delay(b + "/")}
    assert len(delayed) == 3
    for ip, delay in delayed.items():
        entries = next(v for k, v in hosts.items() if k.startswith(ip + ":"))
        # the Crawl-delay is known once robots.txt is read: a redirect to it is followed at once
        entries = [e for e in entries if not (e["path"] == "/robots.txt" and 300 <= e["status"] < 400)]
        gaps = sorted(b["t0"] - a["t0"] for a, b in zip(entries, entries[1:]))
        # at the server, arrival adds noise on a loaded machine (one late arrival shortens one
        # gap): at most one gap in fifty below the delay less 5 ms, none below half of it
        # (ignoring the delay gives gaps near 0)
        short = [g for g in gaps if g < delay - 0.005]
        assert len(short) <= max(1, len(gaps) // 50), f"requests to {ip} closer than {delay} s: {short}"
        assert gaps[0] >= delay / 2


def test_robots_and_retry_after_from_the_servers_side(crawl) -> None:
    web, _, _, log, _, _, ip_of = crawl
    base_of = {ip_of[urlsplit(b).netloc]: b for b in web.base_urls}
    urls = [base_of[e["host"].rsplit(":", 1)[0]] + e["path"] for e in log]
    pages = [u for u in urls if not u.endswith("robots.txt")]
    assert [u for u in pages if not web.robots_allowed(u)] == []
    r500 = next(h["base"] for h in web.info() if h["robots"] == "500")
    # robots.txt answering 500: tried three times (the first and --retries 2), nothing else asked
    assert [u for u in urls if u.startswith(r500)] == [r500 + "/robots.txt"] * 3
    # once each, but the transient failures (then 200) and the permanent 500 (retried twice)
    counts = Counter(pages)
    assert any(web.first_failure(u) for u in counts)
    assert {u: n for u, n in counts.items() if n > 1} == \
        {u: 2 if web.first_failure(u) else 3 for u in counts if web.first_failure(u) or web.status(u) >= 500}
    # after a 503/429 the host waits the Retry-After (>= 1 s); a request may still start in the
    # moment before the crawler reads the answer (up to 4 per host are in flight), none later
    hosts = by_host(log)
    for e in log:
        if e["status"] in (429, 503):
            early = [x for x in hosts[e["host"]] if e["t1"] + 0.25 < x["t0"] < e["t1"] + 0.9]
            assert early == [], (e, early)
