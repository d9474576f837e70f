"""skitter.depthrepair.missing on a crawl database written by hand: the URLs a depth-first crawl
cut at --max-depth that a shorter path of the stored links reaches (docs/strategies.md)."""

from __future__ import annotations

import pytest

from skitter.depthrepair import missing
from skitter.store.db import CrawlDB
from skitter.urlhash import fingerprint

H = "http://h.test/"


class Crawl:
    """A crawl.db with the rows a crawl leaves: urls (admitted, at the depth first found), fetches
    (redirects, duplicates) and links (of the fetched pages)."""

    def __init__(self, tmp_path) -> None:
        self.db = CrawlDB(tmp_path)
        self.conn = self.db.conn
        self.seq = 0

    def url(self, name: str, depth: int, parent: str | None = None, *, final: str | None = None,
            duplicate_of: str | None = None) -> None:
        self.seq += 1
        self.conn.execute("INSERT INTO urls (fp, url, host, depth, parent, priority, seq, state)"
                          " VALUES (?, ?, 'h.test', ?, ?, ?, ?, 2)",
                          (fingerprint(H + name), H + name, depth, parent and H + parent, float(depth), self.seq))
        self.conn.execute("INSERT INTO fetches (fp, url, final_url, depth, duplicate_of) VALUES (?, ?, ?, ?, ?)",
                          (fingerprint(H + name), H + name, final and H + final, depth,
                           duplicate_of and H + duplicate_of))

    def links(self, src: str, *dsts: str, nofollow: bool = False) -> None:
        self.conn.executemany("INSERT INTO links (src, dst, dst_url, nofollow) VALUES (?, ?, ?, ?)",
                              [(fingerprint(H + src), fingerprint(H + d), H + d, int(nofollow)) for d in dsts])


@pytest.fixture
def crawl(tmp_path):
    c = Crawl(tmp_path)
    yield c
    c.db.close()


def test_a_page_found_deep_first_has_its_links_walked_at_its_shortest_depth(crawl):
    """s -> b -> c -> t (found at 3 first), s -> e -> t: t is at depth 2, so x (its link, cut at 4
    under --max-depth 3) is at 3. What the crawl admitted is not returned again."""
    crawl.url("s", 0)
    crawl.url("b", 1, "s")
    crawl.url("e", 1, "s")
    crawl.url("c", 2, "b")
    crawl.url("t", 3, "c")
    crawl.links("s", "b", "e")
    crawl.links("b", "c")
    crawl.links("c", "t")
    crawl.links("e", "t")
    crawl.links("t", "x", "c")
    assert missing(crawl.conn, 3) == [(H + "x", 3, H + "t")]
    assert missing(crawl.conn, 2) == []          # x is at 3: beyond
    assert missing(crawl.conn, 3, keep=lambda url: not url.endswith("x")) == []


def test_a_redirect_to_a_url_found_before_keeps_its_sources_depth(crawl):
    """s -> b -> c -> t (found at 3 first); s -> a, and a redirects to t: t is at depth 1, x at 2.
    The redirect left no row of its own in urls (t was known): the walk reads the fetch's
    final_url."""
    crawl.url("s", 0)
    crawl.url("b", 1, "s")
    crawl.url("a", 1, "s", final="t")
    crawl.url("c", 2, "b")
    crawl.url("t", 3, "c")
    crawl.links("s", "b", "a")
    crawl.links("b", "c")
    crawl.links("c", "t")
    crawl.links("t", "x")
    assert missing(crawl.conn, 3) == [(H + "x", 2, H + "t")]


def test_an_exact_duplicate_has_its_originals_links(crawl):
    """s -> b -> c -> o (the original, found at 3 first); s -> d, a copy of o whose links the crawl
    did not follow (none stored): d's links are o's, at d's depth, so y is at 2."""
    crawl.url("s", 0)
    crawl.url("b", 1, "s")
    crawl.url("d", 1, "s", duplicate_of="o")
    crawl.url("c", 2, "b")
    crawl.url("o", 3, "c")
    crawl.links("s", "b", "d")
    crawl.links("b", "c")
    crawl.links("c", "o")
    crawl.links("o", "y")
    assert missing(crawl.conn, 3) == [(H + "y", 2, H + "o")]


def test_nofollow_links_are_not_walked(crawl):
    crawl.url("s", 0)
    crawl.links("s", "n", nofollow=True)
    crawl.links("n", "z")
    assert missing(crawl.conn, 5) == []
