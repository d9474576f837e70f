"""Ground-truth labels of the demo web for ``skitter eval-crawl``: one JSON line per page,
``{"url", "topic", "pagerank", "reachable"}``.

``topic`` is the name of the page's topic (``DemoWeb.topic_of``) or null; ``pagerank`` is the
PageRank (:func:`skitter.rank.pagerank`, damping 0.85) of the whole demo web graph: every page of
``DemoWeb.pages()`` is a node, every followable link of ``DemoWeb.outlinks`` between two pages is an
edge (a link to a redirect counts as a link to where it leads; nofollow links, self-links, links to
404s and spider traps are left out), exactly how :func:`skitter.rank.load_graph` builds a crawl's
graph. So a crawl of the demo web can be compared with the ideal order. ``reachable`` is false for
the pages a polite crawl never fetches (disallowed by robots.txt, or linked only by nofollow
links): they are left out of topic recall.

    python -m skitter.demo.labels --from-crawl DIR -o labels.jsonl [--pages 3000 --hosts 8]
    python -m skitter.demo.labels --base-url http://127.0.0.2:8000 ... -o labels.jsonl

``--from-crawl`` reads the base URLs from the crawl's seeds (the demo web's home pages).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from collections.abc import Iterator

from ..demo.web import DemoConfig, DemoWeb
from ..rank import edges_to_csr, pagerank
from ..urls import URLError, canonicalize


def _canon(url: str) -> str:
    try:
        return canonicalize(url)
    except URLError:
        return url


def _followable_links(web: DemoWeb, url: str) -> list[str]:
    """The distinct targets of ``url``'s links that at least one followable link points to."""
    split, links_of = getattr(web, "_split", None), getattr(web, "_links", None)
    if split is not None and links_of is not None:   # fast path: one link computation per page
        try:
            s = split(url)
            links = links_of(*s) if s else None
            if links is None:
                return []
            if links.all_nofollow:
                return []
            return list(dict.fromkeys(l.url for l in links.flat() if not l.nofollow))
        except (AttributeError, TypeError):
            pass
    return [v for v in dict.fromkeys(web.outlinks(url)) if not web.is_nofollow_link(url, v)]


def web_graph(web: DemoWeb) -> tuple[list[str], list[int], list[int]]:
    """(node URLs, edge sources, edge targets) of the demo web's followable link graph."""
    urls = web.pages()
    index = {u: i for i, u in enumerate(urls)}
    src: list[int] = []
    dst: list[int] = []
    for i, u in enumerate(urls):
        for v in _followable_links(web, u):
            for _ in range(6):   # a redirect stands for where it leads
                t = web.redirect_target(v)
                if t is None:
                    break
                v = t
            j = index.get(v)
            if j is not None and j != i:
                src.append(i)
                dst.append(j)
    return urls, src, dst


def labels(web: DemoWeb) -> Iterator[dict]:
    """One label per demo page: url (canonical), topic name (or None), ground-truth PageRank."""
    urls, src, dst = web_graph(web)
    pr = pagerank(edges_to_csr(len(urls), src, dst))
    reachable = web.reachable()
    for u, p in zip(urls, pr.tolist()):
        t = web.topic_of(u)
        yield {"url": _canon(u), "topic": web.topic_names[t] if t is not None else None, "pagerank": p,
               "reachable": u in reachable}


def write_labels(web: DemoWeb, path: Path | str) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for rec in labels(web):
            f.write(json.dumps(rec) + "\n")
            n += 1
    return n


def _base_urls_of_crawl(directory: Path) -> list[str]:
    from ..store.db import CrawlDB

    db = CrawlDB(directory, readonly=True)
    try:
        seeds = db.config().get("seeds", [])
    finally:
        db.conn.close()
    return [s.rstrip("/") for s in seeds]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m skitter.demo.labels", description=__doc__.split("\n")[0])
    p.add_argument("--from-crawl", type=Path, help="take the base URLs from this crawl's seeds")
    p.add_argument("--base-url", action="append", default=[], help="a demo host's base URL (repeat per host)")
    p.add_argument("--pages", type=int, default=DemoConfig.pages)
    p.add_argument("--hosts", type=int, default=None, help="default: the number of base URLs")
    p.add_argument("--seed", type=int, default=DemoConfig.seed)
    p.add_argument("--topics", type=int, default=DemoConfig.topics)
    p.add_argument("-o", "--output", type=Path, required=True)
    a = p.parse_args(argv)
    bases = list(a.base_url)
    if a.from_crawl is not None:
        bases += _base_urls_of_crawl(a.from_crawl)
    if not bases:
        p.error("give --from-crawl DIR or --base-url URL (one per host)")
    cfg = DemoConfig(pages=a.pages, hosts=a.hosts or len(bases), seed=a.seed, topics=a.topics)
    n = write_labels(DemoWeb(cfg, bases), a.output)
    print(f"{n} labels written to {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
