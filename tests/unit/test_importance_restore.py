"""``restore(seeds, pages)`` of the importance scorers rebuilds, from what the crawl store replays
(``CrawlStore.replay_seeds`` / ``replay_pages``), the state the
live scorer had: random pages, links with attributes, nofollow links and pages, self-links, repeated
links, pages whose links were not extracted (no ``pages`` row), seeds."""

from __future__ import annotations

import random

import pytest

from skitter.models import Link, Page
from skitter.store.crawlstore import CrawlStore
from skitter.strategies import ParentContext, make_scorer
from skitter.urls import fingerprint


def _pages(rng: random.Random, n: int = 60):
    urls = [f"http://h{i % 3}.test/p{i}" for i in range(n)]
    out = []
    for u in urls:
        links = [Link(url=rng.choice(urls + [u]), visibility=rng.randint(1, 3), position=rng.randint(1, 3),
                      distance=rng.choice((1, 5)), nofollow=rng.random() < 0.1) for _ in range(rng.randint(0, 12))]
        out.append((u, Page(links=links, nofollow=rng.random() < 0.05), rng.random() < 0.9))
    return out


class _Cfg:
    def __init__(self, weighted: bool) -> None:
        self.link_weights = weighted


@pytest.mark.parametrize("name", ["backlinks", "pagerank"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_restore_replays_the_stored_crawl(tmp_path, name, weighted, seed):
    rng = random.Random(seed)
    pages = _pages(rng)
    seeds = [pages[0][0], pages[1][0]]
    live = make_scorer(name, _Cfg(weighted))
    for s in seeds:
        live.seed_priority(s)
    store = CrawlStore.open(tmp_path, {"seeds": seeds}, software="test")
    conn = store.db.conn
    for i, s in enumerate(seeds):
        conn.execute("INSERT INTO urls (fp, url, host, depth, parent, priority, seq, state) VALUES (?, ?, ?, 0, NULL, 1, ?, 2)",
                     (fingerprint(s), s, "h", i))
    order = 0
    for u, page, parsed in pages:
        order += 1
        fp = fingerprint(u)
        conn.execute("INSERT INTO fetches (fp, fetch_order, url, status, nofollow) VALUES (?, ?, ?, 200, ?)",
                     (fp, order, u, int(page.nofollow)))
        if not parsed:   # a duplicate or a non-HTML response: no page, no scorer call
            continue
        r = live.relevance(u, page)
        live.on_page(ParentContext(url=u, page=page, depth=1, priority=0.0, relevance=r), page.links)
        conn.execute("INSERT INTO pages (fp, url) VALUES (?, ?)", (fp, u))
        conn.executemany(
            "INSERT INTO links (src, dst, dst_url, anchor, visibility, position, distance, nofollow)"
            " VALUES (?, ?, ?, '', ?, ?, ?, ?)",
            [(fp, fingerprint(l.url), l.url, l.visibility, l.position, l.distance, int(l.nofollow or page.nofollow))
             for l in page.links])
    conn.commit()
    restored = make_scorer(name, _Cfg(weighted))
    assert restored.restore(store.replay_seeds(), store.replay_pages()) == sum(1 for p in pages if p[2])
    assert restored.fetched == live.fetched
    attr = "cash" if name == "pagerank" else "inlinks"
    a, b = getattr(restored, attr), getattr(live, attr)
    assert a.keys() == b.keys() and a
    assert all(abs(a[k] - b[k]) < 1e-12 for k in a)
    store.close()
