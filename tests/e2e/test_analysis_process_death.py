"""An analysis process killed in the middle of a crawl costs nothing: its pages are analysed again by
the worker that replaces it, and the crawl stores what an undisturbed crawl stores."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from skitter.config import CrawlConfig
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.loop import Crawler
from skitter.store.db import CrawlDB

pytestmark = pytest.mark.slow


class KillingCrawler(Crawler):
    """Kills its analysis process once, with calls in flight, after ``at`` pages are handled."""

    def __init__(self, *args, at: int, **kw) -> None:
        super().__init__(*args, **kw)
        self.at = at
        self.killed: int | None = None

    def _handle(self, cand, result, analysis) -> None:
        super()._handle(cand, result, analysis)
        if self.killed is None and self.stats.fetched >= self.at:
            self.killed = self.pool.pids[0]
            os.kill(self.killed, signal.SIGKILL)


def outcome(directory: Path) -> dict[str, tuple]:
    db = CrawlDB(directory, readonly=True)
    try:
        rows = db.conn.execute("SELECT url, status, content_hash, outlinks, near_duplicate_of IS NOT NULL"
                               " FROM fetches").fetchall()
        return {r[0]: r[1:] for r in rows}
    finally:
        db.conn.close()


def test_a_killed_worker_loses_no_page(tmp_path) -> None:
    with DemoServer(DemoConfig(hosts=2, pages=150, seed=3, crawl_delay=0)) as srv:
        config = CrawlConfig(seeds=tuple(srv.web.seeds()), delay=0.0, adaptive_delay=0.0, max_crawl_delay=0.0,
                             concurrency=8, per_host=4, analysis_processes=1, index_interval=-1)
        calm = Crawler(tmp_path / "calm", config)
        asyncio.run(calm.run())
        killing = KillingCrawler(tmp_path / "killed", config, at=40)
        stats = asyncio.run(killing.run())
    assert killing.killed is not None and killing.pool.deaths == 1
    assert stats.unparsed == 0
    assert outcome(tmp_path / "killed") == outcome(tmp_path / "calm")
    assert len(outcome(tmp_path / "calm")) > 100


def test_workers_that_cannot_be_started_stop_the_crawl_with_one_line(tmp_path, monkeypatch) -> None:
    from skitter.errors import SkitterError

    monkeypatch.setattr("sys.executable", str(tmp_path / "no-such-python"))
    config = CrawlConfig(seeds=("http://127.0.0.1:9/",), analysis_processes=1, index_interval=-1)
    with pytest.raises(SkitterError, match="cannot start analysis processes"):
        asyncio.run(Crawler(tmp_path / "c", config).run())
