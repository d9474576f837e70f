"""Link analysis (skitter.rank): PageRank and HITS against networkx (the reference, to 1e-6) on
random graphs with dangling nodes, the crawl graph read from crawl.db, the stored ranks, the
``rank`` and ``eval-crawl`` commands, the evaluation metrics and the demo web's labels."""

from __future__ import annotations

import json
import random

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.eval.crawl import Labels, evaluate
from skitter.eval.files import load_labels
from skitter.rank import edges_to_csr, hits, load_graph, pagerank, rank_crawl, top_pages
from skitter.store.db import CrawlDB
from skitter.urls import fingerprint

TOL = 1e-6


def random_graph(seed: int, n: int, m: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    return [rng.randrange(n) for _ in range(m)], [rng.randrange(n) for _ in range(m)]


def nx_graph(n: int, src, dst, weights=None) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for i, (s, d) in enumerate(zip(src, dst)):
        if s == d:
            continue
        w = 1.0 if weights is None else weights[i]
        if not g.has_edge(s, d) or g[s][d]["weight"] < w:
            g.add_edge(s, d, weight=w)
    return g


# -- PageRank ------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 80), st.floats(0.0, 4.0), st.integers(0, 10_000))
def test_pagerank_matches_networkx(n, density, seed):
    src, dst = random_graph(seed, n, int(density * n))
    pr = pagerank(edges_to_csr(n, src, dst))
    ref = nx.pagerank(nx_graph(n, src, dst), alpha=0.85, tol=1e-13, max_iter=10_000)
    assert pr.shape == (n,)
    assert abs(pr.sum() - 1.0) < 1e-9
    assert max(abs(pr[i] - ref[i]) for i in range(n)) < TOL


def test_pagerank_with_many_dangling_pages_and_weights():
    n = 300
    src, dst = random_graph(1, n, 600)
    # a third of the pages have no out-links at all
    keep = [i for i, s in enumerate(src) if s % 3]
    src, dst = [src[i] for i in keep], [dst[i] for i in keep]
    rng = random.Random(2)
    w = [rng.choice([0.2, 1.0, 2.0, 9.0]) for _ in src]
    g = nx_graph(n, src, dst, w)
    assert sum(1 for v in g if g.out_degree(v) == 0) >= n // 3
    pr = pagerank(edges_to_csr(n, src, dst, w))
    ref = nx.pagerank(g, alpha=0.85, tol=1e-13, max_iter=10_000, weight="weight")
    assert max(abs(pr[i] - ref[i]) for i in range(n)) < TOL


def test_pagerank_small_cases():
    assert pagerank(edges_to_csr(0, [], [])).shape == (0,)
    assert pagerank(edges_to_csr(1, [], [])).tolist() == [1.0]
    # no edges at all: uniform
    assert np.allclose(pagerank(edges_to_csr(4, [], [])), 0.25)
    # a self-loop is dropped: the same as no edge
    assert np.allclose(pagerank(edges_to_csr(2, [0], [0])), 0.5)
    # a star: the centre wins
    pr = pagerank(edges_to_csr(5, [1, 2, 3, 4], [0, 0, 0, 0]))
    assert pr.argmax() == 0 and np.allclose(pr[1:], pr[1])


def test_edges_to_csr_merges_repeats_keeping_the_heaviest():
    a = edges_to_csr(3, [0, 0, 0, 1, 2], [1, 1, 1, 1, 0], [1.0, 5.0, 2.0, 3.0, 1.0])
    assert a.nnz == 2 and a[0, 1] == 5.0 and a[2, 0] == 1.0 and a[1, 1] == 0


# -- HITS ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_hits_matches_networkx(seed):
    rng = random.Random(seed)
    n = rng.randint(10, 120)
    src, dst = random_graph(seed, n, rng.randint(n, 4 * n))
    a = edges_to_csr(n, src, dst)
    # the principal singular value must be simple, or HITS has no unique answer to compare
    sv = np.linalg.svd(a.toarray(), compute_uv=False)
    assert sv[0] - sv[1] > 1e-3 * sv[0]
    h, au = hits(a)
    rh, ra = nx.hits(nx_graph(n, src, dst), max_iter=100_000, tol=1e-12)
    assert abs(h.sum() - 1) < 1e-9 and abs(au.sum() - 1) < 1e-9
    assert max(abs(h[i] - rh[i]) for i in range(n)) < TOL
    assert max(abs(au[i] - ra[i]) for i in range(n)) < TOL


def test_hits_small_cases():
    h, a = hits(edges_to_csr(0, [], []))
    assert h.shape == a.shape == (0,)
    h, a = hits(edges_to_csr(3, [], []))
    assert np.allclose(h, 1 / 3) and np.allclose(a, 1 / 3)
    h, a = hits(edges_to_csr(4, [0, 0, 0], [1, 2, 3]))     # one hub pointing at three authorities
    assert h.argmax() == 0 and h[0] == pytest.approx(1.0)
    assert a[0] == 0 and np.allclose(a[1:], 1 / 3)


# -- the crawl graph in crawl.db -------------------------------------------------------------------

def fetch(db: CrawlDB, url: str, order: int | None, status: int | None = 200, final: str | None = None,
          title: str = "") -> None:
    db.conn.execute("INSERT INTO fetches (fp, fetch_order, url, final_url, status, title) VALUES (?, ?, ?, ?, ?, ?)",
                    (fingerprint(url), order, url, final or url, status, title))


def link(db: CrawlDB, src: str, dst: str, nofollow: int = 0, vis: int = 1, pos: int = 3, dist: int = 1) -> None:
    db.conn.execute("INSERT INTO links (src, dst, dst_url, anchor, visibility, position, distance, nofollow)"
                    " VALUES (?, ?, ?, '', ?, ?, ?, ?)", (fingerprint(src), fingerprint(dst), dst, vis, pos, dist, nofollow))


U = [f"http://a.test/{c}" for c in "abcdefg"]


def small_crawl(directory) -> None:
    a, b, c, d, e, old, never = U
    db = CrawlDB(directory)
    db.begin()
    for i, u in enumerate((a, b, c, d, e), 1):
        fetch(db, u, i, title=u[-1].upper())
    fetch(db, old, 6, status=301, final=c)        # a redirect to c
    fetch(db, never, None, status=None)           # decided without a request (robots): no node
    link(db, a, b)
    link(db, a, b)                                # repeated: one edge
    link(db, a, a)                                # self-link: dropped
    link(db, a, old)                              # through the redirect: a -> c
    link(db, b, c, vis=3, pos=3, dist=1)
    link(db, b, d, nofollow=1)                    # nofollow: no edge
    link(db, c, a, dist=5)
    link(db, d, "http://a.test/unfetched")        # to a page never fetched: no edge
    link(db, e, never)                            # to a URL never requested: no edge
    link(db, d, c)
    db.commit()
    db.close()


def test_load_graph_keeps_edges_between_fetched_pages(tmp_path):
    small_crawl(tmp_path)
    db = CrawlDB(tmp_path)
    g = load_graph(db)
    idx = {u: i for i, u in enumerate(g.urls)}
    a, b, c, d, e, old, _ = U
    assert set(g.urls) == {a, b, c, d, e, old}
    edges = {(g.urls[i], g.urls[j]) for i, j in zip(*g.adj.nonzero())}
    assert edges == {(a, b), (a, c), (b, c), (c, a), (d, c)}
    assert g.stats["edges"] == 5 and g.stats["nodes"] == 6
    w = load_graph(db, weighted=True)
    assert w.adj[idx[b], idx[c]] == 9.0 and w.adj[idx[c], idx[a]] == pytest.approx(3 / 5)
    db.close()


def test_rank_crawl_stores_pagerank_hub_and_authority(tmp_path):
    small_crawl(tmp_path)
    info = rank_crawl(tmp_path)
    assert info["nodes"] == 6 and info["edges"] == 5
    db = CrawlDB(tmp_path, readonly=True)
    cols = {r[1] for r in db.conn.execute("PRAGMA table_info(fetches)")}
    assert {"pagerank", "hub", "authority"} <= cols
    rows = {r[0]: r[1:] for r in db.conn.execute("SELECT url, pagerank, hub, authority FROM fetches")}
    db.conn.close()
    assert rows[U[6]] == (None, None, None)          # not a node
    assert sum(r[0] for u, r in rows.items() if u != U[6]) == pytest.approx(1.0)
    g = nx.DiGraph()
    g.add_nodes_from(U[:6])
    g.add_edges_from([(U[0], U[1]), (U[0], U[2]), (U[1], U[2]), (U[2], U[0]), (U[3], U[2])])
    ref = nx.pagerank(g, tol=1e-13, max_iter=10_000)
    for u in U[:6]:
        assert rows[u][0] == pytest.approx(ref[u], abs=TOL)
    # ranking again (a crawl grew, or the other weighting) updates in place
    rank_crawl(tmp_path, weighted=True)
    top = top_pages(tmp_path, limit=2)
    assert [t["url"] for t in top] == [U[2], U[0]]
    assert set(top[0]) == {"url", "title", "pagerank", "hub", "authority"}
    assert top_pages(tmp_path, by="hub", limit=1)[0]["url"] in (U[0], U[1], U[3])
    with pytest.raises(ValueError):
        top_pages(tmp_path, by="title")


def test_rank_command(tmp_path):
    from skitter.cli_rank import rank

    small_crawl(tmp_path)
    out = CliRunner().invoke(rank, [str(tmp_path), "--limit", "3", "--json"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert len(rows) == 3 and rows[0]["url"] == U[2]
    out = CliRunner().invoke(rank, [str(tmp_path), "--by", "authority"])
    assert out.exit_code == 0 and "http://a.test/c" in out.output and "authority" in out.output


# -- evaluation -----------------------------------------------------------------------------------------

def labels_of(n: int = 200) -> Labels:
    topic = {f"http://x.test/{i}": ("t" if i % 10 == 0 else "u") for i in range(n)}
    pr = {f"http://x.test/{i}": (100.0 if i < 2 else 1.0) for i in range(n)}
    s = sum(pr.values())
    return Labels(topic, {u: v / s for u, v in pr.items()}, {"http://x.test/190"})


def test_evaluate_harvest_recall_and_importance():
    lab = labels_of()
    relevant = [f"http://x.test/{i}" for i in range(0, 200, 10)]      # 20 pages, one unreachable
    others = [f"http://x.test/{i}" for i in range(200) if i % 10]
    order = relevant[:10] + others[:30]                              # 40 fetched
    ev = evaluate(order, lab, "t")
    assert ev.relevant_total == 19
    assert ev.harvest[9] == 1.0 and ev.harvest_rate == pytest.approx(10 / 40)
    assert ev.recall_at == {b: pytest.approx(10 / 19) for b in (0.05, 0.1, 0.2)}   # budgets 10, 20, 40
    assert ev.top_k == 2                                             # top 1% of 200
    assert ev.top_share_at[0.1] == 0.5                               # x.test/0 among the first 4
    assert ev.top_share_at[0.25] == 0.5 and ev.top_share_at[0.5] == 1.0   # x.test/1 is the 11th
    assert len(ev.avg_pagerank) == 10 and ev.avg_pagerank[0] > ev.avg_pagerank[-1]
    assert evaluate([], lab, "t").harvest_rate is None


def test_load_labels_and_eval_crawl_command(tmp_path):
    from skitter.cli_rank import eval_crawl

    (tmp_path / "crawl").mkdir()
    small_crawl(tmp_path / "crawl")
    lines = [{"url": u, "topic": "rock" if i % 2 else None, "pagerank": 1 / (i + 1)} for i, u in enumerate(U)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    lab = load_labels(tmp_path / "labels.jsonl")
    assert lab.topics == {"rock"} and len(lab) == 7
    png = tmp_path / "curves.png"
    args = [str(tmp_path / "crawl"), "--labels", str(tmp_path / "labels.jsonl"), "--topic", "rock",
            "--plot", str(png)]
    out = CliRunner().invoke(eval_crawl, args)
    assert out.exit_code == 0, out.output
    assert "harvest rate" in out.output and "top-1% PageRank" in out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = CliRunner().invoke(eval_crawl, args[:3] + ["--json"])
    data = json.loads(out.output)
    assert data["crawl"]["fetched"] == 6 and data["crawl"]["topic"] is None
    bad = CliRunner().invoke(eval_crawl, args[:3] + ["--topic", "nope"])
    assert bad.exit_code != 0
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    bad = CliRunner().invoke(eval_crawl, [str(tmp_path / "crawl"), "--labels", str(tmp_path / "bad.jsonl")])
    assert bad.exit_code != 0
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)))
    bad = CliRunner().invoke(eval_crawl, [str(tmp_path / "crawl"), "--labels", str(tmp_path / "binary.jsonl")])
    from skitter.errors import UsageError   # (cli.main prints it in one line, exit status 2)

    assert isinstance(bad.exception, UsageError) and "binary.jsonl is not UTF-8 text" in str(bad.exception)
    # labels with no PageRank and no page of the crawl's topic: a plot that says so, not a crash
    (tmp_path / "bare.jsonl").write_text(json.dumps({"url": U[0], "topic": "x"}) + "\n")
    out = CliRunner().invoke(eval_crawl, [str(tmp_path / "crawl"), "--labels", str(tmp_path / "bare.jsonl"),
                                          "--plot", str(png)])
    assert out.exit_code == 0, out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_labels():
    from skitter.demo.web import DemoConfig, DemoWeb
    from skitter.demo.labels import labels, web_graph

    web = DemoWeb(DemoConfig(pages=300, hosts=2), ["http://127.0.0.2:9", "http://127.0.0.3:9"])
    recs = list(labels(web))
    assert len(recs) == len(web.pages())
    assert sum(r["pagerank"] for r in recs) == pytest.approx(1.0)
    top = max(recs, key=lambda r: r["pagerank"])
    assert top["url"] in {s for s in web.seeds()}            # a home page: every article links to it
    assert {r["topic"] for r in recs} - {None} <= set(web.topic_names)
    assert not all(r["reachable"] for r in recs)               # /private/ pages: disallowed
    urls, src, dst = web_graph(web)
    assert all(s != d for s, d in zip(src, dst))
    slow = [v for v in dict.fromkeys(web.outlinks(urls[5])) if not web.is_nofollow_link(urls[5], v)]
    fast = {urls[d] for s, d in zip(src, dst) if s == 5}
    assert fast <= set(slow)
