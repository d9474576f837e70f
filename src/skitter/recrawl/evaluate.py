"""How fresh did a recrawl keep its collection, against the ground truth of a changing web
(issue #20's evaluation, docs/recrawl.md).

:func:`score_recrawl` reads a crawl directory's visits (``recrawl_visits``: every fetch of every
page of the collection, first fetches included) and scores them with Cho's time-averaged freshness
and age (:func:`skitter.recrawl.freshness.score`) against a change log (``{url: [change times]}``,
e.g. from :meth:`skitter.demo.web.DemoWeb.change_times`). Next to it, on the same change log and
with the same number of fetches in the same span, the schedules the policies would have made with
the *true* rates: uniform, proportional, the freshness-optimal one (the ceiling an estimator can
approach) and the age-optimal one. Gains over uniform are what to compare (docs/recrawl.md: static pages are fresh under
any policy).

:func:`run_fake_recrawl` runs a whole discovery crawl and recrawl of a changing demo web in fake
time (the real crawl loop, store and recrawl part; the web served in-process by
:class:`skitter.testing.WebTransport`), so hours of a web's life take seconds: the fixture of the
evaluation test and of ``bench/recrawl_eval.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..store.db import DB_NAME, connect
from . import policy as _policy
from .freshness import Events, periodic_schedule, score

SIMULATED = ("uniform", "proportional", "optimal", "age-optimal")


def collection_visits(directory: Path | str) -> tuple[list[str], dict[str, list[float]], dict[str, float]]:
    """The collection's URLs (pages in it now), each one's visit times, and its weight."""
    conn = connect(Path(directory) / DB_NAME, readonly=True)
    try:
        rows = conn.execute("SELECT fp, url, weight, first_visit FROM recrawl_pages WHERE in_collection = 1"
                            " AND kind != 'sitemap' ORDER BY url").fetchall()
        urls = [r[1] for r in rows]
        weight = {r[1]: float(r[2] or 1.0) for r in rows}
        url_of = {r[0]: r[1] for r in rows}
        visits: dict[str, list[float]] = {u: [] for u in urls}
        for fp, at in conn.execute("SELECT fp, at FROM recrawl_visits WHERE status IS NOT NULL ORDER BY at"):
            url = url_of.get(fp)
            if url is not None:
                visits[url].append(float(at))
        # a page a crawl stored before recrawling was on (`skitter crawl`, then `skitter recrawl`)
        # has no "first" row in recrawl_visits: its first fetch is recrawl_pages.first_visit
        for _fp, url, _w, first in rows:
            if first is not None and (not visits[url] or visits[url][0] > float(first)):
                visits[url].insert(0, float(first))
    except sqlite3.OperationalError as exc:
        raise ValueError(f"{directory}: no recrawl tables ({exc})") from None
    finally:
        conn.close()
    return urls, visits, weight


def score_recrawl(visits: Mapping[str, Sequence[float]], changes: Mapping[str, Sequence[float]],
                  rates: Mapping[str, float], start: float, end: float, *, synced: float,
                  weights: Mapping[str, float] | None = None, seed: int = 0) -> dict[str, dict[str, float]]:
    """Scores over ``[start, end]``: ``"recrawl"`` (the real fetches) and, for each policy of
    :data:`SIMULATED` computed from the true ``rates``, evenly spaced fetches as many as the real
    ones made in ``[synced, end)`` over that span, every copy fresh at ``synced`` (the end of the
    discovery crawl). Each row: freshness, weighted_freshness, age (s), weighted_age, fetches."""
    urls = sorted(visits)
    index = {u: i for i, u in enumerate(urls)}
    n = len(urls)
    w = np.array([(weights or {}).get(u, 1.0) for u in urls], dtype=float)
    lam = np.array([rates.get(u, 0.0) for u in urls], dtype=float)
    cp = [index[u] for u in urls for _ in changes.get(u, ())]
    ct = [t for u in urls for t in changes.get(u, ())]
    change_events = Events(np.array(cp, dtype=np.int64), np.array(ct, dtype=float))
    fp = [index[u] for u in urls for _ in visits[u]]
    ft = [t for u in urls for t in visits[u]]
    real = Events(np.array(fp, dtype=np.int64), np.array(ft, dtype=float))
    out = {"recrawl": _row(score(real, change_events, n, start, end, w))}
    total = int(((real.time >= synced) & (real.time < end)).sum())
    phase = np.random.default_rng(seed).random(n)
    budget = total / max(end - synced, 1e-9)
    for name in SIMULATED:
        f = _policy.POLICIES[name](lam, budget, w)
        made = periodic_schedule(f, total, synced, end, phase)
        sched = Events(np.concatenate([np.arange(n), made.page]), np.concatenate([np.full(n, synced), made.time]))
        row = _row(score(sched, change_events, n, start, end, w))
        # (the copies in sync at `synced` are the discovery crawl's, not fetches of this schedule)
        row["fetches"] = int(((made.time >= start) & (made.time < end)).sum())
        out[f"{name} (true rates)"] = row
    return out


def _row(s: Any) -> dict[str, float]:
    return {"freshness": s.freshness, "weighted_freshness": s.weighted_freshness, "age": s.age,
            "weighted_age": s.weighted_age, "fetches": s.fetches}


def run_fake_recrawl(directory: Path | str, web: Any, *, hours: float, rate: float, policy: str = "optimal",
                     importance: str = "none", collection: int = 0, warmup_hours: float = 2.0,
                     settings: Mapping[str, Any] | None = None,
                     check: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Crawl ``web`` (a changing :class:`~skitter.demo.web.DemoWeb` whose ``start_epoch`` is
    :data:`skitter.testing.EPOCH`) with revisiting on, in fake time, for ``hours`` of its life,
    and score the collection over everything after the first ``warmup_hours``. Returns
    ``{"scores": score_recrawl(...), "synced": ..., "start": ..., "end": ..., "counters": ...}``."""
    from ..api import build_crawler
    from ..config import CrawlConfig
    from ..testing import EPOCH, LoopClock, WebTransport, run_in_fake_time

    clock = LoopClock()
    values: dict[str, Any] = dict(delay=0.5, adaptive_delay=0.0, max_crawl_delay=1.0, per_host=1, concurrency=4,
                                  analysis_processes=0, index_interval=0)
    values.update(settings or {})   # (they may override the defaults above)
    config = CrawlConfig(seeds=tuple(web.seeds()), recrawl=True, rate=rate, policy=policy, importance=importance,
                         collection=collection, **values).validate()
    end = EPOCH + hours * 3600.0
    result: dict[str, Any] = {}

    async def main() -> None:
        transport = WebTransport(web, clock)
        crawler = build_crawler(directory, config, transport=transport, clock=clock, until=end)
        await crawler.run()
        result["counters"] = crawler.recrawl.counters if crawler.recrawl is not None else None
        if check is not None:
            check(crawler)

    run_in_fake_time(main())
    urls, visits, weights = collection_visits(directory)
    # the discovery crawl: until every page of the collection had its first fetch
    synced = max((v[0] for v in visits.values() if v), default=EPOCH)
    start = max(EPOCH + warmup_hours * 3600.0, synced)
    changes = {u: web.change_times(u, EPOCH, end) for u in urls}
    rates = {u: web.change_rate(u) for u in urls}
    result.update(scores=score_recrawl(visits, changes, rates, start, end, synced=synced,
                                       weights=weights if importance != "none" else None),
                  synced=synced, start=start, end=end, pages=len(urls))
    return result
