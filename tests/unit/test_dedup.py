"""Near-duplicate detection (skitter.dedup): winnowing, resemblance, the index, persistence."""

from __future__ import annotations

import random
import sqlite3
from array import array
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.dedup import (CONTAINMENT, K, RESEMBLANCE, SKETCH, W, NearDupIndex, containment,
                           fingerprints, kgram_hashes, links_worth_following, main_text,
                           mirror_hosts, normalise, resemblance, winnow, winnow_reference,
                           winnow_smallest)
from skitter.models import Link

FAST = settings(max_examples=60, deadline=None)
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_R = random.Random(12345)
_WORDS = ["".join(_R.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 + _R.randrange(7)))
          for _ in range(3000)]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


# ---------------------------------------------------------------------------------------------
# winnowing


def test_defaults_are_documented() -> None:
    import skitter.dedup as d
    assert f"K = {K}" in d.__doc__ and f"W = {W}" in d.__doc__
    assert f"t = W + K - 1 = {W + K - 1}" in d.__doc__.replace("``", "")
    assert 0 < RESEMBLANCE < 1 and 0 < CONTAINMENT <= 1 and SKETCH >= 16


def test_normalise() -> None:
    assert normalise("Hello,  World!\n  It's 4 o'clock — ÉTÉ_x") == "helloworldits4oclockétéx"
    assert normalise("Straße") == "strasse"
    assert normalise("日本語の ページ。") == "日本語のページ"
    assert normalise(" \t.,;!?") == ""


def test_short_texts() -> None:
    assert winnow("abc", k=5).size == 0
    assert winnow("", k=1).size == 0
    one = winnow("abcde", k=5, w=4)
    assert one.size == 1 and one.dtype == np.uint64
    # shorter than t but at least k: one window, its minimum
    h = kgram_hashes("abcdefgh", 5)
    assert h.size == 4 and winnow("abcdefgh", 5, 10).tolist() == [int(h.min())]


def test_output_is_sorted_unique_uint64() -> None:
    fps = winnow(words(random.Random(1), 400))
    assert fps.dtype == np.uint64 and fps.size > 100
    assert np.all(np.diff(fps.astype(object)) > 0) if fps.size > 1 else True
    n = len(normalise(words(random.Random(1), 400)))
    assert 0.5 < fps.size / (2 * (n - K + 1) / (W + 1)) < 1.5   # density ~ 2/(w+1)


@FAST
@given(st.text(alphabet=ALNUM + " \n\t.,;:!?-'\"()" + ALNUM.upper(), min_size=0, max_size=300),
       st.randoms(use_true_random=False))
def test_white_space_punctuation_and_case_insensitive(text: str, rnd: random.Random) -> None:
    chars = []
    for c in text:
        if c in " \n\t.,;:!?-'\"()" and rnd.random() < 0.5:
            continue                                    # remove it
        if rnd.random() < 0.2:
            chars.append(rnd.choice([" ", "  ", "\n", ", ", ". ", "-", "!"]))   # insert some
        chars.append(c.upper() if rnd.random() < 0.3 else c.lower() if rnd.random() < 0.3 else c)
    other = "".join(chars)
    for k, w in ((3, 4), (5, 2), (K, W)):
        assert winnow(text, k, w).tolist() == winnow(other, k, w).tolist()


# ASCII, the symbols normalising drops (©, nbsp, quotes, dashes) and letters that casefold to
# ASCII (Kelvin sign, long s), to several letters (ß, ﬁ) or stay non-ASCII (é, Σ, 日): every path
# of _codepoints, each checked against normalise(), the reference.
MIXED = ALNUM + ALNUM.upper() + " .,-_\n\t\u00a0©®“”‘’–—…€\u212a\u017f\u00df\ufb01éÉΣσς日本\u0301"


@given(st.text(alphabet=MIXED, max_size=200) | st.text(max_size=60))
@FAST
def test_codepoints_are_those_of_normalise(text: str) -> None:
    from skitter.dedup import _codepoints

    got = _codepoints(text)
    assert got.tolist() == [ord(c) for c in normalise(text)]


