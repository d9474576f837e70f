"""What a revisit does, one behaviour a test (issue #20, docs/recrawl.md "A visit"): the real crawl
loop, store, recrawl part and search index in fake time, against a small scripted web whose pages
change at known times (``Scripted``: ETag and If-None-Match, Last-Modified, robots.txt and a
sitemap that can change with the clock)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

import pytest

from skitter.api import build_crawler
from skitter.config import CrawlConfig
from skitter.models import FetchResult
from skitter.testing import EPOCH, LoopClock, run_in_fake_time

SITE = "http://news.example"
WORDS = ("the quarterly report describes harbour traffic, river levels, timber prices and the weather of the"
         " northern valleys in some detail, with tables and a short commentary for each district")


@dataclass
class Page:
    """A page whose version is the number of its change times at or before now."""

    words: Callable[[int], str] = lambda v: f"bulletin number {v}"
    changes: tuple[float, ...] = ()          # epoch seconds
    etag: bool = True
    last_modified: str = "none"              # "true": its last change; "now": the request's time; "none"
    links: tuple[str, ...] = ()
    new_links: tuple[str, ...] = ()          # links from its first change on
    noise: bool = False                      # its body differs at every fetch (a comment), its text never
    absent: tuple[float, float] = (0.0, 0.0)  # epoch seconds [from, to): it answers 404
    failing: tuple[float, float] = (0.0, 0.0)  # epoch seconds [from, to): it answers 503

    def version(self, t: float) -> int:
        return sum(1 for c in self.changes if c <= t)


@dataclass
class Scripted:
    """A :class:`skitter.transport.Transport` serving ``pages`` (path -> Page) on one site, with
    ``robots(t)`` and ``sitemap(t)`` bodies; ``log`` holds (path, epoch time, status)."""

    pages: dict[str, Page]
    clock: LoopClock
    robots: Callable[[float], str] = lambda t: ""
    sitemap: Callable[[float], str | None] = lambda t: None
    log: list[tuple[str, float, int]] = field(default_factory=list)

    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        now = self.clock.time()
        path = url[len(SITE):] or "/"
        h = {k.lower(): v for k, v in (headers or {}).items()}
        out: list[tuple[str, str]] = [("Content-Type", "text/html; charset=utf-8")]
        page = self.pages.get(path)
        if path == "/robots.txt":
            status, body, out = 200, self.robots(now).encode(), [("Content-Type", "text/plain")]
        elif path == "/sitemap.xml" and self.sitemap(now) is not None:
            status, body, out = 200, str(self.sitemap(now)).encode(), [("Content-Type", "application/xml")]
        elif page is None or page.absent[0] <= now < page.absent[1]:
            status, body = 404, b"not found"
        elif page.failing[0] <= now < page.failing[1]:
            status, body = 503, b"unavailable"
        else:
            v = page.version(now)
            etag = f'"v{v}"'
            if page.etag:
                out.append(("ETag", etag))
            if page.last_modified != "none":
                last = max([c for c in page.changes if c <= now], default=EPOCH - 86400)
                out.append(("Last-Modified", formatdate(last if page.last_modified == "true" else now, usegmt=True)))
            if page.etag and h.get("if-none-match") == etag:
                status, body = 304, b""
            else:
                linked = page.links + (page.new_links if v else ())
                links = "".join(f'<li><a href="{link}">{link}</a></li>' for link in linked)
                status = 200
                body = (f"<!DOCTYPE html><html><head><title>{path}</title></head><body><h1>Bulletin {path}</h1>"
                        f"<p>{WORDS} {page.words(v)}.</p><p>{WORDS}.</p><ul>{links}</ul>"
                        + (f"<!-- served at {now} -->" if page.noise else "") + "</body></html>").encode()
        self.log.append((path, now, status))
        return FetchResult(url=url, status=status, reason="", headers=out, body=body, raw_body=body, started=now,
                           elapsed=0.001, response_time=0.001, ip="127.0.0.1",
                           request_headers=list((headers or {}).items()))

    async def close(self) -> None:
        pass


def recrawl(out: Path, pages: dict[str, Page], hours: float, *, robots=None, sitemap=None, **settings) -> Scripted:
    """Crawl SITE from / with revisiting on, ``hours`` of fake time."""
    clock = LoopClock()
    web = Scripted(pages, clock, **{k: v for k, v in (("robots", robots), ("sitemap", sitemap)) if v})
    conf = dict(seeds=(SITE + "/",), delay=1.0, adaptive_delay=0.0, per_host=1, concurrency=2, analysis_processes=0,
                index_interval=0, recrawl=True, rate=0.05, policy="uniform", importance="none")
    config = CrawlConfig(**{**conf, **settings}).validate()

    async def main() -> None:
        crawler = build_crawler(out, config, transport=web, clock=clock, until=EPOCH + hours * 3600)
        await crawler.run()

    run_in_fake_time(main())
    return web


def plain_crawl(out: Path, pages: dict[str, Page]) -> None:
    """Crawl SITE from / without revisiting (`skitter crawl`, before a `skitter recrawl`)."""
    clock = LoopClock()
    web = Scripted(pages, clock)
    config = CrawlConfig(seeds=(SITE + "/",), delay=1.0, adaptive_delay=0.0, per_host=1, concurrency=2,
                         analysis_processes=0, index_interval=-1).validate()

    async def crawl() -> None:
        await build_crawler(out, config, transport=web, clock=clock).run()

    run_in_fake_time(crawl())


def rows(out: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(out / "crawl.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def kinds(out: Path, path: str) -> list[str]:
    return [k for (k,) in rows(out, "SELECT v.kind FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp"
                                    " WHERE p.url = ? ORDER BY v.at", (SITE + path,))]


def found(out: Path, query: str) -> set[str]:
    from skitter.index.live import finish_index
    from skitter.search.engine import search

    finish_index(out)
    return {h.url for h in search(out, query).hits}


def home(*paths: str) -> Page:
    return Page(links=paths)


def test_a_page_changed_on_revisit_is_reindexed(tmp_path: Path) -> None:
    """(a) After the change, search finds the page by its new word and no longer by its old one."""
    pages = {"/": home("/news.html", "/other.html"),
             "/news.html": Page(words=lambda v: "zebrafish" if v == 0 else "quokka", changes=(EPOCH + 900,)),
             "/other.html": Page()}
    out = tmp_path / "crawl"
    recrawl(out, pages, 0.75)
    assert "changed" in kinds(out, "/news.html")
    assert found(out, "quokka") == {SITE + "/news.html"}
    assert found(out, "zebrafish") == set()


def test_an_unchanged_page_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(b) A 304, or a body equal to the stored one (no ETag), costs no analysis: the page is
    parsed once, at its first fetch, however often it is revisited."""
    import skitter.loop

    analysed: list[str] = []
    real = skitter.loop.analyse

    def counting(result, url, *args, **kwargs):
        analysed.append(url)
        return real(result, url, *args, **kwargs)

    monkeypatch.setattr(skitter.loop, "analyse", counting)
    pages = {"/": home("/etag.html", "/plain.html"), "/etag.html": Page(), "/plain.html": Page(etag=False)}
    out = tmp_path / "crawl"
    recrawl(out, pages, 0.5)
    assert kinds(out, "/etag.html").count("304") >= 3
    assert kinds(out, "/plain.html").count("same") >= 3
    assert analysed.count(SITE + "/etag.html") == 1
    assert analysed.count(SITE + "/plain.html") == 1


