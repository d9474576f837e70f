"""An analysis process killed in the middle of a crawl costs nothing: its pages are analysed again by
the process that replaces it, and the crawl stores what an undisturbed crawl stores."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from skitter.config import CrawlConfig
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.api import build_crawler
from skitter.strategies import make_scorer
from skitter.store.db import CrawlDB

pytestmark = pytest.mark.slow


class KillingScorer:
    """Breadth-first, through the scorer plug-in: when the ``at``-th page's relevance is asked,
    kills the crawl's analysis process (other pages' calls are in flight)."""

    name = "bfs"
    reads_text = False
    reads_link_context = False

    def __init__(self, at: int) -> None:
        self.inner = make_scorer("bfs")
        self.at = at
        self.crawler = None
        self.killed: int | None = None
        self.pages = 0

    def seed_priority(self, url):
        return self.inner.seed_priority(url)

    def score(self, link, parent):
        return self.inner.score(link, parent)

    def relevance(self, url, page):
        self.pages += 1
        if self.killed is None and self.pages >= self.at:
            self.killed = self.crawler.pool.pids[0]
            os.kill(self.killed, signal.SIGKILL)
        return self.inner.relevance(url, page)


def outcome(directory: Path) -> dict[str, tuple]:
    db = CrawlDB(directory, readonly=True)
    try:
        rows = db.conn.execute("SELECT url, status, content_hash, outlinks, near_duplicate_of IS NOT NULL"
                               " FROM fetches").fetchall()
        return {r[0]: r[1:] for r in rows}
    finally:
        db.conn.close()


def test_a_killed_analysis_process_loses_no_page(tmp_path) -> None:
    with DemoServer(DemoConfig(hosts=2, pages=150, seed=3, crawl_delay=0)) as srv:
        config = CrawlConfig(seeds=tuple(srv.web.seeds()), delay=0.0, adaptive_delay=0.0, max_crawl_delay=0.0,
                             concurrency=8, per_host=4, analysis_processes=1, index_interval=-1)
        asyncio.run(build_crawler(tmp_path / "calm", config).run())
        killer = KillingScorer(at=40)
        killing = killer.crawler = build_crawler(tmp_path / "killed", config, scorer=killer)
        stats = asyncio.run(killing.run())
    assert killer.killed is not None and killing.pool.deaths == 1
    assert stats.unparsed == 0
    assert outcome(tmp_path / "killed") == outcome(tmp_path / "calm")
    assert len(outcome(tmp_path / "calm")) > 100


def test_analysis_processes_that_cannot_be_started_stop_the_crawl_with_one_line(tmp_path, monkeypatch) -> None:
    from skitter.errors import SkitterError

    monkeypatch.setattr("sys.executable", str(tmp_path / "no-such-python"))
    config = CrawlConfig(seeds=("http://127.0.0.1:9/",), analysis_processes=1, index_interval=-1)
    with pytest.raises(SkitterError, match="cannot start analysis processes"):
        asyncio.run(build_crawler(tmp_path / "c", config).run())


def test_a_page_that_would_take_the_parser_minutes_is_archived_not_parsed(tmp_path, monkeypatch) -> None:
    """A page of deeply nested formatting tags (a hold-out tester's 6.9 MB one took the parser 95 s
    of CPU, and every other host's pages waited behind it): past the analysis CPU limit its process
    is ended and replaced, the page is archived without a parse, and the pages queued behind it in
    the same process are analysed as usual (they did not kill it)."""
    from sites import StaticSite

    from skitter import loop

    monkeypatch.setattr(loop, "CPU_LIMIT", 0.3)   # the parse below takes about 2 s of CPU
    site = tmp_path / "site"
    site.mkdir()
    normal = [f"p{i}.html" for i in range(30)]
    (site / "index.html").write_text("<html><body>" + "".join(f'<a href="{p}">{p}</a> ' for p in
                                                              ["evil.html", *normal]) + "</body></html>")
    (site / "evil.html").write_text("<html><body>" + "<b><i><span><a href=/x>" * 40000 + "</body></html>")
    for p in normal:
        (site / p).write_text(f"<html><head><title>{p}</title></head><body><p>words of {p}</p></body></html>")
    with StaticSite(site) as srv:
        config = CrawlConfig(seeds=(srv.base + "/",), delay=0.0, adaptive_delay=0.0, max_crawl_delay=0.0,
                             concurrency=8, per_host=8, analysis_processes=1, index_interval=-1, allow_private=True)
        crawler = build_crawler(tmp_path / "c", config)
        stats = asyncio.run(crawler.run())
    assert stats.unparsed == 1 and crawler.pool.deaths == 1
    db = CrawlDB(tmp_path / "c", readonly=True)
    try:
        parsed = {u for (u,) in db.conn.execute("SELECT url FROM pages")}
        statuses = dict(db.conn.execute("SELECT url, status FROM fetches"))
    finally:
        db.conn.close()
    assert statuses[srv.base + "/evil.html"] == 200 and srv.base + "/evil.html" not in parsed
    assert {srv.base + "/" + p for p in normal} <= parsed