@FAST
@given(st.lists(st.integers(0, 20), min_size=0, max_size=80), st.integers(1, 9))
def test_selection_matches_seed_004s_loop(hashes: list[int], w: int) -> None:
    """Every selected hash is the minimum of a window; every window's minimum is selected; the
    reference loop records positions once, rightmost on ties."""
    from skitter.dedup import _window_min
    h = np.array(hashes, dtype=np.uint64)
    ref = winnow_reference(hashes, w)
    if not hashes:
        assert ref == []
        return
    positions = [p for p, _ in ref]
    assert positions == sorted(set(positions))
    for start in range(max(1, len(hashes) - w + 1)):
        window = hashes[start:start + w]
        m = min(window)
        rightmost = start + len(window) - 1 - window[::-1].index(m)
        assert (rightmost, m) in ref
    if hashes:
        assert sorted({v for _, v in ref}) == sorted(set(_window_min(h, w).tolist()))


@FAST
@given(st.text(alphabet="ab c", max_size=700) | st.text(alphabet=ALNUM + " ", max_size=900),
       st.integers(1, 200), st.integers(1, 12), st.integers(1, 25))
def test_the_smallest_fingerprints_are_winnowings_first(text: str, count: int, w: int, k: int) -> None:
    # a two-letter alphabet makes equal hashes (ties) common; long texts take the cut-off path
    assert winnow_smallest(text, count, k, w).tolist() == winnow(text, k, w)[:count].tolist()


def test_the_smallest_fingerprints_of_long_pages() -> None:
    rng = random.Random(7)
    for n in (300, 2000, 8000):
        text = words(rng, n)
        for count in (1, 64, 129, 1000):
            assert winnow_smallest(text, count).tolist() == winnow(text)[:count].tolist()
    text = "abcabcabc " * 3000   # a few distinct k-grams repeated: the cut must widen
    assert winnow_smallest(text, 129).tolist() == winnow(text)[:129].tolist()


@FAST
@given(st.text(alphabet=ALNUM, min_size=0, max_size=200), st.integers(1, 8), st.integers(1, 8))
def test_every_fingerprint_is_a_window_minimum(text: str, k: int, w: int) -> None:
    h = kgram_hashes(text, k).tolist()
    fps = set(winnow(text, k, w).tolist())
    minima = {min(h[i:i + w]) for i in range(max(1, len(h) - w + 1))} if h else set()
    assert fps == minima


@FAST
@given(st.text(alphabet=ALNUM, min_size=0, max_size=120), st.text(alphabet=ALNUM, min_size=0, max_size=120),
       st.text(alphabet=ALNUM, min_size=0, max_size=120), st.integers(0, 30), st.integers(1, 10),
       st.integers(1, 12))
def test_shared_substring_of_length_t_is_detected(a: str, b: str, shared_seed: str, extra: int,
                                                 k: int, w: int) -> None:
    t = w + k - 1
    rng = random.Random(shared_seed + str(extra))
    shared = "".join(rng.choice(ALNUM) for _ in range(t + extra))
    x, y = winnow(a + shared + b, k, w), winnow(b + " " + shared + " " + a, k, w)
    assert np.intersect1d(x, y).size >= 1
    # ... and the shared part's own fingerprints are in both (position independence)
    own = winnow(shared, k, w)
    assert np.isin(own, x).all() and np.isin(own, y).all()


def test_matches_shorter_than_k_are_never_detected() -> None:
    # texts over disjoint alphabets but sharing one 4-character run: no k-gram in common for k = 5
    a, b = "abababab" + "wxyz" + "abababab", "cdcdcdcd" + "wxyz" + "cdcdcdcd"
    assert np.intersect1d(winnow(a, 5, 1), winnow(b, 5, 1)).size == 0
    assert np.intersect1d(winnow(a, 4, 1), winnow(b, 4, 1)).size == 1


def test_moving_a_paragraph_keeps_its_fingerprints() -> None:
    rng = random.Random(7)
    paras = [words(rng, rng.randint(30, 80)) for _ in range(8)]
    doc = "\n\n".join(paras)
    moved = "\n\n".join(paras[3:] + paras[:3])
    a, b = winnow(doc), winnow(moved)
    for p in paras:
        own = winnow(p)
        assert own.size and np.isin(own, a).all() and np.isin(own, b).all()
    assert resemblance(a, b) > 0.85


