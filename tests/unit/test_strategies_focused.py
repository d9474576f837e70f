"""The focused and importance strategies (skitter.strategies: pdd, weight, cosine, shark, backlinks,
pagerank), the shared tokenizer/topic/tunnelling code, and their order through a real frontier."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.config import SETTINGS, CrawlConfig
from skitter.errors import UsageError
from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Outcome, Candidate, Link, Page
from skitter.store.db import CrawlDB
from skitter.strategies import FOCUSED, IMPORTANCE, STRATEGIES, ParentContext, make_scorer
from skitter.strategies.cosine import CosineScorer
from skitter.strategies.importance import BacklinkScorer, OPICScorer
from skitter.strategies.pdd import PDDScorer
from skitter.strategies.shark import SharkScorer
from skitter.strategies.topic import (DROPPED, MAX_BAND, SEED_PRIORITY, Topic, band_of, encode, estimate_of,
                                      is_dropped, tokenize, url_words)
from skitter.strategies.exemplars import read_exemplars
from skitter.strategies.weight import WeightScorer
from skitter.testing import FakeClock

ROCKS = Topic.from_text("basalt granite volcano")


def ctx(url: str = "http://a.test/p", page: Page | None = None, *, depth: int = 1, priority: float = 0.5,
        relevance: float | None = None) -> ParentContext:
    return ParentContext(url=url, page=page or Page(), depth=depth, priority=priority, relevance=relevance)


def rock_page() -> Page:
    return Page(title="Basalt and granite", text="basalt lava granite basalt volcano rock", headings=["Volcano"],
                description="about basalt", keywords="granite", links=[Link("http://a.test/x", anchor="granite")])


def plain_page() -> Page:
    return Page(title="Bread", text="flour water yeast salt", links=[Link("http://a.test/y", anchor="more bread")])


# -- registry and settings -----------------------------------------------------------------------

def test_registry_and_settings_agree():
    choices = next(s for s in SETTINGS if s.name == "strategy").choices
    assert set(choices) == set(STRATEGIES) == {"bfs", "dfs", *FOCUSED, *IMPORTANCE}
    for name, cls in STRATEGIES.items():
        assert cls.name == name
        s = make_scorer(name)
        assert s.name == name and hasattr(s, "score") and hasattr(s, "relevance")


def test_make_scorer_takes_the_topic_and_settings_from_the_config(tmp_path):
    cfg = CrawlConfig(strategy="shark", topic="Basalt volcanoes", shark_gamma=0.2, shark_delta=0.4,
                      shark_beta=0.6, tunnel=5, min_similarity=0.2)
    s = make_scorer("shark", cfg)
    assert (s.gamma, s.delta, s.beta, s.tunnel, s.threshold) == (0.2, 0.4, 0.6, 5, 0.2)
    assert s.topic.terms == {"basalt", "volcano"}
    p = make_scorer("pdd", cfg.with_(threshold=7.0))
    assert p.threshold == 7.0 and p.tunnel == 5
    assert make_scorer("bfs", cfg).name == "bfs"
    assert make_scorer("pagerank", cfg.with_(link_weights=True)).weighted
    for name in FOCUSED:
        with pytest.raises(UsageError, match="needs a topic"):
            make_scorer(name, CrawlConfig(strategy=name))
    with pytest.raises(UsageError, match="topic-file"):
        make_scorer("pdd", CrawlConfig(topic_file=str(tmp_path / "missing.txt")))
    with pytest.raises(UsageError):
        SharkScorer(ROCKS, gamma=1.5)


# -- tokenizer and topic -----------------------------------------------------------------------------

def test_tokenize_drops_stop_words_and_stems():
    assert tokenize("The Volcanoes are erupting, and the lava flows!") == ["volcano", "erupt", "lava", "flow"]
    assert tokenize("") == [] and tokenize("a I the of") == []
    assert tokenize("Café naïve Müller 2024") == ["café", "naïv", "müller", "2024"]
    assert url_words("http://www.rocks.test/volcanoes/basalt_rocks.html?q=lava") == \
        ["rock", "test", "volcano", "basalt", "rock", "lava"]
    assert url_words("http://www.myblogindia.com/html/default.asp") == ["myblogindia", "com", "html", "default"]


def test_topic_from_words_and_exemplars(tmp_path):
    (tmp_path / "a.html").write_text("<html><head><title>Basalt</title></head><body><h1>Lava fields</h1>"
                                     "<p>basalt basalt lava magma</p></body></html>")
    (tmp_path / "b.txt").write_text("granite granite granite magma")
    texts = read_exemplars(tmp_path)
    assert len(texts) == 2 and "Lava fields" in texts[0]
    t = Topic.build("obsidian", texts)
    assert t.weights["obsidian"] == 1.0            # the --topic words keep weight 1
    assert max(w for k, w in t.weights.items() if k != "obsidian") == 1.0
    assert t.weights["granit"] > t.weights["magma"] > 0
    assert read_exemplars(tmp_path / "b.txt") == ["granite granite granite magma"]
    assert not Topic.build("", []) and bool(t)


@pytest.mark.parametrize("data", [b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\nbasalt", b"\x89PNG\r\n\x1a\n", b"\x1f\x8b\x08\x00",
                                  b"basalt \x00\x01\x02 lava", bytes(range(256)) * 4])
def test_a_binary_topic_file_is_refused_and_skipped_in_a_directory(tmp_path, data):
    """A PDF or an image as --topic-file was read as text with replacement characters, a topic of
    garbage, without a word. Now a file is an error, and a directory skips it."""
    from skitter.errors import UsageError

    (tmp_path / "x.bin").write_bytes(data)
    with pytest.raises(UsageError, match="is not a text or HTML file"):
        read_exemplars(tmp_path / "x.bin")
    (tmp_path / "a.txt").write_text("basalt lava")
    assert read_exemplars(tmp_path) == ["basalt lava"]


def test_cosine_and_count():
    t = Topic({"basalt": 1.0, "lava": 1.0})
    assert t.cosine(["basalt", "lava"]) == pytest.approx(1.0)
    assert t.cosine(["basalt", "bread"]) == pytest.approx(1 / math.sqrt(2) / math.sqrt(2))
    assert t.cosine(Counter()) == 0.0 and t.cosine(["bread"]) == 0.0
    assert t.count(["basalt", "basalt", "bread", "lava"]) == 3
    assert Topic({"basalt": 0.5}).count(["basalt", "basalt"]) == 1.0


# -- priorities with the band inside ----------------------------------------------------------------------

@settings(max_examples=300, derandomize=True)
@given(st.floats(0.0, 1.0), st.integers(0, MAX_BAND), st.booleans())
def test_band_round_trip(f, band, dropped):
    p = encode(f, band, dropped=dropped)
    assert band_of(p) == band
    assert is_dropped(p) == dropped
    assert estimate_of(p) == pytest.approx(min(f, 1 - 2 ** -20), abs=2 ** -20)
    assert (p < 0) == dropped and p < SEED_PRIORITY


@settings(max_examples=300, derandomize=True)
@given(st.floats(0.0, 0.999), st.floats(0.0, 0.999), st.integers(0, 50), st.integers(0, 50))
def test_encoding_keeps_the_estimate_order(f1, f2, b1, b2):
    if math.floor(f1 * 2 ** 20) > math.floor(f2 * 2 ** 20):
        assert encode(f1, b1) > encode(f2, b2)
        assert encode(f1, b1) > encode(f2, b2, dropped=True)


def test_foreign_priorities_decode_to_band_zero():
    for p in (SEED_PRIORITY, 1e9, -1.0, -5.0, float("inf"), 0.0):
        assert band_of(p) == 0
    assert encode(float("nan"), 3) == encode(0.0, 3) and DROPPED < 0


# -- pdd (seed 001) ------------------------------------------------------------------------------------------

def test_pdd_weight_is_the_seed_formula():
    """Seed 001's worked example: 'html' once in the body, once in the title, twice in meta, none in
    headings, once in the URL: t = 1 + 3 + 10 + 0 + 4 = 18."""
    page = Page(title="HTML title of page", description="Free HTML Web tutorials", keywords="HTML, CSS, XML",
                text="This is my very own HTML page. This page is just for reference.")
    s = PDDScorer(Topic.from_text("html"))
    assert s.weights("http://www.myblogindia.com/html/default.asp", page) == \
        {"body": 1, "title": 1, "meta": 2, "headings": 0, "url": 1}
    assert s.relevance("http://www.myblogindia.com/html/default.asp", page) == 18.0
    assert s.relevant(18.0) and not s.relevant(3.0) and s.relevant(3.5)


def test_pdd_links_of_relevant_pages_come_first():
    s = PDDScorer(ROCKS)
    hot = ctx(page=rock_page(), relevance=s.relevance("http://a.test/p", rock_page()))
    cold = ctx(page=plain_page(), relevance=s.relevance("http://a.test/q", plain_page()))
    assert hot.relevance > 3 >= cold.relevance
    a, b = s.score(Link("http://a.test/1"), hot), s.score(Link("http://a.test/2"), cold)
    assert a > b and band_of(a) == 0 and band_of(b) == 1
    # a heavier relevant page's links before a lighter one's
    heavier = ctx(page=rock_page(), relevance=hot.relevance * 3)
    assert s.score(Link("http://a.test/3"), heavier) > a
    # relevance is computed when the loop did not pass it
    assert s.score(Link("http://a.test/1"), ctx(page=rock_page())) == a


def test_weight_parts():
    s = WeightScorer(ROCKS)
    page = rock_page()
    parts = s.parts("http://a.test/volcano.html", page)
    assert parts == {"url": 4, "outlinks": 1, "title": 3, "body": 4}
    assert s.relevance("http://a.test/volcano.html", page) == 12
    assert s.relevance("http://a.test/b", plain_page()) == 0
    hot, cold = ctx(page=page, relevance=12.0), ctx(page=plain_page(), relevance=0.0)
    assert s.score(Link("http://a.test/1"), hot) > s.score(Link("http://a.test/2"), cold)


# -- tunnelling ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [PDDScorer, WeightScorer, CosineScorer, SharkScorer])
def test_tunnelling_through_irrelevant_pages(cls):
    """Links are followed through at most `tunnel` off-topic pages in a row; then dropped to the end.
    A relevant page resets the count."""
    s = cls(ROCKS, tunnel=2)
    prio = s.seed_priority("http://a.test/")
    bands = []
    for i in range(4):   # a chain of off-topic pages
        prio = s.score(Link(f"http://a.test/{i + 1}"), ctx(f"http://a.test/{i}", plain_page(), priority=prio))
        bands.append((band_of(prio), is_dropped(prio)))
    assert bands == [(1, False), (2, False), (3, True), (4, True)]
    # even the best dropped link ranks below the worst followed one
    assert prio < encode(0.0, 2)
    back = s.score(Link("http://a.test/x"), ctx("http://a.test/4", rock_page(), priority=prio))
    assert band_of(back) == 0 and not is_dropped(back)


# -- cosine (naive best-first) ---------------------------------------------------------------------------------

def test_cosine_children_inherit_the_parent_similarity():
    s = CosineScorer(ROCKS)
    r = s.relevance("http://a.test/p", rock_page())
    tf = Counter(tokenize("Basalt and granite about basalt granite Volcano basalt lava granite basalt volcano rock"))
    assert r == pytest.approx(ROCKS.cosine(tf))
    p = s.score(Link("http://a.test/1", anchor="bread"), ctx(page=rock_page(), relevance=r))
    assert estimate_of(p) == pytest.approx(r, abs=1e-6)
    assert s.score(Link("http://a.test/2", anchor="basalt"), ctx(page=rock_page(), relevance=r)) == p


# -- shark (SharkSearch) -------------------------------------------------------------------------------------

def test_shark_potential_score():
    s = SharkScorer(ROCKS, gamma=0.5, delta=0.5, beta=0.8, threshold=0.1)
    page = rock_page()
    r = s.relevance("http://a.test/p", page)
    assert r > 0.1
    parent = ctx(page=page, relevance=r)
    # anchor on topic: context counts 1
    anchor = ROCKS.cosine(tokenize("basalt lava"))
    got = estimate_of(s.score(Link("http://a.test/1", anchor="basalt lava"), parent))
    assert got == pytest.approx(0.5 * 0.5 * r + 0.5 * (0.8 * anchor + 0.2 * 1.0), abs=1e-6)
    # anchor off topic: the context around the link decides
    ctx_sim = ROCKS.cosine(tokenize("granite fields"))
    got = estimate_of(s.score(Link("http://a.test/2", anchor="read more", context="granite fields"), parent))
    assert got == pytest.approx(0.25 * r + 0.5 * 0.2 * ctx_sim, abs=1e-6)
    # no text around the link (a list item): its context is the page itself
    got = estimate_of(s.score(Link("http://a.test/3", anchor="read more"), parent))
    assert got == pytest.approx(0.25 * r + 0.5 * 0.2 * r, abs=1e-6)


def test_shark_inherited_score_fades_along_irrelevant_pages():
    s = SharkScorer(ROCKS, gamma=1.0, delta=0.5, tunnel=10)   # γ = 1: the potential is the inherited score
    r = s.relevance("http://a.test/0", rock_page())
    p1 = s.score(Link("http://a.test/1"), ctx("http://a.test/0", rock_page(), relevance=r))
    assert estimate_of(p1) == pytest.approx(0.5 * r, abs=1e-6)
    p2 = s.score(Link("http://a.test/2"), ctx("http://a.test/1", plain_page(), priority=p1))
    assert estimate_of(p2) == pytest.approx(0.25 * r, abs=1e-6)
    p3 = s.score(Link("http://a.test/3"), ctx("http://a.test/2", plain_page(), priority=p2))
    assert estimate_of(p3) == pytest.approx(0.125 * r, abs=1e-6)
    # forgotten (a resume): the page's own priority stands in for its inherited score
    fresh = SharkScorer(ROCKS, gamma=1.0, delta=0.5, tunnel=10)
    p3b = fresh.score(Link("http://a.test/3"), ctx("http://a.test/2", plain_page(), priority=p2))
    assert estimate_of(p3b) == pytest.approx(estimate_of(p3), abs=1e-6)


# -- importance: backlinks and OPIC ---------------------------------------------------------------------------

def page_with(*urls: str, nofollow: tuple[str, ...] = ()) -> Page:
    return Page(links=[Link(u, nofollow=u in nofollow) for u in urls])


def test_backlinks_counts_in_links_and_reports_queued_urls():
    s = BacklinkScorer()
    assert s.seed_priority("http://a.test/") > 1e6
    s.relevance("http://a.test/", Page())
    up = s.on_page(ctx("http://a.test/", page_with("http://a.test/x", "http://a.test/y", "http://a.test/x")),
                   page_with("http://a.test/x", "http://a.test/y", "http://a.test/x").links)
    assert sorted(up) == [("http://a.test/x", 1.0), ("http://a.test/y", 1.0)]   # a page counts once
    p2 = page_with("http://a.test/x", "http://a.test/", "http://a.test/b", "http://a.test/z", nofollow=("http://a.test/z",))
    up = s.on_page(ctx("http://a.test/b", p2), p2.links)
    assert up == [("http://a.test/x", 2.0)]          # the fetched seed, self-link and nofollow are left out
    assert s.on_page(ctx("http://a.test/b", p2), p2.links) == []      # once per page
    assert s.score(Link("http://a.test/x"), ctx("http://a.test/b", p2)) == 2.0
    assert s.relevance("http://a.test/x", Page()) == 2.0
    nf = Page(links=[Link("http://a.test/q")], nofollow=True)
    assert s.on_page(ctx("http://a.test/n", nf), nf.links) == []


def test_backlinks_without_the_hook_counts_in_score():
    s = BacklinkScorer()
    p = page_with("http://a.test/x")
    assert s.score(Link("http://a.test/x"), ctx("http://a.test/1", p)) == 1.0
    assert s.score(Link("http://a.test/x"), ctx("http://a.test/1", p)) == 1.0    # same page: not again
    assert s.score(Link("http://a.test/x"), ctx("http://a.test/2", p)) == 2.0


def test_weighted_links():
    s = BacklinkScorer(weighted=True)
    p = Page(links=[Link("http://a.test/x", visibility=3, position=3, distance=1),
                    Link("http://b.test/y", visibility=1, position=1, distance=5)])
    assert dict(s.on_page(ctx("http://a.test/1", p), p.links)) == {"http://a.test/x": 9.0, "http://b.test/y": 0.2}


def test_opic_hands_the_cash_on():
    s = OPICScorer()
    s.seed_priority("http://a.test/")
    assert s.relevance("http://a.test/", Page()) == 1.0
    p = page_with("http://a.test/x", "http://a.test/y")
    assert sorted(s.on_page(ctx("http://a.test/", p), p.links)) == [("http://a.test/x", 0.5), ("http://a.test/y", 0.5)]
    assert s.relevance("http://a.test/x", Page()) == 0.5
    q = page_with("http://a.test/y", "http://a.test/z", "http://a.test/")
    up = dict(s.on_page(ctx("http://a.test/x", q), q.links))
    assert up == {"http://a.test/y": 0.5 + 0.5 / 3, "http://a.test/z": 0.5 / 3}   # the seed's share is kept out
    assert s.score(Link("http://a.test/z"), ctx("http://a.test/x", q)) == pytest.approx(0.5 / 3)
    # a page with no links keeps its cash out of the frontier
    assert s.relevance("http://a.test/z", Page()) == pytest.approx(0.5 / 3)
    assert s.on_page(ctx("http://a.test/z", Page()), []) == []


# -- through a real frontier, the way the loop drives the scorer -----------------------------------------------


def simulate(directory, scorer, web: dict[str, Page], seed: str, *, hook: bool = True) -> list[str]:
    """The loop's _content in miniature: relevance, on_page (reprioritize), score each link, add."""
    db = CrawlDB(directory)
    f = LocalFrontier(db, Politeness(delay=0.0, adaptive=0.0), window=4, clock=FakeClock())
    f.admit([Candidate(url=seed, depth=0, priority=scorer.seed_priority(seed))])

    async def run():
        order = []
        while (c := await f.next_ready()) is not None:
            order.append(c.url)
            page = web.get(c.url, Page())
            r = scorer.relevance(c.url, page)
            parent = ParentContext(url=c.url, page=page, depth=c.depth, priority=c.priority, relevance=r)
            if hook and hasattr(scorer, "on_page"):
                for url, p in scorer.on_page(parent, page.links):
                    f.raise_priority(url, p)
            f.admit([Candidate(url=l.url, depth=c.depth + 1, parent=c.url, priority=scorer.score(l, parent))
                   for l in page.links])
            f.finish(c, Outcome(response_time=0.0))
            db.conn.execute("UPDATE urls SET state = 2 WHERE url = ?", (c.url,))
        return order
    try:
        return asyncio.run(run())
    finally:
        db.close()


