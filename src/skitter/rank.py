"""Link analysis over the crawl graph: PageRank and HITS (seeds 000, 004), scipy.sparse.

The graph (:func:`load_graph`) comes from ``crawl.db``: its nodes are the URLs the crawler tried
(fetch records with a ``fetch_order``), its edges the ``links`` rows whose both ends are nodes.
A link to a redirect is moved to where the redirect leads (up to ``MAX_HOPS`` hops) if that is a
node too; ``rel=nofollow`` links (and every link of a meta-robots nofollow page) pass no rank;
self-links and repeated links (the same pair twice) are dropped, so the graph is a simple
directed graph. With ``weighted=True`` each edge carries seed 004's link attributes as a weight,
``visibility * position / distance`` (bold/italic, high on the page and same-host links count
more; a repeated pair keeps its heaviest link).

PageRank (:func:`pagerank`): damping 0.85, the mass of dangling pages (no out-links) spread
uniformly over all pages, uniform teleport, power iteration until the L1 change is < 1e-10.
HITS (:func:`hits`): hubs and authorities by power iteration on A·Aᵀ / Aᵀ·A from the uniform
vector, each normalised to sum 1 (networkx's convention).

:func:`rank_crawl` stores the results per page (``fetches.pagerank``, and ``hub``/``authority``
columns that it adds to ``fetches`` when the database has none yet) and ``skitter rank DIR``
(:mod:`skitter.cli_rank`) prints the top pages.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .store.db import CrawlDB

DAMPING = 0.85
TOL = 1e-10
MAX_ITER = 1000
MAX_HOPS = 5

__all__ = ["Graph", "DAMPING", "TOL", "edges_to_csr", "hits", "load_graph", "pagerank", "rank_crawl",
           "ensure_columns", "top_pages"]


# ----------------------------------------------------------------------------------------------
# the algorithms (pure: arrays in, arrays out)


def edges_to_csr(n: int, src, dst, weight=None) -> sp.csr_matrix:
    """The n×n adjacency matrix (row = source) of an edge list; repeated pairs are merged (the
    heaviest weight kept), self-loops dropped."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.ones(len(src), dtype=np.float64) if weight is None else np.asarray(weight, dtype=np.float64)
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    if weight is None:   # unweighted: COO -> CSR sums repeated pairs; every edge then weighs 1
        adj = sp.csr_matrix((w, (src, dst)), shape=(n, n))
        adj.data[:] = 1.0
        return adj
    if len(src):
        # merge repeated pairs, keeping the heaviest: sort by (pair, weight), keep each pair's last
        key = src * n + dst
        order = np.lexsort((w, key))
        key, w = key[order], w[order]
        last = np.ones(len(key), dtype=bool)
        last[:-1] = key[1:] != key[:-1]
        key, w = key[last], w[last]
        src, dst = key // n, key % n
    return sp.csr_matrix((w, (src, dst)), shape=(n, n))