def test_resemblance_and_containment() -> None:
    a = np.array([1, 2, 3, 4], dtype=np.uint64)
    b = np.array([3, 4, 5, 6, 7, 8], dtype=np.uint64)
    assert resemblance(a, b) == pytest.approx(2 / 8) and resemblance(b, a) == pytest.approx(2 / 8)
    assert containment(a, b) == pytest.approx(2 / 4) and containment(b, a) == pytest.approx(2 / 6)
    assert resemblance(a, a) == 1.0 and containment(a, a) == 1.0
    empty = np.empty(0, dtype=np.uint64)
    assert resemblance(empty, empty) == 0.0 and containment(empty, a) == 0.0
    assert resemblance(a, empty) == 0.0
    # on texts: a few words changed keep a high resemblance; an unrelated text has none
    rng = random.Random(3)
    text = words(rng, 600)
    toks = text.split()
    for i in rng.sample(range(len(toks)), 5):
        toks[i] = rng.choice(_WORDS)
    edited, other = " ".join(toks), words(rng, 600)
    assert resemblance(winnow(text), winnow(edited)) > 0.85
    assert resemblance(winnow(text), winnow(other)) < 0.02
    half = " ".join(text.split()[:300])
    assert containment(winnow(half), winnow(text)) > 0.95
    assert 0.4 < resemblance(winnow(half), winnow(text)) < 0.6


# ---------------------------------------------------------------------------------------------
# main content


def test_main_text_drops_boilerplate_and_falls_back() -> None:
    body = " ".join(["The article body is here and it is long enough to be main content."] * 8)
    html = ("<html><head><title>T</title></head><body><header><nav><a href='/'>Home</a> | "
            "<a href='/t/'>Topics</a></nav></header><main><article><h1>Title</h1><p>" + body +
            "</p></article></main><footer><p>Copyright footer text here</p></footer></body></html>")
    text = main_text(html)
    assert "article body is here" in text and "Copyright" not in text and "Topics" not in text
    assert main_text(html.encode("utf-8")) == text
    assert main_text(html.encode("cp1252"), encoding="cp1252") == text
    assert main_text("", fallback_text="parser text") == "parser text"
    assert main_text(b"\x00\x01", fallback_text="fb") == "fb"
    assert main_text("<html><body><script>x()</script></body></html>", "fb") == "fb"
    assert fingerprints(html).tolist() == winnow(text).tolist()
    assert fingerprints(html.replace("Home", "Start").replace("Copyright", "(c)")).tolist() == \
        winnow(text).tolist()                              # other chrome, same fingerprints


# ---------------------------------------------------------------------------------------------
# the index


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[np.ndarray]]:
    rng = random.Random(2024)
    texts = [words(rng, rng.randint(150, 400)) for _ in range(2000)]
    return texts, [winnow(t) for t in texts]


def test_index_finds_a_planted_near_duplicate_without_comparing_everything(corpus) -> None:
    texts, fps = corpus
    index = NearDupIndex()
    for i, f in enumerate(fps):
        index.add(1000 + i, f)
    assert len(index) == 2000
    rng = random.Random(5)
    compared = []
    for target in (17, 999, 1500):
        toks = texts[target].split()
        for i in rng.sample(range(len(toks)), 4):
            toks[i] = rng.choice(_WORDS)
        planted = winnow(" ".join(toks))
        found = index.query(planted)
        assert found and found[0][0] == 1000 + target, found[:3]
        assert found[0][1] > 0.7 and found[0][2] > 0.7
        assert abs(found[0][1] - resemblance(planted, fps[target])) < 0.2
        compared.append(index.last_compared)
        assert index.last_candidates <= 20         # docs sharing any sampled hash
        assert index.last_compared <= 3           # docs whose estimates were computed
    # an unrelated page meets no candidate worth comparing, and no match
    fresh = winnow(words(random.Random(99), 300))
    assert index.query(fresh) == [] and index.last_compared == 0
    assert index.compared == sum(compared)


