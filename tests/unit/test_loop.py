"""The crawl loop without a server: skitter.api.build_crawler with an in-memory web
(skitter.testing.SiteTransport) on an event loop in fake time (skitter.testing.run_in_fake_time), so
that a 30-second Crawl-delay or a Retry-After of a minute costs milliseconds. The store is real
(SQLite + WARC in a temporary directory); what the crawl did is read back from it."""

from __future__ import annotations

import pytest

from skitter.api import build_crawler, open_crawl
from skitter.config import CrawlConfig
from skitter.testing import LoopClock, Reply, SiteTransport, html, run_in_fake_time

A = "http://a.test"


def crawl(tmp_path, routes: dict, **settings):
    """Crawl ``A/`` over ``routes``; returns (the transport, {url: export record}, the crawler)."""
    config = CrawlConfig(seeds=(f"{A}/",), analysis_processes=0, index_interval=-1, allow_private=True,
                         **{"delay": 0.0, "adaptive_delay": 0.0, **settings})

    async def main():
        clock = LoopClock()
        site = SiteTransport(routes, clock)
        crawler = build_crawler(tmp_path / "c", config, transport=site, clock=clock)
        await crawler.run()
        return site, crawler
    site, crawler = run_in_fake_time(main())
    with open_crawl(tmp_path / "c") as stored:
        records = {r["url"]: r for r in stored.records()}
    return site, records, crawler


def starts(site: SiteTransport, prefix: str = A) -> list[float]:
    return [r.at for r in site.requests if r.url.startswith(prefix) and not r.url.endswith("/robots.txt")]


def test_a_crawl_delay_of_30_seconds_is_kept_and_takes_no_time(tmp_path):
    routes = {f"{A}/robots.txt": Reply(200, (("Content-Type", "text/plain"),), b"User-agent: *\nCrawl-delay: 30\n"),
              f"{A}/": html('<a href="/1">1</a> <a href="/2">2</a>'), f"{A}/1": html("one"), f"{A}/2": html("two")}
    site, records, crawler = crawl(tmp_path, routes, max_crawl_delay=60.0)
    assert {u for u, r in records.items() if r["status"] == 200} == {f"{A}/", f"{A}/1", f"{A}/2"}
    t = starts(site)
    assert len(t) == 3 and all(b - a >= 30.0 for a, b in zip(t, t[1:]))
    assert crawler.state == "finished"


def test_429_with_retry_after_is_retried_after_the_wait(tmp_path):
    busy = Reply(429, (("Retry-After", "45"), ("Content-Type", "text/plain")), b"slow down")
    routes = {f"{A}/": html('<a href="/x">x</a>'), f"{A}/x": [busy, html("finally")]}
    site, records, _ = crawl(tmp_path, routes)
    hits = site.hits(f"{A}/x")
    assert len(hits) == 2 and hits[1] - hits[0] >= 44.999
    assert records[f"{A}/x"]["status"] == 200 and records[f"{A}/x"]["error"] is None


def test_retries_end_with_the_last_failure_recorded(tmp_path):
    down = Reply(error="connect: connection refused", retryable=True)
    routes = {f"{A}/": html('<a href="/x">x</a>'), f"{A}/x": down}
    site, records, _ = crawl(tmp_path, routes, retries=2)
    hits = site.hits(f"{A}/x")
    assert len(hits) == 3                                    # the first try and two retries
    assert hits[1] - hits[0] >= 0.999 and hits[2] - hits[1] >= 1.999   # exponential backoff (due times: 1 ms slack)
    assert records[f"{A}/x"]["status"] is None and records[f"{A}/x"]["error"].startswith("connect")


def test_a_redirect_loop_ends(tmp_path):
    routes = {f"{A}/": html('<a href="/a">a</a> <a href="/self">s</a>'),
              f"{A}/a": Reply(302, (("Location", "/b"),)), f"{A}/b": Reply(302, (("Location", "/a"),)),
              f"{A}/self": Reply(301, (("Location", f"{A}/self"),))}
    site, records, crawler = crawl(tmp_path, routes)
    assert len(site.hits(f"{A}/a")) == len(site.hits(f"{A}/b")) == 1
    assert records[f"{A}/a"]["final_url"] == f"{A}/b" and records[f"{A}/b"]["final_url"] == f"{A}/a"
    assert records[f"{A}/a"]["error"] is None   # a's redirect is not the loop; b's is
    assert records[f"{A}/b"]["error"] == "redirect: loop back to the URL that redirected here"
    assert records[f"{A}/self"]["error"] == "redirect: loop to itself"
    assert crawler.state == "finished"


def test_a_location_in_utf_8_is_read_as_utf_8(tmp_path):
    """The fetcher decodes header bytes as Latin-1 (RFC 9110); a Location sent in raw UTF-8
    (``/café``: what curl's Latin-1 reading makes "/cafÃ©") went to ``/caf%C3%83%C2%A9``."""
    latin1_of_utf8 = "/café".encode().decode("latin-1")
    routes = {f"{A}/": html('<a href="/old">o</a>'), f"{A}/old": Reply(301, (("Location", latin1_of_utf8),)),
              f"{A}/caf%C3%A9": html("coffee")}
    site, records, _ = crawl(tmp_path, routes)
    assert records[f"{A}/old"]["final_url"] == f"{A}/caf%C3%A9"
    assert records[f"{A}/caf%C3%A9"]["status"] == 200


