"""The recrawl's planning pass: seed 000's Ranking Module, off the crawl's hot path.

The Update Module (the crawl loop with :class:`skitter.recrawl.revisit.Recrawl`) decides each
page's next visit from its own estimate and one multiplier. The things that need the whole
collection run here, now and then, in a process of their own (or inline in tests), reading
``crawl.db`` read-only (WAL: the crawl's writer never waits for it), and hand back a small answer
the crawl process applies:

1. importance (``--importance``): PageRank over every URL the crawl knows (pages and the URLs they
   link to, so a URL outside a bounded collection has one too), or in-link counts; as weights with
   mean 1 over the collection;
2. each site's prior: a gamma distribution fitted on its pages' running likelihoods
   (``estimate.fit_prior_to_likelihoods``, at most ``PRIOR_SAMPLE`` pages a site), with a small
   heavy tail that reaches as fast as the site's most often visited page can resolve; it shrinks
   the estimates of pages with short histories (none while no page of the site was seen changing);
3. the multiplier of the policy for the budget over every page's current estimate and weight
   (:func:`skitter.recrawl.schedule.solve`);
4. the refinement decision of a bounded collection: while the most important URL outside is more
   important than the least important page inside (by ``SWAP_MARGIN``), swap them, at most
   ``swap_limit`` a pass; and a collection above its bound (a crawl stored before ``skitter
   recrawl --collection N``) loses its least important pages until it holds N;
5. the pages whose next visit is due much later than the new allocation would have it (the
   collection grew, a page became important): brought forward, at most ``MAX_EARLIER`` a pass;
6. the collection's estimated freshness now: the mean over its pages of e^(−λ̂·(now − last
   visit)), plain and weighted.

Memory: the pass holds a few numbers per URL (and PageRank the link graph); nothing of it stays in
the crawl process but the answer.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from ..store.db import DB_NAME, connect
from .estimate import CLASSES
from .schedule import frequencies, solve

PRIOR_SAMPLE = 300        # pages a site's prior is fitted on at most
PRIOR_MIN_PAGES = 5       # fewer pages with a visit interval: no site prior (fit_site_prior's rule)
SWAP_MARGIN = 1.1         # an outside URL must be this many times as important as the page it replaces
WEIGHT_CHANGE = 0.05      # weights that moved less than this (relative) are not written back
MAX_EARLIER = 10_000      # pages a pass brings forward at most (their due time far after the new one)
MIN_INTERVAL, MAX_INTERVAL = 1.0, 30 * 86400.0   # as skitter.recrawl.revisit's


def plan(directory: str, policy: str, budget: float, importance: str, cap: int, now: float,
         swap_limit: int = 100, fit_priors: bool = True) -> dict[str, Any]:
    """One planning pass over the crawl in ``directory``; a plain dict (it crosses a pipe).
    ``fit_priors``: fit the site priors again (the costliest step, about 0.1 s a site: the
    caller does it less often than the rest); if not, ``"priors"`` is None."""
    conn = connect(Path(directory) / DB_NAME, readonly=True)
    try:
        conn.execute("BEGIN")   # one snapshot for every read of the pass
        return _plan(conn, policy, budget, importance, cap, now, swap_limit, fit_priors)
    finally:
        conn.close()


def _plan(conn: sqlite3.Connection, policy: str, budget: float, importance: str, cap: int, now: float,
          swap_limit: int, fit_priors: bool = True) -> dict[str, Any]:
    rows = conn.execute("SELECT fp, rate, weight, last_visit, importance, due, url FROM recrawl_pages"
                        " WHERE in_collection = 1").fetchall()
    fps = np.array([r[0] for r in rows], dtype=np.int64)
    rates = np.array([r[1] if r[1] is not None else 0.0 for r in rows], dtype=float)
    stored_w = np.array([r[2] if r[2] is not None else 1.0 for r in rows], dtype=float)
    last = np.array([r[3] if r[3] is not None else now for r in rows], dtype=float)
    out: dict[str, Any] = {"pages": len(rows), "weights": [], "importance": [], "swaps": []}

    # 1. importance
    imp_of: dict[int, float] = {}
    if importance != "none" and len(rows):
        imp_of = _importance(conn, importance)
        imp = np.array([imp_of.get(int(fp), 0.0) for fp in fps])
        floor = imp[imp > 0].min() if (imp > 0).any() else 1.0
        imp = np.maximum(imp, floor)   # a page no link reaches yet (a seed) weighs as the least linked
        weights = imp / imp.mean()
        moved = np.abs(weights - stored_w) > WEIGHT_CHANGE * np.maximum(stored_w, 1e-12)
        out["weights"] = [(float(w), int(fp)) for w, fp in zip(weights[moved], fps[moved])]
        out["importance"] = [(float(v), int(fp)) for v, fp in zip(imp[moved], fps[moved])]
    else:
        weights = np.ones(len(rows))
        moved = np.abs(weights - stored_w) > WEIGHT_CHANGE
        out["weights"] = [(1.0, int(fp)) for fp in fps[moved]]

    # 2. site priors
    out["priors"] = _site_priors(conn) if fit_priors else None

    # 3. the multiplier
    alloc = solve(policy, rates, budget, weights)
    out["allocation"] = {"policy": alloc.policy, "budget": alloc.budget, "pages": alloc.pages,
                         "multiplier": alloc.multiplier, "floor": alloc.floor}

    # 4. refinement
    if cap and importance != "none":
        out["swaps"] = _refine(conn, fps, imp_of, cap, swap_limit)
    # 4b. a collection above its bound (pages a crawl stored before `skitter recrawl --collection N`
    # joined it all at once): the least important pages leave until it holds N
    out["evict"] = _evict(conn, imp_of, len(rows) - cap, {s[-2] for s in out["swaps"]}) if cap and len(rows) > cap else []

    # 5. pages due far too late (a page with no due time yet is not one: it has just joined the
    # collection, and Recrawl.prepare gives it its first revisit at a random share of its interval;
    # brought "earlier" here, every stored page fell due together one interval after its fetch, and
    # a fresh `skitter recrawl` of a large crawl sent nothing for minutes)
    out["earlier"] = []
    if len(rows):
        due = np.array([r[5] if r[5] is not None else np.nan for r in rows], dtype=float)   # nan > x: False
        interval = np.clip(1.0 / np.maximum(frequencies(alloc, rates, weights), 1e-300), MIN_INTERVAL, MAX_INTERVAL)
        wanted = np.maximum(last + interval, now)
        late = np.nonzero(due > wanted + np.maximum(0.5 * interval, 60.0))[0]
        late = late[np.argsort(wanted[late] - due[late])][:MAX_EARLIER]
        gone = {fp for fp, _ in out["evict"]}
        out["earlier"] = [(int(fps[i]), rows[i][6], float(wanted[i])) for i in late if int(fps[i]) not in gone]

    # 6. estimated freshness now
    if len(rows):
        fresh = np.exp(-rates * np.maximum(now - last, 0.0))
        out["freshness"] = float(fresh.mean())
        out["weighted_freshness"] = float(weights @ fresh / weights.sum())
    else:
        out["freshness"] = out["weighted_freshness"] = None
    return out


def _importance(conn: sqlite3.Connection, kind: str) -> dict[int, float]:
    """fp -> importance for every URL the link graph names: in-links (from distinct pages, no
    nofollow, no self-links) or PageRank × the number of URLs (so 1 is an average URL)."""
    src, dst = [], []
    for s, d in conn.execute("SELECT src, dst FROM links WHERE nofollow = 0 AND src != dst"):
        src.append(s)
        dst.append(d)
    pages = [r[0] for r in conn.execute("SELECT fp FROM recrawl_pages")]
    if kind == "backlinks":
        pairs = np.unique(np.array([src, dst], dtype=np.int64).T, axis=0) if src else np.empty((0, 2), np.int64)
        counts: dict[int, float] = {int(fp): 1.0 for fp in pages}
        if len(pairs):
            values, n = np.unique(pairs[:, 1], return_counts=True)
            for fp, c in zip(values, n):
                counts[int(fp)] = 1.0 + float(c)
        return counts
    from ..rank import edges_to_csr, pagerank

    nodes = np.unique(np.concatenate([np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                                      np.array(pages, dtype=np.int64)]))
    if nodes.size == 0:
        return {}
    adj = edges_to_csr(nodes.size, np.searchsorted(nodes, np.array(src, dtype=np.int64)),
                       np.searchsorted(nodes, np.array(dst, dtype=np.int64)))
    pr = pagerank(adj) * nodes.size
    return {int(fp): float(v) for fp, v in zip(nodes, pr)}


def _site_priors(conn: sqlite3.Connection) -> dict[str, tuple[float, float, float]]:
    from .estimate import fit_prior_to_likelihoods

    priors: dict[str, tuple[float, float, float]] = {}
    hosts = [r[0] for r in conn.execute("SELECT host FROM recrawl_pages WHERE n > 0 AND in_collection = 1"
                                        " GROUP BY host HAVING count(*) >= ?", (PRIOR_MIN_PAGES,))]
    for host in hosts:
        blobs = [r[0] for r in conn.execute(
            "SELECT loglik FROM recrawl_pages WHERE host = ? AND n > 0 AND in_collection = 1 AND loglik IS NOT NULL"
            " ORDER BY random() LIMIT ?", (host, PRIOR_SAMPLE))]
        if len(blobs) < PRIOR_MIN_PAGES:
            continue
        loglik = np.stack([np.frombuffer(b, dtype="<f4").astype(float) for b in blobs])
        if loglik.shape[1] != CLASSES.size:
            continue
        # the prior's tail reaches as fast as the site's most often visited page can resolve (over
        # every page of the site, not the sample: a home page is one page among thousands)
        finest = conn.execute("SELECT min((last_visit - first_visit) / n) FROM recrawl_pages WHERE host = ?"
                              " AND n > 0 AND in_collection = 1 AND last_visit > first_visit", (host,)).fetchone()[0]
        try:
            prior = fit_prior_to_likelihoods(loglik, tail_interval=finest)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            continue
        # None: the site's pages cannot tell a prior yet (none seen changing); its pages keep the
        # flat one until a later fit (Recrawl.replan fits at every pass while no site has a prior)
        if prior is not None and math.isfinite(prior.changes) and math.isfinite(prior.seconds):
            priors[host] = (prior.changes, prior.seconds, prior.tail_interval)
    return priors


def _evict(conn: sqlite3.Connection, imp_of: dict[int, float], excess: int, leaving: set[int]) -> list[tuple[int, str]]:
    """(fp, url) of the ``excess`` least important pages of the collection (not those a swap
    takes out already)."""
    live = conn.execute("SELECT fp, url FROM recrawl_pages WHERE in_collection = 1 AND state IN ('live', 'missing')"
                        " AND kind != 'sitemap'").fetchall()
    live = sorted((r for r in live if r[0] not in leaving), key=lambda r: (imp_of.get(r[0], 0.0), r[0]))
    return [(int(fp), url) for fp, url in live[:max(excess, 0)]]


def _refine(conn: sqlite3.Connection, fps: np.ndarray, imp_of: dict[int, float], cap: int,
            swap_limit: int) -> list[tuple]:
    """Seed 000's refinement decision: (outside URL, page to discard) pairs, most important
    outside URL against least important page inside, while the outside one wins by SWAP_MARGIN."""
    outside = conn.execute("SELECT fp, url, depth, parent, priority FROM recrawl_outside").fetchall()
    outside += conn.execute("SELECT fp, url, 1, NULL, 0.0 FROM recrawl_pages WHERE state = 'discarded'").fetchall()
    if not outside:
        return []
    live = conn.execute("SELECT fp, url FROM recrawl_pages WHERE in_collection = 1 AND state IN ('live', 'missing')"
                        " AND kind != 'sitemap'").fetchall()
    inside = sorted(live, key=lambda r: imp_of.get(r[0], 0.0))
    outside.sort(key=lambda r: -imp_of.get(r[0], 0.0))
    swaps: list[tuple] = []
    for out, inn in zip(outside, inside):
        if len(swaps) >= swap_limit or imp_of.get(out[0], 0.0) <= SWAP_MARGIN * imp_of.get(inn[0], 0.0):
            break
        swaps.append((*out, inn[0], inn[1]))
    return swaps