def test_a_url_robots_txt_newly_disallows_leaves_the_collection_and_the_index(tmp_path: Path) -> None:
    """(c) robots.txt is read again when it expires; the page it now disallows leaves the
    collection and the search index, and is not requested again."""
    when = EPOCH + 900

    def robots(t: float) -> str:
        return "User-agent: *\nDisallow: /secret/\n" if t >= when else "User-agent: *\nDisallow:\n"

    pages = {"/": home("/secret/plans.html", "/open.html"),
             "/secret/plans.html": Page(words=lambda v: "marzipan"), "/open.html": Page()}
    out = tmp_path / "crawl"
    web = recrawl(out, pages, 0.75, robots=robots, robots_expiry=300.0)
    assert [t for p, t, _ in web.log if p == "/robots.txt" and t > when]   # read again after it expired
    assert kinds(out, "/secret/plans.html")[-1] == "disallowed"
    assert rows(out, "SELECT in_collection, state FROM recrawl_pages WHERE url = ?",
                (SITE + "/secret/plans.html",)) == [(0, "disallowed")]
    assert not [t for p, t, _ in web.log if p == "/secret/plans.html" and t > when + 300 + 60]
    assert found(out, "marzipan") == set()
    assert rows(out, "SELECT in_collection FROM recrawl_pages WHERE url = ?", (SITE + "/open.html",)) == [(1,)]


