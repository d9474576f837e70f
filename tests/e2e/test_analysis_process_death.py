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
