"""Depth by the shortest path, for a crawl that does not find URLs in breadth-first order.

A URL's depth is the one it was first found at. ``bfs`` finds every URL by a shortest path, but
``dfs`` often finds a page deep first: fetched at ``--max-depth`` its links are cut, and a page
that links to it from depth 2, found later, changes nothing (the URL-seen test). Pages within the
depth limit only through it were then never fetched (docs/strategies.md).

:func:`missing` finds them in what the crawl stored: a breadth-first walk of the stored link graph
(``links`` of the fetched pages, nofollow links left out, and redirects, which keep their source's
depth) from the URLs that have no parent (the seeds), to ``max_depth`` hops, gives each URL its
shortest depth; the URLs it reaches that are not in ``urls`` are the ones the depth limit wrongly
cut. The crawl loop asks for them when its frontier runs dry (``LocalFrontier.refill``) and crawls
them at their shortest depth; what they link to is found at its own shortest depth, or by the
next walk, so the walks stop when one finds nothing. It reads the database only, one indexed query
per 500 pages of a level (``links_src``), and is run once per drained frontier, not per link: the
hot path (the URL-seen test, in memory) is unchanged.
"""

from __future__ import annotations

import sqlite3

from .urlhash import fingerprint

__all__ = ["missing"]

_BATCH = 500


def missing(conn: sqlite3.Connection, max_depth: int) -> list[tuple[str, int, str]]:
    """``(url, depth, parent url)`` of the URLs within ``max_depth`` hops of a seed by the stored
    links that the crawl has not admitted (not in ``urls``), each at its shortest depth, in the
    order the walk reaches them."""
    depth_of: dict[int, int] = {}
    url_of: dict[int, str] = {}
    level: list[int] = []
    for fp, url, depth in conn.execute("SELECT fp, url, depth FROM urls WHERE parent IS NULL ORDER BY seq"):
        if depth == 0 and fp not in depth_of:
            depth_of[fp] = 0
            url_of[fp] = url
            level.append(fp)
    redirects: dict[int, list[tuple[int, str]]] = {}
    for fp, url, parent in conn.execute("SELECT fp, url, parent FROM urls WHERE redirects > 0 AND parent IS NOT NULL"):
        redirects.setdefault(fingerprint(parent), []).append((fp, url))
    found: list[tuple[int, int]] = []   # (fp, parent fp) of URLs reached and not yet known to be admitted
    d = 0
    while level and d < max_depth:
        # a redirect's target has its source's depth: the level grows with them before it is expanded
        i = 0
        while i < len(level):
            for fp, url in redirects.get(level[i], ()):
                if fp not in depth_of:
                    depth_of[fp] = d
                    url_of[fp] = url
                    level.append(fp)
            i += 1
        nxt: list[int] = []
        for k in range(0, len(level), _BATCH):
            srcs = level[k:k + _BATCH]
            rows = conn.execute(f"SELECT src, dst, dst_url FROM links WHERE src IN ({','.join('?' * len(srcs))})"
                                " AND nofollow = 0 ORDER BY rowid", srcs).fetchall()
            for src, dst, dst_url in rows:
                if dst not in depth_of:
                    depth_of[dst] = d + 1
                    url_of[dst] = dst_url
                    nxt.append(dst)
                    found.append((dst, src))
        level = nxt
        d += 1
    out: list[tuple[str, int, str]] = []
    for k in range(0, len(found), _BATCH):
        part = found[k:k + _BATCH]
        fps = [f for f, _ in part]
        have = {row[0] for row in conn.execute(f"SELECT fp FROM urls WHERE fp IN ({','.join('?' * len(fps))})", fps)}
        out.extend((url_of[f], depth_of[f], url_of[p]) for f, p in part if f not in have)
    return out
