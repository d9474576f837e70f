"""Depth by the shortest path, for a crawl that does not find URLs in breadth-first order.

A URL's depth is the one it was first found at. ``dfs`` often finds a page deep first: fetched at
``--max-depth`` its links are cut, and a page that links to it from depth 2, found later, changes
nothing (the URL-seen test). Pages within the depth limit only through it were then never fetched
(docs/strategies.md). ``bfs`` finds every URL by a shortest path only one fetch at a time: with
several hosts in flight a fast host's deep page may find a URL before a slow host's shallow one.

:func:`missing` finds them in what the crawl stored: a breadth-first walk from the seeds (the URLs
without a parent at depth 0), to ``max_depth`` hops, over

- the ``links`` of the fetched pages, nofollow links left out (a page-level nofollow is stored on
  every link of the page);
- redirects (a fetch whose ``final_url`` is another URL), whose target keeps its source's depth;
- an exact duplicate that has no links of its own stored (the crawl did not follow them: they
  lead where its original's do) has its original's links, at its own depth.

It gives each URL its shortest depth; the URLs it reaches that are not in ``urls`` and that
``keep`` accepts (the link filter's URL-only checks) are the ones the depth limit wrongly cut. The
crawl loop asks for them when its frontier runs dry (``LocalFrontier.refill``) and crawls them at
that depth; what they link to is found at its own shortest depth, or by the next walk, so the
walks stop when one admits nothing. It reads the database only (``links_src``: one query per 500
pages of a level) and only when the frontier is dry: the hot path, the URL-seen test, is unchanged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .urlhash import fingerprint

__all__ = ["missing"]

_BATCH = 500


def missing(conn: sqlite3.Connection, max_depth: int,
            keep: Callable[[str], bool] = lambda url: True) -> list[tuple[str, int, str | None]]:
    """``(url, depth, parent url)`` of the URLs within ``max_depth`` hops of a seed by the stored
    links that the crawl has not admitted (not in ``urls``) and ``keep`` accepts, each at its
    shortest depth, in the order the walk reaches them. Memory: a set of the fingerprints reached
    (about 80 bytes each) and one level at a time; URL strings only of the URLs it returns."""
    reached: set[int] = set()
    level: list[int] = []
    for (fp,) in conn.execute("SELECT fp FROM urls WHERE parent IS NULL AND depth = 0 ORDER BY seq"):
        if fp not in reached:
            reached.add(fp)
            level.append(fp)
    redirects: dict[int, list[int]] = {}   # a redirect's source -> its target (same depth)
    for fp, final_url in conn.execute("SELECT fp, final_url FROM fetches WHERE final_url IS NOT NULL"
                                      " AND final_url != url AND error IS NULL"):
        redirects.setdefault(fp, []).append(fingerprint(final_url))
    original = {fp: fingerprint(dup) for fp, dup in conn.execute(
        "SELECT fp, duplicate_of FROM fetches WHERE duplicate_of IS NOT NULL")}
    out: list[tuple[str, int, str | None]] = []
    d = 0
    while level and d < max_depth:
        i = 0
        while i < len(level):   # a redirect's target is on its source's level
            for fp in redirects.get(level[i], ()):
                if fp not in reached:
                    reached.add(fp)
                    level.append(fp)
            i += 1
        nxt: list[int] = []
        for k in range(0, len(level), _BATCH):
            srcs = level[k:k + _BATCH]
            rows = _links(conn, srcs)
            linked = {src for src, _, _ in rows}
            dups = [original[fp] for fp in srcs if fp in original and fp not in linked]
            if dups:   # an exact duplicate whose links the crawl did not follow: its original's
                rows += _links(conn, dups)
            new: list[tuple[int, int, str]] = []   # (dst, src, dst_url) first reached here
            for src, dst, dst_url in rows:
                if dst not in reached:
                    reached.add(dst)
                    nxt.append(dst)
                    if keep(dst_url):
                        new.append((dst, src, dst_url))
            out.extend(_not_admitted(conn, new, d + 1))
        level = nxt
        d += 1
    return out


def _links(conn: sqlite3.Connection, srcs: list[int]) -> list[tuple[int, int, str]]:
    return conn.execute(f"SELECT src, dst, dst_url FROM links WHERE src IN ({','.join('?' * len(srcs))})"
                        " AND nofollow = 0 ORDER BY rowid", srcs).fetchall()


def _not_admitted(conn: sqlite3.Connection, new: list[tuple[int, int, str]],
                  depth: int) -> list[tuple[str, int, str | None]]:
    """Those of ``new`` that are not in ``urls``, as ``(url, depth, parent url)``."""
    out: list[tuple[str, int, str | None]] = []
    for k in range(0, len(new), _BATCH):
        part = new[k:k + _BATCH]
        marks = ",".join("?" * len(part))
        have = {row[0] for row in conn.execute(f"SELECT fp FROM urls WHERE fp IN ({marks})", [p[0] for p in part])}
        todo = [p for p in part if p[0] not in have]
        if todo:
            srcs = sorted({p[1] for p in todo})
            url_of = dict(conn.execute(f"SELECT fp, url FROM urls WHERE fp IN ({','.join('?' * len(srcs))})", srcs))
            out.extend((url, depth, url_of.get(src)) for _, src, url in todo)
    return out
