"""Crawl strategies (skitter.strategies): BFS and DFS scorers, the registry, and their order through
a real LocalFrontier."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Outcome, Candidate, Link, Page
from skitter.store.db import CrawlDB
from skitter.strategies import STRATEGIES, ParentContext, make_scorer
from skitter.strategies.bfs import BreadthFirst
from skitter.strategies.dfs import DepthFirst
from skitter.testing import FakeClock


def parent(depth: int, url: str = "http://a.test/p") -> ParentContext:
    return ParentContext(url=url, page=Page(), depth=depth, priority=0.0)


def score(name: str, depth_of_parent: int, link: str = "http://a.test/x") -> float:
    return make_scorer(name).score(Link(url=link), parent(depth_of_parent))


# -- the registry ----------------------------------------------------------------------------

def test_make_scorer_registry():
    assert {"bfs", "dfs"} <= set(STRATEGIES)
    assert isinstance(make_scorer("bfs"), BreadthFirst)
    assert isinstance(make_scorer("dfs"), DepthFirst)
    for name in STRATEGIES:
        s = make_scorer(name)
        assert s.name == name
    assert make_scorer("bfs") is not make_scorer("bfs")   # a fresh scorer per crawl


def test_make_scorer_unknown_name():
    with pytest.raises(KeyError):
        make_scorer("random-walk")


def test_registry_matches_the_strategy_setting():
    from skitter.config import SETTINGS

    setting = next(s for s in SETTINGS if s.name == "strategy")
    assert set(setting.choices) == set(STRATEGIES)
    assert setting.default in STRATEGIES


@pytest.mark.parametrize("name", ["bfs", "dfs"])
def test_seeds_and_relevance(name):
    s = make_scorer(name)
    assert s.seed_priority("http://a.test/") == 0.0
    assert s.relevance("http://a.test/", Page(title="x", text="y")) is None


# -- BFS and DFS -----------------------------------------------------------------------------

def test_bfs_prefers_shallower_links():
    assert score("bfs", 0) > score("bfs", 1) > score("bfs", 5)
    # a link is one hop below its parent: it ranks below the seeds
    assert score("bfs", 0) < make_scorer("bfs").seed_priority("http://a.test/")


def test_dfs_prefers_deeper_links():
    assert score("dfs", 5) > score("dfs", 1) > score("dfs", 0)
    assert score("dfs", 0) > make_scorer("dfs").seed_priority("http://a.test/")


def test_scores_do_not_depend_on_the_link_itself():
    """Plain BFS/DFS: only the depth matters; ties go to discovery order in the frontier."""
    for name in ("bfs", "dfs"):
        a = make_scorer(name).score(Link(url="http://a.test/1", anchor="home", visibility=3), parent(2))
        b = make_scorer(name).score(Link(url="http://z.test/2", distance=5), parent(2))
        assert a == b


@settings(max_examples=200, derandomize=True)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_bfs_priority_is_monotone_in_depth(d1, d2):
    s1, s2 = score("bfs", d1), score("bfs", d2)
    if d1 < d2:
        assert s1 > s2
    elif d1 == d2:
        assert s1 == s2
    else:
        assert s1 < s2


@settings(max_examples=200, derandomize=True)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_dfs_priority_is_monotone_in_depth(d1, d2):
    s1, s2 = score("dfs", d1), score("dfs", d2)
    assert (s1 > s2) == (d1 > d2) and (s1 == s2) == (d1 == d2)


# -- through the frontier ----------------------------------------------------------------------


def crawl_order(directory, name: str, tree: dict[str, list[str]], seed: str) -> list[tuple[str, int]]:
    """Simulate the loop on a link tree: take the best URL, score its links, add them."""
    scorer = make_scorer(name)
    db = CrawlDB(directory)
    f = LocalFrontier(db, Politeness(delay=0.0, adaptive=0.0), window=4, clock=FakeClock())
    f.admit([Candidate(url=seed, depth=0, priority=scorer.seed_priority(seed))])

    async def run():
        order = []
        while (c := await f.next_ready()) is not None:
            order.append((c.url, c.depth))
            ctx = ParentContext(url=c.url, page=Page(), depth=c.depth, priority=c.priority)
            f.admit([Candidate(url=u, depth=c.depth + 1, parent=c.url,
                             priority=scorer.score(Link(url=u), ctx)) for u in tree.get(c.url, [])])
            f.finish(c, Outcome(response_time=0.0))
        return order
    try:
        return asyncio.run(run())
    finally:
        db.close()


def _tree(fanout: int = 3, depth: int = 3) -> dict[str, list[str]]:
    tree: dict[str, list[str]] = {}
    level = ["http://a.test/"]
    for _ in range(depth):
        nxt = []
        for u in level:
            kids = [f"{u}{i}/" for i in range(fanout)]
            tree[u] = kids
            nxt.extend(kids)
        level = nxt
    return tree


def test_bfs_crawls_level_by_level(tmp_path):
    order = crawl_order(tmp_path, "bfs", _tree(), "http://a.test/")
    depths = [d for _, d in order]
    assert len(order) == 1 + 3 + 9 + 27
    assert depths == sorted(depths)
    # within a level, discovery order
    assert [u for u, d in order if d == 1] == ["http://a.test/0/", "http://a.test/1/", "http://a.test/2/"]
    assert [u for u, d in order if d == 2][:3] == ["http://a.test/0/0/", "http://a.test/0/1/", "http://a.test/0/2/"]


def test_dfs_follows_a_branch_down_first(tmp_path):
    order = crawl_order(tmp_path, "dfs", _tree(), "http://a.test/")
    assert len(order) == 1 + 3 + 9 + 27
    assert [u for u, _ in order[:4]] == ["http://a.test/", "http://a.test/0/", "http://a.test/0/0/",
                                         "http://a.test/0/0/0/"]
    # the deepest level is reached before the seed's second child
    first_leaf = next(i for i, (_, d) in enumerate(order) if d == 3)
    second_child = [u for u, _ in order].index("http://a.test/1/")
    assert first_leaf < second_child