def test_index_containment_and_thresholds(corpus) -> None:
    texts, fps = corpus
    index = NearDupIndex()
    for i, f in enumerate(fps[:500]):
        index.add(i, f)
    long_text = texts[42] + " " + texts[43]
    index.add(9999, winnow(long_text))
    # the first half of a stored page: resemblance ~ 0.5, containment ~ 1
    part = winnow(texts[42])
    found = dict((d, (r, c)) for d, r, c in index.query(part))
    assert 9999 in found and found[9999][1] > 0.9
    assert 42 in found and found[42][0] > 0.95          # itself, stored as doc 42
    assert 9999 not in {d for d, _, _ in index.query(part, containment=1.01, threshold=0.9)}
    # best first
    res = index.query(part)
    assert [r for _, r, _ in res] == sorted((r for _, r, _ in res), reverse=True)
    # a tiny page never matches on a handful of hashes
    tiny = winnow(" ".join(texts[42].split()[:6]))
    assert tiny.size < 16 and index.query(tiny) == []


def test_index_ignores_hashes_in_too_many_documents() -> None:
    rng = random.Random(1)
    chrome = words(rng, 120)
    index = NearDupIndex(max_df=50)
    for i in range(200):
        index.add(i, winnow(chrome + " " + words(rng, 40)))
    q = winnow(chrome + " " + words(rng, 40))
    assert index.query(q) == [] and index.last_compared == 0
    everything = NearDupIndex()          # the default max_df: the shared chrome makes them alike
    for i in range(200):
        everything.add(i, winnow(chrome + " " + words(rng, 40)))
    assert len(everything.query(q)) == 200
    assert NearDupIndex().query(q) == []                  # empty index
    assert NearDupIndex().query(np.empty(0, dtype=np.uint64)) == []


def test_persistence_round_trip(corpus) -> None:
    texts, fps = corpus
    index = NearDupIndex()
    records = []
    doc_ids = [(-1) ** i * (i * 7_919_000_000_000 + 3) for i in range(300)]   # signed 64-bit ids
    for d, f in zip(doc_ids, fps[:300]):
        r = index.add(d, f)
        assert r == index.record_for(d, f) and len(r[1]) == 8 * min(SKETCH, f.size)
        records.append(r)
    assert index.records() == records
    # through SQLite, as the crawl stores them (near_sketches), oldest first
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE near_sketches (doc_id INTEGER NOT NULL, sketch BLOB NOT NULL)")
    db.executemany("INSERT INTO near_sketches VALUES (?, ?)", records)
    back = NearDupIndex()
    back.add_records(db.execute("SELECT doc_id, sketch FROM near_sketches ORDER BY rowid"))
    assert len(back) == len(index) and sorted(back.to_rows()) == sorted(index.to_rows())
    for i in (0, 5, 150, 299):
        q = winnow(texts[i] + " " + words(random.Random(i), 10))
        assert back.query(q) == index.query(q) and back.query(q)[0][0] == doc_ids[i]
    # the rebuilt index keeps growing
    back.add(12345, fps[1000])
    assert back.query(fps[1000])[0][0] == 12345
    empty = NearDupIndex()
    empty.add_records([])
    assert empty.query(fps[0]) == []
    assert 700 < index.nbytes / len(index) < 2000        # bytes per page: ~12·S + 20, plus slack


# ---------------------------------------------------------------------------------------------
# what to do with near-duplicates


def test_links_worth_following() -> None:
    orig = ["http://a/1", "http://a/2"]
    assert not links_worth_following(["http://a/2", "http://a/1"], orig)
    assert not links_worth_following([], orig)
    assert links_worth_following(["http://a/1", "http://a/3"], orig)
    assert links_worth_following([Link("http://a/3")], [Link("http://a/1")])
    assert not links_worth_following([Link("http://a/1")], orig)


