"""The live index's step, in whichever process runs it (skitter.index.live): a module of its own
so that the process that runs the steps imports the indexer and nothing of the crawl's event loop
(``live.py`` imports asyncio and the process pool: 7 MB more in that process)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # imported by the first step: the crawl process, which names live_step, never does
    from .indexer import Indexer

__all__ = ["live_step", "live_close", "STEP", "LIVE_CACHE_KB", "LIVE_LINK_BATCH"]

# Smaller steps keep less of a step's pages and postings in the process: 125 pages and a 2 MB page
# cache take its peak RSS from 52 to 42 MB for 2-5 % more of its CPU (250 pages and 4 MB before;
# docs/benchmarks.md, "The live index")
STEP = 125              # pages a step indexes at most (one transaction)
LIVE_CACHE_KB = 2000    # SQLite page cache of the step's index.db connection (the default is 64 MB)
# Links whose anchors a step gathers at a time (all of a step's links are gathered, in batches of
# this many): the links' text and their targets' counts in memory at once. Unbounded, a step after
# a second's commit of the crawl (12,000 links) took the index process to 41 MB of peak RSS, 37 MB
# once SQLite appended the anchors (it read each target's whole text into Python before), and 35
# MB in batches of 3,000, for the same CPU (docs/benchmarks.md, "Stop 37")
LIVE_LINK_BATCH = 3000

_OPEN: dict[str, Indexer] = {}   # in the process that runs the steps: directory -> open indexer


def live_step(crawl_dir: str, step: int = STEP, cache_kb: int = LIVE_CACHE_KB) -> dict:
    """One step of the live index, in whichever process runs it: new anchors (lazy rule), then at
    most ``step`` new pages, one transaction. Returns the step's ``UpdateStats`` as a dict.
    ``cache_kb``: the index connection's page cache (the first step's value is kept)."""
    ix = _OPEN.get(crawl_dir)
    if ix is None:
        from .indexer import Indexer   # noqa: PLC0415

        ix = Indexer(crawl_dir, chunk=step, cache_kb=cache_kb, link_batch=LIVE_LINK_BATCH)
        ix.connect()
        _OPEN[crawl_dir] = ix
    try:
        return ix.update(exact_anchors=False, max_pages=step, marks=False).as_dict()
    except BaseException:
        live_close(crawl_dir)
        raise


def live_close(crawl_dir: str) -> None:
    """Close the connections :func:`live_step` kept open for ``crawl_dir`` in this process."""
    ix = _OPEN.pop(crawl_dir, None)
    if ix is not None:
        ix.close()