def pagerank(adj: sp.spmatrix, *, damping: float = DAMPING, tol: float = TOL,
             max_iter: int = MAX_ITER) -> np.ndarray:
    """PageRank of each node of an adjacency matrix (row i → column j, weights used as given).

    x' = d·(Pᵀx + (dangling mass)/n) + (1−d)/n, with P the row-normalised matrix; iterates until
    ‖x' − x‖₁ < tol. Returns a vector that sums to 1 (empty for an empty graph).
    """
    n = adj.shape[0]
    if n == 0:
        return np.zeros(0)
    adj = sp.csr_matrix(adj, dtype=np.float64)
    out = np.asarray(adj.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.zeros(n)
    inv[~dangling] = 1.0 / out[~dangling]
    # x' = Aᵀ (x / out-degree): Aᵀ is a CSC view of A (no copy); one pass over the edges per step
    at = adj.T
    x = np.full(n, 1.0 / n)
    teleport = (1.0 - damping) / n
    for _ in range(max_iter):
        nxt = at @ (x * inv)
        nxt *= damping
        nxt += damping * x[dangling].sum() / n + teleport
        err = np.abs(nxt - x).sum()
        x = nxt
        if err < tol:
            break
    return x / x.sum()


def hits(adj: sp.spmatrix, *, tol: float = TOL, max_iter: int = MAX_ITER) -> tuple[np.ndarray, np.ndarray]:
    """(hubs, authorities) of an adjacency matrix, each summing to 1.

    Power iteration from the uniform vector: a ← Aᵀ(A a), normalised by its maximum, until the
    L1 change is < tol; then h = A a. A graph with no edges gets uniform scores.
    """
    n = adj.shape[0]
    if n == 0:
        return np.zeros(0), np.zeros(0)
    a_mat = sp.csr_matrix(adj, dtype=np.float64)
    if a_mat.nnz == 0:
        u = np.full(n, 1.0 / n)
        return u, u.copy()
    at = a_mat.T   # a CSC view: no copy
    a = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        nxt = at @ (a_mat @ a)
        m = nxt.max()
        if m <= 0:
            break
        nxt /= m
        err = np.abs(nxt - a).sum()
        a = nxt
        if err < tol:
            break
    h = a_mat @ a
    hs, as_ = h.sum(), a.sum()
    return (h / hs if hs > 0 else h), (a / as_ if as_ > 0 else a)


# ----------------------------------------------------------------------------------------------
# the crawl graph


@dataclass
class Graph:
    fps: np.ndarray                      # node i's URL fingerprint
    urls: list[str]
    adj: sp.csr_matrix
    stats: dict = field(default_factory=dict)


def load_graph(db: CrawlDB, *, weighted: bool = False) -> Graph:
    """The crawl graph of a crawl database (see the module docstring)."""
    conn = db.conn
    rows = conn.execute("SELECT fp, url, status, final_url FROM fetches WHERE fetch_order IS NOT NULL"
                        " ORDER BY fetch_order").fetchall()
    fps = np.array([r[0] for r in rows], dtype=np.int64)
    urls = [r[1] for r in rows]
    index = {int(fp): i for i, fp in enumerate(fps)}
    by_url = {u: i for i, u in enumerate(urls)}
    # a redirect (3xx with a final_url) stands for where it leads
    target = {}
    for i, (_, _, status, final) in enumerate(rows):
        if status is not None and 300 <= status < 400 and final and final != urls[i]:
            target[i] = final

    def resolve(i: int) -> int | None:
        for _ in range(MAX_HOPS):
            t = target.get(i)
            if t is None:
                return i
            j = by_url.get(t)
            if j is None or j == i:
                return None
            i = j
        return None

    moved = {i: resolve(i) for i in target}
    src, dst, wts = [], [], []
    links = 0
    cols = "src, dst, visibility, position, distance" if weighted else "src, dst"
    for row in conn.execute(f"SELECT {cols} FROM links WHERE nofollow = 0"):
        links += 1
        s = index.get(row[0])
        d = index.get(row[1])
        if s is None or d is None:
            continue
        if d in moved:
            d = moved[d]
            if d is None:
                continue
        src.append(s)
        dst.append(d)
        if weighted:
            vis, pos, dist = (row[2] or 1), (row[3] or 1), (row[4] or 1)
            wts.append(vis * pos / dist)
    adj = edges_to_csr(len(urls), src, dst, wts if weighted else None)
    return Graph(fps=fps, urls=urls, adj=adj,
                 stats={"nodes": len(urls), "links": links, "edges": int(adj.nnz)})


def ensure_columns(db: CrawlDB) -> None:
    """Add ``hub`` and ``authority`` to ``fetches`` if the schema (store/db.py) has none yet."""
    have = {r[1] for r in db.conn.execute("PRAGMA table_info(fetches)")}
    for col in ("pagerank", "hub", "authority"):
        if col not in have:
            db.conn.execute(f"ALTER TABLE fetches ADD COLUMN {col} REAL")


def rank_crawl(directory: Path, *, weighted: bool = False) -> dict:
    """Compute PageRank and HITS over a crawl directory's graph and store them per page."""
    t0 = time.perf_counter()
    db = CrawlDB(Path(directory), create=False)
    try:
        graph = load_graph(db, weighted=weighted)
        t1 = time.perf_counter()
        pr = pagerank(graph.adj)
        hub, auth = hits(graph.adj)
        t2 = time.perf_counter()
        db.begin()
        ensure_columns(db)
        db.conn.executemany("UPDATE fetches SET pagerank = ?, hub = ?, authority = ? WHERE fp = ?",
                            zip(pr.tolist(), hub.tolist(), auth.tolist(), graph.fps.tolist()))
        db.set_meta("rank", {"weighted": weighted, "nodes": graph.stats["nodes"],
                             "edges": graph.stats["edges"]})
        db.commit()
    finally:
        db.close()
    return {**graph.stats, "weighted": weighted, "load_seconds": t1 - t0, "rank_seconds": t2 - t1,
            "total_seconds": time.perf_counter() - t0, "index": _into_index(Path(directory))}


def _into_index(directory: Path) -> str | None:
    """The new PageRank into the search index, if the crawl has one (search ranks by it at once):
    None, or why the index could not take it (a line for the user)."""
    from .index.indexer import IndexMissingError, Indexer, index_path

    if not index_path(directory).exists():
        return None
    try:
        Indexer(directory).refresh_marks()
    except IndexMissingError as exc:
        return str(exc)
    except sqlite3.Error as exc:
        return f"the search index {index_path(directory)} did not take the new PageRank ({exc}): " \
               f"`skitter index {directory}` makes it again"
    return None


def top_pages(directory: Path, *, by: str = "pagerank", limit: int = 20) -> list[dict]:
    """The stored ranks of the best ``limit`` pages by ``by`` (pagerank, authority or hub)."""
    if by not in ("pagerank", "authority", "hub"):
        raise ValueError(f"cannot order by {by!r}")
    db = CrawlDB(Path(directory), readonly=True)
    try:
        have = {r[1] for r in db.conn.execute("PRAGMA table_info(fetches)")}
        if by not in have:
            return []
        extra = ", ".join(c if c in have else f"NULL AS {c}" for c in ("hub", "authority"))
        rows = list(db.query(f"SELECT url, title, pagerank, {extra} FROM fetches WHERE {by} IS NOT NULL"
                             f" ORDER BY {by} DESC, fetch_order LIMIT ?", (limit,)))
        return [dict(r) for r in rows]
    finally:
        db.conn.close()