def test_mirror_hosts() -> None:
    pairs = [(f"http://a.example/{i}", f"http://b.example/{i}") for i in range(40)]
    pairs += [("http://a.example/x", "http://a.example/y")]                 # same host: ignored
    pairs += [(f"http://c.example/{i}", f"http://a.example/c{i}") for i in range(3)]
    got = mirror_hosts(pairs, {"a.example": 50, "b.example": 42, "c.example": 100})
    assert got == [("b.example", "a.example", pytest.approx(40 / 42))]
    assert mirror_hosts(pairs, {"a.example": 50, "b.example": 200}) == \
        [("a.example", "b.example", pytest.approx(40 / 50))]
    assert mirror_hosts(pairs, {"a.example": 500, "b.example": 500}) == []
    assert mirror_hosts(pairs)[0][2] == 1.0               # without page counts: an upper bound


def test_window_bounds_memory_and_keeps_the_newest_pages(corpus) -> None:
    texts, fps = corpus
    unbounded = NearDupIndex()
    index = NearDupIndex(window=400)
    for i, f in enumerate(fps):
        index.add(i, f)
        unbounded.add(i, f)
        assert len(index) <= 500                       # window + one generation of window / 4
    assert index.dropped == len(fps) - len(index) > 1000
    assert index.nbytes < unbounded.nbytes / 3
    held = {d for d, _ in index.to_rows()}
    assert held == set(range(len(fps) - len(index), len(fps)))   # the newest pages, all of them
    for i in (len(fps) - 1, len(fps) - 300):           # inside the window: found, as unbounded finds it
        q = winnow(texts[i] + " " + words(random.Random(i), 10))
        assert index.query(q) == unbounded.query(q) and index.query(q)[0][0] == i
    old = winnow(texts[3] + " " + words(random.Random(3), 10))
    assert unbounded.query(old)[0][0] == 3 and index.query(old) == []    # dropped out of the window
    # rebuilt from records oldest first (as the crawl reads them back), the same newest pages are kept
    records = unbounded.records()
    assert records[0][0] == 0
    back = NearDupIndex(window=400)
    back.add_records(records)
    assert {d for d, _ in back.to_rows()} == held
    with pytest.raises(ValueError):
        NearDupIndex(window=2)


def test_the_crawl_reloads_its_window_from_the_database(corpus, tmp_path) -> None:
    """What a resumed crawl reads back (skitter.api's near-duplicate index): the newest pages'
    sketches in a real crawl store, with the window the crawl runs with."""
    from skitter.api import _near_duplicate_index
    from skitter.config import CrawlConfig
    from skitter.store.crawlstore import CrawlStore

    texts, fps = corpus
    store = CrawlStore.open(tmp_path, {"seeds": ["http://127.0.0.1:1/"]}, software="test")
    live = NearDupIndex(window=400)
    for i, f in enumerate(fps[:1000]):
        store.add_sketch(live.add(10_000 + i, f))   # as the duplicate tests do
    store.commit()
    back = _near_duplicate_index(store, CrawlConfig(near_dup_window=400))
    held = {d for d, _ in back.to_rows()}
    assert 400 <= len(back) <= 500 and held <= {d for d, _ in live.to_rows()}
    assert max(held) == 10_999 and min(held) >= 10_500
    assert sorted(back.to_rows()) == sorted(r for r in live.to_rows() if r[0] in held)   # the same sketches
    q = winnow(texts[990] + " " + words(random.Random(1), 10))
    assert back.query(q)[0][0] == 10_990
    everything = _near_duplicate_index(store, CrawlConfig(near_dup_window=0))
    assert len(everything) == 1000 and everything.window is None
    assert _near_duplicate_index(store, CrawlConfig(near_duplicates="off")) is None
    store.close()


def _brute_force(index: NearDupIndex, a: np.ndarray, r_min: float, c_min: float) -> list[tuple[int, float, float]]:
    """The estimators of the module docstring applied to every stored sketch, one by one."""
    sketches: dict[int, list[int]] = {}
    for d, h in index.to_rows():
        sketches.setdefault(d, []).append(h)
    out = []
    for d, hs in sketches.items():
        sk = np.sort(np.asarray(hs, dtype=np.int64).view(np.uint64))
        hits = np.intersect1d(a, sk).size
        n_a = a.size if sk.size < index.sketch else int(np.searchsorted(a, sk[-1], "right"))
        union = n_a + sk.size - hits
        res, con = hits / max(union, 1), hits / max(n_a, 1)
        if (res >= r_min and union >= index.min_sample) or (con >= c_min and n_a >= index.min_sample):
            out.append((d, res, con))
    return sorted(out)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 1999), st.integers(0, 2), st.integers(0, 60), st.integers(0, 400),
       st.sampled_from([(RESEMBLANCE, CONTAINMENT), (0.2, 0.3), (0.9, 0.95)]))
