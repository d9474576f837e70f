"""The search index kept current while a crawl runs (docs/search.md, "During a crawl").

The crawl loop starts a :class:`LiveIndexer` and cancels it when the crawl stops; then
:func:`finish_index` indexes what is left. The indexer works in small steps, one after the other:
each step (:func:`live_step`) indexes the anchors of the links stored since the last one (lazy
rule: a page's anchor column is refreshed when its anchor count at least doubled) and at most
``step`` new pages, in one transaction; when a step finds less than a full step of work the
indexer pauses ``pause`` seconds. So the index stays about a second behind the crawl, and when
the crawl stops there is about a second of work left, not the tens of seconds that updates every
10 s left (docs/benchmarks.md, "The live index").

Where the steps run: in a process of their own (a ``ProcessPool(1)``, the default) or in a pool
the caller gives (the crawl's analysis workers). A process of its own keeps the analysis workers'
latency free of index steps; sharing saves a Python process. Either way the step keeps its
connections open between calls (in that process: :data:`skitter.index.step._OPEN`), with a small SQLite page cache
(``LIVE_CACHE_KB``): the memory of the index work is bounded by that cache, a step's pages and
the analyzer's vocabulary (``analyze.VOCABULARY`` words).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path

from ..errors import SkitterError
from ..procpool import ProcessDied, ProcessPool
from .step import LIVE_CACHE_KB, STEP, live_close, live_step

__all__ = ["LiveIndexer", "live_step", "live_close", "finish_index", "STEP", "LIVE_CACHE_KB"]

log = logging.getLogger(__name__)

MAX_FAILURES = 3        # database errors in a row (the step reopens its connections) before giving up


def finish_index(crawl_dir: str | Path) -> dict:
    """The update when a crawl stops: the pages the live indexer had not reached, every anchor
    column brought up to date (cheap since anchor text has a table of its own: 0.04 ms a page,
    0.6 s for the 16,000 refreshes of the benchmark crawl), PageRank and near-duplicate marks.
    The index it leaves is the one ``skitter index DIR`` would build (docs/search.md, "A
    just-finished crawl's index")."""
    from .indexer import Indexer   # noqa: PLC0415 - the crawl process needs it only now, its children gone

    # in the crawl process, whose memory the summary is measured with: the live step's small cache
    stats = Indexer(crawl_dir, cache_kb=LIVE_CACHE_KB).update(exact_anchors=True, pipelined=True).as_dict()
    if stats["damaged"]:
        log.warning("%s", stats["damaged"])
    return stats


class LiveIndexer:
    """``await LiveIndexer(directory).run()`` until cancelled: steps of at most ``step`` pages,
    one after the other, and a pause of ``pause`` seconds whenever a step was not full.

    ``pool``: run the steps there (e.g. the crawl's analysis workers); by default in a process of
    the indexer's own. Cancelling waits for nothing: the step in progress finishes in its process
    (the pool's ``close`` waits for it) and its work is committed. An error of the index (another
    version, a database error three steps in a row) stops the live index with a warning, never
    the crawl: the crawl's last update tries again."""

    def __init__(self, directory: str | Path, *, pool: ProcessPool | None = None,
                 pause: float = 1.0, step: int = STEP, cache_kb: int = LIVE_CACHE_KB) -> None:
        self.directory = str(directory)
        self.pool = pool
        self.pause = pause
        self.step = step
        self.cache_kb = cache_kb
        self.steps = 0
        self.indexed = 0
        self.anchors_refreshed = 0
        self.busy_seconds = 0.0       # the steps' own time (in their process)

    async def run(self) -> None:
        own = self.pool is None
        pool = ProcessPool(1) if self.pool is None else self.pool
        try:
            if own:
                await pool.start()
            failures = 0
            while True:
                try:
                    r = await self._step(pool)
                except (SkitterError, ProcessDied) as exc:   # e.g. an index from another version
                    log.warning("live indexing stopped: %s", exc)
                    return
                except sqlite3.Error as exc:   # e.g. `skitter index DIR` rebuilding it meanwhile
                    failures += 1
                    if failures >= MAX_FAILURES:
                        log.warning("live indexing stopped: %s", exc)
                        return
                    log.warning("live indexing: %s (trying again)", exc)
                    await asyncio.sleep(max(self.pause, 1.0))
                    continue
                failures = 0
                self.steps += 1
                self.indexed += r["indexed"]
                self.anchors_refreshed += r["anchors_refreshed"]
                self.busy_seconds += r["seconds"]
                if r["indexed"] + r["skipped"] < self.step:
                    await asyncio.sleep(self.pause)
        finally:
            log.info("live index: %d steps, %d pages indexed, %d anchor columns refreshed, %.1f s of work",
                     self.steps, self.indexed, self.anchors_refreshed, self.busy_seconds)
            if own:
                await pool.close()

    async def _step(self, pool: ProcessPool) -> dict:
        """One step in ``pool``; its warning (a damaged index made again) is logged even when the
        crawl stops during the step: the step finishes in its process anyway (the pool's close
        waits for it), and a warning lost there would never be given again."""
        step = asyncio.ensure_future(pool.submit(live_step, self.directory, self.step, self.cache_kb))
        try:
            r = await asyncio.shield(step)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                r = await step
                if r["damaged"]:
                    log.warning("%s", r["damaged"])
            raise
        if r["damaged"]:
            log.warning("%s", r["damaged"])
        return r