def test_a_redirect_chain_stops_at_max_redirects(tmp_path):
    routes = {f"{A}/": html('<a href="/r0">r</a>')}
    routes.update({f"{A}/r{i}": Reply(302, (("Location", f"/r{i + 1}"),)) for i in range(10)})
    site, records, _ = crawl(tmp_path, routes, max_redirects=3)
    assert [u for u in records if "/r" in u] == [f"{A}/r{i}" for i in range(4)]
    assert records[f"{A}/r3"]["error"] == "redirect: more than 3 hops"


def test_an_unreachable_robots_txt_disallows_the_host_without_a_request(tmp_path):
    routes = {f"{A}/robots.txt": Reply(error="connect: connection refused", retryable=True),
              f"{A}/": html('<a href="/1">1</a>')}
    site, records, _ = crawl(tmp_path, routes)
    assert starts(site) == []
    assert records[f"{A}/"]["status"] is None
    # the record says why: the robots.txt fetch's error (the user sees a refused connection, not a
    # rule), after the tries: the first and --retries (2) more, 4 and 16 s apart
    assert records[f"{A}/"]["error"] == \
        "robots: robots.txt unreachable (connect: connection refused; 3 tries), crawling disallowed"
    tries = site.hits(f"{A}/robots.txt")
    assert len(tries) == 3 and tries[1] - tries[0] >= 3.999 and tries[2] - tries[1] >= 15.999


def test_robots_txt_is_tried_three_more_times_at_most(tmp_path):
    """--retries 10 for pages: an unreachable robots.txt still gets 3 more tries, not 10 (4^10 s
    of holding its host)."""
    routes = {f"{A}/robots.txt": Reply(503), f"{A}/": html("x")}
    site, records, _ = crawl(tmp_path, routes, retries=10)
    assert len(site.hits(f"{A}/robots.txt")) == 4 and starts(site) == []
    assert "4 tries" in records[f"{A}/"]["error"]


def test_a_robots_txt_answering_5xx_is_named_in_the_records_it_stops(tmp_path):
    routes = {f"{A}/robots.txt": Reply(503), f"{A}/": html('<a href="/1">1</a>')}
    site, records, _ = crawl(tmp_path, routes, retries=0)
    assert starts(site) == [] and len(site.hits(f"{A}/robots.txt")) == 1   # --retries 0: one try
    assert records[f"{A}/"]["error"] == "robots: robots.txt unreachable (HTTP 503), crawling disallowed"


@pytest.mark.parametrize("failure", [Reply(503), Reply(429, (("Retry-After", "40"),)),
                                     Reply(error="connect: connection reset by peer", retryable=True)])
def test_a_robots_txt_that_fails_once_is_tried_again_and_the_host_crawled(tmp_path, failure):
    """One 503, 429 or reset of robots.txt recorded every URL of the host as disallowed, for the
    whole crawl (a hold-out web lost three hosts so). The host's URLs wait for the next try (4 s,
    or the Retry-After), none of them requested before robots.txt answers."""
    ok = Reply(200, (("Content-Type", "text/plain"),), b"User-agent: *\nAllow: /\n")
    routes = {f"{A}/robots.txt": [failure, ok], f"{A}/": html('<a href="/1">1</a> <a href="/2">2</a>'),
              f"{A}/1": html("one"), f"{A}/2": html("two")}
    site, records, crawler = crawl(tmp_path, routes)
    tries = site.hits(f"{A}/robots.txt")
    assert len(tries) == 2 and tries[1] - tries[0] >= (39.999 if failure.status == 429 else 3.999)
    assert min(starts(site)) >= tries[1]
    assert {u for u, r in records.items() if r["status"] == 200} == {f"{A}/", f"{A}/1", f"{A}/2"}
    assert crawler.state == "finished"


def test_robots_txt_disallowed_links_are_recorded_and_never_requested(tmp_path):
    routes = {f"{A}/robots.txt": Reply(200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /private\n"),
              f"{A}/": html('<a href="/private/1">p</a> <a href="/open">o</a>'), f"{A}/open": html("ok")}
    site, records, _ = crawl(tmp_path, routes)
    assert f"{A}/private/1" not in [r.url for r in site.requests]
    assert records[f"{A}/private/1"]["error"] == "robots: disallowed by robots.txt"
    assert records[f"{A}/private/1"]["fetch_order"] is None and records[f"{A}/open"]["status"] == 200


def test_the_budget_counts_requests(tmp_path):
    routes = {f"{A}/": html("".join(f'<a href="/{i}">{i}</a>' for i in range(20)))}
    routes.update({f"{A}/{i}": html(str(i)) for i in range(20)})
    site, records, crawler = crawl(tmp_path, routes, max_pages=5)
    assert len(starts(site)) == 5 and sum(r["fetch_order"] is not None for r in records.values()) == 5
    assert crawler.state == "stopped"


@pytest.mark.parametrize("delay", [0.5, 2.0])
def test_the_delay_spaces_request_starts(tmp_path, delay):
    routes = {f"{A}/": html("".join(f'<a href="/{i}">{i}</a>' for i in range(4)))}
    routes.update({f"{A}/{i}": html(str(i)) for i in range(4)})
    site, _, _ = crawl(tmp_path, routes, delay=delay, per_host=2, concurrency=4)
    t = starts(site)
    assert len(t) == 5 and all(b - a >= delay for a, b in zip(t, t[1:]))