def test_query_equals_brute_force_estimates(corpus_index, target, other, changes, extra, thresholds) -> None:
    """Looking up only the smallest ceil(S / threshold) + 1 hashes finds exactly the pages the
    estimators accept: the index agrees with a comparison against every stored sketch."""
    texts, index = corpus_index
    rng = random.Random(target * 7 + changes)
    toks = texts[target].split()
    for i in rng.sample(range(len(toks)), min(changes, len(toks))):
        toks[i] = rng.choice(_WORDS)
    text = " ".join(toks)
    if other:
        text += " " + texts[(target + 1) % len(texts)] * (other - 1)
    text += " " + words(rng, extra)
    a = winnow(text)
    got = sorted(index.query(a, threshold=thresholds[0], containment=thresholds[1]))
    want = _brute_force(index, a, *thresholds)
    assert [d for d, _, _ in got] == [d for d, _, _ in want]
    assert np.allclose([r for _, r, _ in got], [r for _, r, _ in want])
    assert np.allclose([c for _, _, c in got], [c for _, _, c in want])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 1999), st.integers(0, 60), st.integers(0, 400))
def test_a_query_needs_only_the_probes_smallest_fingerprints(corpus_index, target, changes, extra) -> None:
    """What the worker sends (``winnow_smallest(text, index.probe)``) gets the answers the whole
    fingerprint set gets, and ``add`` keeps the same sketch."""
    texts, index = corpus_index
    rng = random.Random(target * 3 + changes)
    toks = texts[target].split()
    for i in rng.sample(range(len(toks)), min(changes, len(toks))):
        toks[i] = rng.choice(_WORDS)
    text = " ".join(toks) + " " + words(rng, extra)
    full, cut = winnow(text), winnow_smallest(text, index.probe)
    assert cut.size == min(full.size, index.probe)
    assert index.query(cut) == index.query(full)
    assert index.record_for(1, cut) == index.record_for(1, full)


def test_probe_size() -> None:
    assert NearDupIndex().probe == int(np.ceil(SKETCH / min(RESEMBLANCE, CONTAINMENT))) + 1
    assert NearDupIndex(resemblance=0, containment=0.5).probe is None


@pytest.fixture(scope="module")
def corpus_index(corpus):
    texts, fps = corpus
    index = NearDupIndex(window=1200)          # several generations, some dropped
    for i, f in enumerate(fps):
        index.add(i, f)
    for i in range(0, 2000, 97):               # stored near-duplicates and small pages
        index.add(5000 + i, winnow(texts[i] + " " + words(random.Random(i), 30)))
        index.add(9000 + i, winnow(" ".join(texts[i].split()[:40])))
    return texts, index


def test_kgram_hashes_of_a_text_longer_than_the_kept_power_tables() -> None:
    import skitter.dedup as d

    rng = random.Random(7)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(d._POWERS_KEPT + 5000))
    h = kgram_hashes(text)
    assert h.size == len(text) - K + 1
    for i in [0, 1, 12345, d._POWERS_KEPT - K, d._POWERS_KEPT + 17, len(text) - K]:
        assert h[i] == kgram_hashes(text[i:i + K])[0]
    assert d._POWERS[0].size <= d._POWERS_KEPT            # the big tables were not kept


@FAST
@given(st.lists(st.integers(0, 40), max_size=60), st.lists(st.integers(0, 40), max_size=60))
def test_merging_two_runs_is_a_stable_sort_of_both(a: list[int], b: list[int]) -> None:
    from skitter.neardup import _merge, _Run
    k1, k2 = array("Q", sorted(a)), array("Q", sorted(b))
    d1, d2 = array("I", range(len(k1))), array("I", range(1000, 1000 + len(k2)))
    merged = _merge(_Run(k1, d1), _Run(k2, d2))
    order = sorted(range(len(k1) + len(k2)), key=lambda i: (k1 + k2)[i])   # a stable sort
    assert merged.keys.tolist() == [(k1 + k2)[i] for i in order]
    assert merged.docs.tolist() == [(d1 + d2)[i] for i in order]