def test_a_gone_page_is_looked_at_again_at_doubling_intervals_and_rejoins_when_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page that 404s twice is gone (out of the collection and the index), but not for good: it
    is asked for again after GONE_RECHECK, then at twice the wait each time it is still gone. One
    removed for two hours (a site's maintenance) comes back into the collection and the index;
    one removed for good is asked for at 1, 2, 4 times the wait."""
    from skitter.recrawl import revisit

    monkeypatch.setattr(revisit, "GONE_RECHECK", 1800.0)
    start = EPOCH + 1200
    pages = {"/": home("/maintained.html", "/removed.html", "/failing.html", "/barred.html"),
             "/maintained.html": Page(words=lambda v: "quinces", absent=(start, start + 2 * 3600)),
             "/removed.html": Page(words=lambda v: "medlars", absent=(start, math.inf)),
             # gone, then its server fails: its rechecks back off all the same
             "/failing.html": Page(absent=(start, start + 900), failing=(start + 900, math.inf)),
             # gone, then robots.txt disallows it: its recheck stops there, with no request
             "/barred.html": Page(absent=(start, math.inf))}

    def robots(t: float) -> str:
        return "User-agent: *\nDisallow: /barred.html\n" if t >= start + 1200 else "User-agent: *\nDisallow:\n"

    out = tmp_path / "crawl"
    web = recrawl(out, pages, 8.0, robots=robots, robots_expiry=600.0)
    back = kinds(out, "/maintained.html")
    assert back[0] == "first" and "gone" in back and back[back.index("gone"):].count("first") == 1   # gone, then back once
    assert rows(out, "SELECT in_collection, state, missing FROM recrawl_pages WHERE url = ?",
                (SITE + "/maintained.html",)) == [(1, "live", 0)]
    assert found(out, "quinces") == {SITE + "/maintained.html"}
    # the page removed for good: missing, gone, then rechecks 1800, 3600, 7200 s apart
    gone_at = [at for (at,) in rows(out, "SELECT v.at FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp"
                                         " WHERE p.url = ? AND v.kind = 'gone' ORDER BY v.at", (SITE + "/removed.html",))]
    gaps = [round(b - a) for a, b in zip(gone_at, gone_at[1:])]
    # (each one waits its wait, then for a token of the revisit budget: --rate 0.05 a second)
    assert len(gaps) >= 3 and all(w <= g <= w + 300 for g, w in zip(gaps, (1800, 3600, 7200))), gaps
    assert rows(out, "SELECT in_collection, state FROM recrawl_pages WHERE url = ?",
                (SITE + "/removed.html",)) == [(0, "gone")]
    after_gone = [t for p, t, _ in web.log if p == "/removed.html" and t > gone_at[0]]
    assert len(after_gone) == len(gone_at) - 1          # nothing but the rechecks
    assert found(out, "medlars") == set()
    failing = rows(out, "SELECT v.at, v.kind FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp"
                        " WHERE p.url = ? ORDER BY v.at", (SITE + "/failing.html",))
    after = [at for at, kind in failing[[k for _, k in failing].index("gone"):]]
    assert [k for _, k in failing][-3:] == ["error"] * 3
    # and `skitter stats` says so (a hold-out tester's host down for 4 minutes showed "errors none")
    from rich.console import Console

    from skitter.stats import load_summary, render

    errors = rows(out, "SELECT count(*) FROM recrawl_visits WHERE kind = 'error'")[0][0]
    summary = load_summary(out)["recrawl"]
    assert errors >= 3 and summary["failed"] == errors and summary["failed_hosts"] == {"news.example": errors}
    console = Console(record=True, width=200)
    console.print(render(load_summary(out)))
    line = next(x for x in console.export_text().splitlines() if x.startswith("revisits failed"))
    assert line.split(None, 2)[2].strip() == f"{errors} (news.example: {errors})"
    gaps = [round(b - a) for a, b in zip(after, after[1:])]
    assert len(gaps) >= 3 and all(w <= g <= w + 300 for g, w in zip(gaps, (1800, 3600, 7200))), gaps
    assert kinds(out, "/barred.html")[-2:] == ["gone", "disallowed"]
    assert rows(out, "SELECT in_collection, state FROM recrawl_pages WHERE url = ?",
                (SITE + "/barred.html",)) == [(0, "disallowed")]
    gone_barred = max(at for (at,) in rows(out, "SELECT v.at FROM recrawl_visits v JOIN recrawl_pages p"
                                                " ON p.fp = v.fp WHERE p.url = ? AND v.kind = 'gone'",
                                           (SITE + "/barred.html",)))
    assert not [t for p, t, _ in web.log if p == "/barred.html" and t > gone_barred]


def test_the_last_modified_estimator_is_used_where_the_header_is_trustworthy(tmp_path: Path) -> None:
    """(d) A truthful Last-Modified makes the estimate the LM one (method ``…-lm``); one that is
    always the request's time does not; and neither does a page without the header."""
    every = tuple(EPOCH + 300 * k for k in range(1, 40))
    pages = {"/": home("/true.html", "/now.html", "/none.html"),
             "/true.html": Page(changes=every, last_modified="true"),
             "/now.html": Page(changes=every, last_modified="now"),
             "/none.html": Page(changes=every)}
    out = tmp_path / "crawl"
    recrawl(out, pages, 1.0, rate=0.04)
    method = dict(rows(out, "SELECT url, method FROM recrawl_pages"))
    assert kinds(out, "/true.html").count("changed") >= 3
    assert method[SITE + "/true.html"].endswith("-lm")
    assert not method[SITE + "/now.html"].endswith("-lm")
    assert not method[SITE + "/none.html"].endswith("-lm")
    lm_ok = dict(rows(out, "SELECT url, lm_ok FROM recrawl_pages"))
    assert lm_ok[SITE + "/true.html"] == 1 and lm_ok[SITE + "/now.html"] == 0


def test_a_site_whose_last_modified_lies_is_not_believed_on_any_page(tmp_path: Path) -> None:
    """(d') An always-"now" Last-Modified agrees with every change, so a page that changes at every
    visit never shows the lie itself: once three pages of its site have, none of the site's is
    used (a hold-out forum's fastest pages were estimated 3 times too fast on it)."""
    fast = tuple(EPOCH + 5 * k for k in range(1, 1000))
    slow = [f"/s{i}.html" for i in range(4)]
    pages = {"/": home("/fast.html", *slow), "/fast.html": Page(changes=fast, last_modified="now"),
             **{p: Page(last_modified="now") for p in slow}}
    out = tmp_path / "crawl"
    recrawl(out, pages, 0.5, rate=0.05)
    got = dict(rows(out, "SELECT url, method FROM recrawl_pages"))
    assert not any(got[SITE + p].endswith("-lm") for p in slow)
    lm_ok = dict(rows(out, "SELECT url, lm_ok FROM recrawl_pages"))
    assert lm_ok[SITE + "/fast.html"] == 1   # its own history never caught the header
    assert not got[SITE + "/fast.html"].endswith("-lm"), got


def test_sitemap_changefreq_is_the_prior_of_the_revisit_schedule(tmp_path: Path) -> None:
    """(e) Pages only a sitemap names start with its changefreq as their prior: none of them ever
    changes, but the ones it says change hourly get a higher estimated rate, so more of the
    optimal policy's revisits, than the yearly ones, and a first revisit within the hour."""
    hourly = [f"/h{i}.html" for i in range(4)]
    yearly = [f"/y{i}.html" for i in range(4)]
    entries = "".join(f"<url><loc>{SITE}{p}</loc><changefreq>{'hourly' if p in hourly else 'yearly'}</changefreq></url>"
                      for p in hourly + yearly)
    xml = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    pages = {"/": home(), **{p: Page() for p in hourly + yearly}}
    out = tmp_path / "crawl"
    web = recrawl(out, pages, 1.0, sitemap=lambda t: xml, rate=0.01, policy="optimal")
    got = {u[len(SITE):]: (rate, method) for u, rate, method in
           rows(out, "SELECT url, rate, method FROM recrawl_pages WHERE kind = 'page'")}
    assert all(got[p][1] == "eb-gamma" for p in hourly + yearly)   # a prior, not the flat one
    assert min(got[p][0] for p in hourly) > 10 * max(got[p][0] for p in yearly)
    revisits = {p: sum(1 for q, _, _ in web.log if q == p) - 1 for p in hourly + yearly}
    assert min(revisits[p] for p in hourly) > 2 * max(revisits[p] for p in yearly), revisits
    first_revisit = {p: min(t for q, t, s in web.log if q == p and s == 304) for p in hourly}
    assert max(first_revisit.values()) < EPOCH + 3600, first_revisit


def test_a_page_far_faster_than_its_sitemap_says_is_let_go(tmp_path: Path) -> None:
    """(e') A sitemap's "hourly" is a prior, not a cap: pages that change every 30 s, with a true
    Last-Modified, are estimated near that after an hour of revisits (the prior's heavy tail, as a
    site prior has), not held near the hour (a hold-out sitemap's were estimated 12 times too
    slow, 6 changes in 6 visits notwithstanding)."""
    fast = [f"/f{i}.html" for i in range(3)]
    entries = "".join(f"<url><loc>{SITE}{p}</loc><changefreq>hourly</changefreq></url>" for p in fast)
    xml = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    every = tuple(EPOCH + 30 * k for k in range(1, 200))
    pages = {"/": home(*fast), **{p: Page(changes=every, last_modified="true") for p in fast}}
    out = tmp_path / "crawl"
    recrawl(out, pages, 1.0, sitemap=lambda t: xml, rate=0.02, policy="optimal")
    got = {u[len(SITE):]: (rate, n) for u, rate, n in
           rows(out, "SELECT url, rate, n FROM recrawl_pages WHERE kind = 'page'")}
    for p in fast:
        rate, n = got[p]
        assert n >= 4 and 1 / 120 < rate < 1 / 10, (p, n, 1 / rate)


def test_a_site_prior_shrinks_a_page_with_a_short_history(tmp_path: Path) -> None:
    """(f) On a site whose pages change about every 10 minutes, the pooled site prior (fitted by the
    planning pass) gives a page first seen late, with no history of its own, an estimate near the
    site's rate with a narrower interval than the flat prior would, instead of an arbitrary one."""
    import numpy as np

    from skitter.recrawl.history import posterior
    from skitter.recrawl.revisit import Recrawl

    rng = np.random.default_rng(7)

    def poisson(mean: float) -> tuple[float, ...]:
        return tuple(EPOCH + np.cumsum(rng.exponential(mean, 200)))

    # (12 pages: with 7, the fitted prior flips between a sensible one and the widest allowed from
    # one fit to the next, docs/recrawl.md "Not done yet")
    many = [f"/p{i}.html" for i in range(12)]
    late = "/late.html"
    pages = {p: Page(changes=poisson(600.0)) for p in many}
    pages[late] = Page(changes=poisson(600.0))
    # the late page is linked only from the home page's version after 1.1 hours
    pages["/"] = Page(changes=(EPOCH + 1.1 * 3600,), links=tuple(many), new_links=(late,))
    out = tmp_path / "crawl"
    recrawl(out, pages, 1.25, rate=0.04, policy="uniform")
    conn = sqlite3.connect(out / "crawl.db")
    conn.row_factory = sqlite3.Row
    try:
        row = dict(conn.execute("SELECT * FROM recrawl_pages WHERE url = ?", (SITE + late,)).fetchone())
    finally:
        conn.close()
    assert row["visits"] <= 3 and row["method"].startswith("eb-gamma")
    truth = 1 / 600.0
    assert truth / 4 < row["rate"] < truth * 4
    flat = posterior(Recrawl._stats(row), None)
    assert math.log(row["rate_high"] / row["rate_low"]) < math.log(flat.high / flat.low)


def test_stats_and_the_crawl_page_show_the_distribution_of_change_intervals(tmp_path: Path) -> None:
    """``skitter stats`` buckets the pages revisited by estimated change interval (per page and per
    site) and the web UI plots it: pages changing every 5 minutes with a truthful Last-Modified
    (so the LM estimate) fall in 1-10m; pages that never changed are counted as such."""
    from rich.console import Console

    from skitter.stats import load_summary, render
    from skitter.store.db import connect
    from skitter.web import plots

    every = tuple(EPOCH + 300 * k for k in range(1, 40))
    fast = [f"/f{i}.html" for i in range(3)]
    static = [f"/s{i}.html" for i in range(3)]
    pages = {"/": home(*fast, *static), **{p: Page(changes=every, last_modified="true") for p in fast},
             **{p: Page() for p in static}}
    out = tmp_path / "crawl"
    recrawl(out, pages, 0.5, rate=0.04)
    r = load_summary(out)["recrawl"]
    h = r["change_intervals"]
    assert list(h) == ["<1m", "1-10m", "10m-1h", "1h-1d", ">1d", "never changed"]
    assert h["1-10m"] == 3 and h["never changed"] == 4 and sum(h.values()) == r["estimated"] == 7
    assert [s["intervals"] for s in r["sites"]] == [h]   # one site
    assert 60 <= r["change_interval_deciles"]["p10"] <= r["change_interval_deciles"]["p90"] < 600
    console = Console(width=200, record=True)
    console.print(render(load_summary(out)))
    text = console.export_text()
    assert "interval histogram" in text and "1-10m: 3" in text and "never changed: 4" in text
    conn = connect(out / "crawl.db", readonly=True)
    try:
        assert plots.change_intervals(conn)[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        conn.close()



def test_the_first_pages_of_a_crawl_get_a_revisit_schedule(tmp_path: Path) -> None:
    """The first pages fetched, before any plan has seen a page, get the uniform share of the
    budget as their revisit frequency, not the 0 (a first revisit 30 days away) of a plan over an
    empty collection."""
    from skitter.recrawl.revisit import MAX_INTERVAL

    pages = {"/": home("/a.html", "/b.html", "/c.html"), "/a.html": Page(), "/b.html": Page(), "/c.html": Page()}
    out = tmp_path / "crawl"
    recrawl(out, pages, 1 / 120, rate=0.01, policy="optimal")
    got = rows(out, "SELECT url, frequency, due - last_visit FROM recrawl_pages WHERE kind = 'page'")
    assert len(got) == 4
    for url, frequency, wait in got:
        assert frequency > 0 and wait < MAX_INTERVAL / 2, (url, frequency, wait)


def one_host_web() -> tuple[list[str], dict[str, Page]]:
    """A home page linking 5 pages, which link the other 35: 41 pages on one host."""
    kids = [f"/k{i}.html" for i in range(40)]
    return kids, {"/": home(*kids[:5]),
                  **{p: Page(links=tuple(kids[5 + 7 * i: 12 + 7 * i]) if i < 5 else ()) for i, p in enumerate(kids)}}


def test_a_revisit_waiting_for_the_budget_does_not_hold_its_host(tmp_path: Path) -> None:
    """A revisit whose budget token is not earned yet goes back to the frontier until it is,
    instead of waiting in its host's slot: with a budget of one revisit every 100 s, the host's
    discovery (41 pages, 1 s apart) still takes under a minute and a half (it took 50 minutes when
    revisits waited in the slot), and the budget holds."""
    kids, pages = one_host_web()
    web = recrawl(tmp_path / "crawl", pages, 0.5, rate=0.01, policy="uniform")
    first = {}
    for p, t, _ in web.log:
        first.setdefault(p, t)
    assert set(kids) <= set(first) and max(first[p] for p in kids) < EPOCH + 90
    revisits = [t for _, t, status in web.log if status == 304]
    assert 0 < len(revisits) <= 0.01 * 1800 + 1


def test_revisits_and_the_discovery_of_a_host_take_turns(tmp_path: Path) -> None:
    """One host, 1 s between requests, a budget of 1 revisit a second (the host's whole pace):
    revisits and new URLs take turns in the host's slots, so the discovery of its 41 pages takes
    about twice its 45 s alone (it fetched 2 of them in 6 minutes when revisits went first), and
    the revisits are not put off until it ends either."""
    kids, pages = one_host_web()
    web = recrawl(tmp_path / "crawl", pages, 0.1, rate=1.0, policy="uniform")
    first: dict[str, float] = {}
    for p, t, status in web.log:
        if status == 200:
            first.setdefault(p, t)
    assert set(kids) <= set(first), f"{len(set(kids) & set(first))} of {len(kids)} pages fetched in 6 minutes"
    end = max(first[p] for p in kids)
    assert end < EPOCH + 120
    during = [t for _, t, status in web.log if status == 304 and t < end]
    assert len(during) >= 0.3 * (end - EPOCH)   # about one request in two, at one request a second


def test_a_plain_crawl_keeps_the_main_text_checksum_for_a_later_recrawl(tmp_path: Path) -> None:
    """A crawl made without --recrawl stores each page's main-text checksum, so the first revisit
    of ``skitter recrawl DIR`` already tells noise (a body that differs, the same text) from a
    change, instead of taking a baseline."""
    pages = {"/": home("/noisy.html", "/news.html"), "/noisy.html": Page(etag=False, noise=True),
             "/news.html": Page(etag=False, changes=(EPOCH + 1200,))}
    out = tmp_path / "crawl"
    clock = LoopClock()
    web = Scripted(pages, clock)
    config = CrawlConfig(seeds=(SITE + "/",), delay=1.0, adaptive_delay=0.0, per_host=1, concurrency=2,
                         analysis_processes=0, index_interval=0).validate()

    async def crawl() -> None:
        await build_crawler(out, config, transport=web, clock=clock).run()

    run_in_fake_time(crawl())
    assert rows(out, "SELECT count(*) FROM pages WHERE main_hash IS NOT NULL") == [(3,)]
    recrawl(out, pages, 1.0, rate=0.05)
    assert kinds(out, "/noisy.html")[1:2] == ["noise"]
    assert "changed" in kinds(out, "/news.html") and "baseline" not in kinds(out, "/news.html")


def test_a_page_of_the_crawl_gets_its_last_modified_as_its_last_change(tmp_path: Path) -> None:
    """A page a plain crawl stored, taken into a recrawl's collection, has the Last-Modified it was
    served with as its last change, as a page the recrawl fetches first has; it had none (the
    export's last_changed was null for one, the header's time for the other: a hold-out run)."""
    changed = EPOCH - 7200
    pages = {"/": Page(etag=False, last_modified="true", changes=(changed,), links=("/a.html",)),
             "/a.html": Page(etag=False, last_modified="true", changes=(changed,))}
    out = tmp_path / "crawl"
    plain_crawl(out, pages)
    recrawl(out, pages, 0.2, rate=0.05)
    got = dict(rows(out, "SELECT url, last_change FROM recrawl_pages"))
    assert got == {SITE + "/": pytest.approx(changed), SITE + "/a.html": pytest.approx(changed)}


def test_a_page_of_the_crawl_uses_a_truthful_last_modified(tmp_path: Path) -> None:
    """A page a plain crawl stored, then recrawled (`skitter crawl`, then `skitter recrawl`: the
    README's way), has the Last-Modified it was crawled with to compare its first revisit's with:
    a hold-out test found no page of the first crawl ever trusted with the header (lm_ok 0 for all,
    where `crawl --recrawl` trusted 49 of 49), as the first revisit had nothing to compare with."""
    every = tuple(EPOCH + 300 * k for k in range(1, 40))
    pages = {"/": Page(etag=False, links=("/true.html", "/now.html")),
             "/true.html": Page(etag=False, changes=every, last_modified="true"),
             "/now.html": Page(etag=False, changes=every, last_modified="now")}
    out = tmp_path / "crawl"
    plain_crawl(out, pages)
    recrawl(out, pages, 1.0, rate=0.04)
    got = {u: (ok, m) for u, ok, m in rows(out, "SELECT url, lm_ok, method FROM recrawl_pages")}
    assert got[SITE + "/true.html"][0] == 1 and got[SITE + "/true.html"][1].endswith("-lm")
    assert got[SITE + "/now.html"][0] == 0