def hub_web() -> dict[str, Page]:
    """The seed links to a1..a4 (in that order), then p; each a_i links to the hub h; p links to q."""
    s = "http://a.test/"
    web = {s: page_with(*(f"{s}a{i}" for i in range(1, 5)), f"{s}p")}
    for i in range(1, 5):
        web[f"{s}a{i}"] = page_with(f"{s}h", f"{s}x{i}")
    web[f"{s}p"] = page_with(f"{s}q")
    return web


@pytest.mark.parametrize("cls", [BacklinkScorer, OPICScorer])
def test_importance_fetches_the_hub_once_its_in_links_are_seen(tmp_path, cls):
    order = simulate(tmp_path, cls(), hub_web(), "http://a.test/")
    assert len(order) == 1 + 4 + 1 + 1 + 1 + 4
    # after two a_i the hub has two in-links and jumps ahead of everything found once
    assert order.index("http://a.test/h") < order.index("http://a.test/q")
    assert order.index("http://a.test/h") < min(order.index(f"http://a.test/x{i}") for i in range(1, 5))


def test_focused_crawl_goes_for_the_topic_first(tmp_path):
    s = "http://a.test/"
    web = {s: Page(links=[Link(f"{s}bread", anchor="bread"), Link(f"{s}rocks", anchor="rocks")]),
           f"{s}bread": Page(text="flour yeast", links=[Link(f"{s}b{i}") for i in range(5)]),
           f"{s}rocks": Page(text="basalt granite volcano basalt", links=[Link(f"{s}r{i}") for i in range(5)])}
    for name in FOCUSED:
        (tmp_path / name).mkdir()
        order = simulate(tmp_path / name, STRATEGIES[name](ROCKS), web, s)
        assert order.index(f"{s}r0") < order.index(f"{s}b0"), name
        assert set(order) == {s, f"{s}bread", f"{s}rocks"} | {f"{s}{c}{i}" for c in "br" for i in range(5)}