@FAST
@given(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 60), min_size=1, max_size=300),
       st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 60), max_size=80),
       st.integers(0, 6))
def test_a_runs_bucket_directory_finds_what_bisection_finds(stored: list[int], wanted: list[int],
                                                            bits: int) -> None:
    from skitter.neardup import _Run
    keys = array("Q", sorted(stored))
    docs = array("I", range(len(keys)))
    plain = _Run(keys, docs)
    assert plain.starts is None                      # a small run: bisection
    bucketed = _Run(keys, docs)                      # the same run with a 2**bits-bucket directory
    bucketed.build_directory(bits)
    per_bucket = Counter(k >> (64 - bits) if bits else 0 for k in keys)
    assert bucketed.starts.tolist() == [sum(per_bucket[c] for c in range(b)) for b in range((1 << bits) + 1)]
    probe = wanted + stored[:20]
    want = sorted((k, p) for k in probe for p, key in enumerate(keys) if key == k)
    for run in (plain, bucketed):
        pos, hs = run.lookup(probe)
        assert sorted(zip(hs, pos)) == want


def test_a_large_run_gets_a_directory_of_8_to_16_postings_a_bucket() -> None:
    from skitter.neardup import _DIRECTORY_MIN, _Run
    rng = random.Random(7)
    for n in (_DIRECTORY_MIN - 1, _DIRECTORY_MIN, 3 * _DIRECTORY_MIN + 5):
        keys = array("Q", sorted(rng.randrange(2**63) * 2 for _ in range(n)))
        run = _Run(keys, array("I", [0]) * n)
        if n < _DIRECTORY_MIN:
            assert run.starts is None
            continue
        buckets = len(run.starts) - 1
        assert 8 <= n / buckets < 16 and run.starts[-1] == n
        assert len(run.starts) * run.starts.itemsize <= n // 2 + 8      # half a byte a posting
        pos, hs = run.lookup(keys[::997])
        assert hs == keys[::997].tolist() and [keys[p] for p in pos] == hs


def test_the_index_answers_the_same_with_bucket_directories(monkeypatch) -> None:
    """Queries over runs large enough for a directory give what bisection gives: sketches that
    share hashes (many postings per hash), boilerplate hashes over max_df, two generations."""
    import skitter.neardup as d
    rng = np.random.default_rng(11)
    common = rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)
    docs = []
    for i in range(600):
        own = rng.integers(0, 2**64 - 1, 400, dtype=np.uint64, endpoint=True)
        if i > 10 and i % 3 == 0:                        # a near-copy of an earlier document
            own = np.concatenate((docs[i // 2][:380], own[:20]))
        docs.append(np.concatenate((own, common[: i % 40])))
    answers = []
    for minimum in (1 << 40, 64):
        monkeypatch.setattr(d, "_DIRECTORY_MIN", minimum)
        index = NearDupIndex(max_df=100, window=400)
        got = []
        for i, fps in enumerate(docs):
            got.append(index.query(fps))
            index.add(i, fps)
        runs = [r for g in index._gens for r in g.runs]
        assert any(r.starts is not None for r in runs) == (minimum == 64)
        answers.append(got)
    assert answers[0] == answers[1]
    assert sum(1 for g in answers[0] if g) > 100         # the test does exercise matches


def test_the_early_exit_never_drops_a_match_at_any_threshold() -> None:
    # 7 of a stored 25-hash sketch: resemblance 7/25 = 0.28 with a union of 25 = min_sample;
    # 0.28 * 25 is 7.000000000000001 in floating point, which a ceil() made 8
    index = NearDupIndex(min_sample=25)
    stored = np.arange(1, 26, dtype=np.uint64) * np.uint64(1 << 40)
    index.add(1, stored)
    got = index.query(stored[:7], threshold=0.28, containment=0.28)
    assert [d for d, _, _ in got] == [1] and got[0][1] == pytest.approx(0.28)
