"""skitter._speedups (compiled) against the Python code it replaces, which stays the reference:
the tree walk (skitter.parse); the normalisation, k-gram hashing and winnowing selection, and the
near-duplicate index's lookups, queries and merges (skitter.dedup). Each must give exactly what the
Python code gives."""

from __future__ import annotations

import os
import subprocess
from array import array
import sys
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from skitter import boilerplate, dedup, neardup, parse
from skitter.demo.web import DemoConfig, DemoWeb

PURE = bool(os.environ.get("SKITTER_PURE_PYTHON"))
needs_speedups = pytest.mark.skipif(PURE or parse._speedups is None or dedup._speedups is None,
                                    reason="skitter._speedups not in use")

DOCS = next((p for p in (Path("/usr/share/doc/python3.11/html"), Path("/usr/share/doc/python3/html"))
             if (p / "index.html").is_file()), None)


def tree(html: bytes | str):
    data = html.encode("utf-8", "surrogatepass") if isinstance(html, str) else html
    return LexborHTMLParser(parse._defuse_deep_nesting(data), **parse._LEXBOR_KW)


def walks_agree(root) -> None:
    for want_main in (False, True):
        compiled = parse._walk_compiled(root, want_main)
        python = parse._walk_py(root, want_main)
        assert parse._same_walk(compiled, python), want_main
        assert compiled.text == python.text and compiled.boiler == python.boiler


@pytest.mark.skipif(PURE, reason="SKITTER_PURE_PYTHON is set")
def test_the_install_built_the_compiled_module_and_skitter_uses_it() -> None:
    """`pip install` (make test, CI) compiles skitter._speedups; with selectolax 1.0 its load-time
    check passes, so the crawl runs the compiled walk, hashing and lookups."""
    assert parse._speedups is not None, "skitter._speedups was not built or failed its load-time check"
    assert parse._walk is parse._walk_compiled
    assert dedup._speedups is parse._speedups


def test_skitter_pure_python_runs_the_python_code() -> None:
    code = ("import skitter.parse as p, skitter.dedup as d; "
            "assert p._speedups is None and d._speedups is None and p._walk is p._walk_py; "
            "print(p.parse_html(b'<p>one <a href=/x>two</a>', 'http://h.test/').links[0].url)")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SKITTER_PURE_PYTHON="1"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "http://h.test/x"


@needs_speedups
def test_another_selectolax_gets_the_python_walk(monkeypatch) -> None:
    import selectolax

    monkeypatch.setattr(selectolax, "__version__", "0.4.7")
    assert parse._load_speedups() is None


@needs_speedups
def test_setup_refuses_flags_that_differ_from_parses() -> None:
    ids = LexborHTMLParser(b'<a href="1" rel="2" title="3" alt="4" name="5" content="6" http-equiv="7" '
                           b'class="8" role="9" aria-hidden="10" hidden="11" style="12">').css_first("a")
    flags = {"SKIP": 1, "BLOCK": 2, "BOLD": 4, "ITALIC": 8, "A": 16, "AREA": 32, "IMG": 64,
             "HEADING": 128, "META": 256, "LINKEL": 512, "BASE": 1024, "TITLE": 2048, "BREAK": 4096,
             "BOILER": 8192, "CONTAINER": 16384, "L_BOLD": 4, "L_ITALIC": 5, "L_ALT": 7, "L_END": 3,
             "L_PREV": 9}
    sample = LexborHTMLParser(parse._SELF_CHECK).root
    try:
        with pytest.raises(ValueError):
            parse._speedups.setup(parse._KINDS, parse._TEXT_ID, dict(flags, BOLD=8), ids, [], sample)
        with pytest.raises(ValueError):   # a link record laid out otherwise
            parse._speedups.setup(parse._KINDS, parse._TEXT_ID, dict(flags, L_ALT=8), ids, [], sample)
        with pytest.raises(ValueError):   # the sample must carry the walk's attributes, in order
            parse._speedups.setup(parse._KINDS, parse._TEXT_ID, flags,
                                  LexborHTMLParser(b'<a rel="1" href="2">').css_first("a"), [], sample)
    finally:
        assert parse._load_speedups() is not None   # set up again as skitter.parse does


# ---------------------------------------------------------------------------------------------
# the tree walk

TAGS = st.sampled_from(
    "a b i em strong p div section span nav ul ol li header footer aside form table td tr main "
    "article h1 h2 h3 title meta link base area map img br hr input script style noscript template "
    "iframe select option button textarea svg math pre code x-custom body html head".split())
ATTRS = st.sampled_from([
    'href="/p"', 'href=""', "href", 'href="http://other.test/x"', 'href="javascript:void(0)"',
    'rel="nofollow"', 'rel="canonical"', 'REL="NoFollow ugc"', 'title="T"', 'alt="pic"', 'alt=""',
    'name="description"', 'name="robots"', 'content="noindex, nofollow"', 'content="a, b"',
    'http-equiv="content-language"', 'class="nav"', 'class="menu-item"', 'class="site-footer"',
    'class="skip-link"', 'class="Skip"', 'class="wrapper nav"', 'class="hidden"', 'class="ad-1f"',
    'class="share"', 'id="footer"', 'id="main"', 'id="sidebar"', 'role="navigation"', 'role="main"',
    'aria-hidden="true"', 'aria-hidden="false"', "hidden", 'style="display:none"',
    'style="color: red"', 'data-x="1"', 'lang="de"', 'xlink:href="/svg"',
    'data-a-very-long-attribute-name="y"'])
WORDS = st.sampled_from([
    "alpha", "beta gamma", " ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x01",
    "\x7f", "a  b", "a\tb", " lead", "trail ", "\u00a0", "\u2003", "x\u00a0y", "é", "日本語",
    "&amp;", "&nbsp;", "&lt;b&gt;", "&#0;", "&bogus;", "<!-- c -->", "<!doctype html>", "x" * 40,
    "\ufffd", "\U0001F600"])


@st.composite
def documents(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 4))
        if kind <= 1:
            parts.append(draw(WORDS))
        elif kind == 2:
            attrs = draw(st.lists(ATTRS, max_size=4))
            parts.append(f"<{draw(TAGS)}{''.join(' ' + a for a in attrs)}>")
        elif kind == 3:
            parts.append(f"</{draw(TAGS)}>")
        else:
            parts.append(draw(st.text(max_size=8)))
    return "".join(parts)


@needs_speedups
@given(documents())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_compiled_walk_equals_python_walk_on_arbitrary_markup(html: str) -> None:
    walks_agree(tree(html).root)


@needs_speedups
@given(st.binary(max_size=600))
@settings(max_examples=200, deadline=None)
def test_compiled_walk_equals_python_walk_on_arbitrary_bytes(body: bytes) -> None:
    root = tree(body).root            # invalid UTF-8 too: lexbor keeps it, both replace it
    if root is not None:
        walks_agree(root)


@needs_speedups
@given(documents(), st.sampled_from(["http://h.test/a/b.html", "https://x.test/", "not a url"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_pages_are_the_same_with_either_walk(html: str, url: str) -> None:
    body = html.encode("utf-8", "surrogatepass")
    compiled = parse.parse_with_main_text(body, url, "text/html")
    saved = parse._walk
    parse._walk = parse._walk_py
    try:
        python = parse.parse_with_main_text(body, url, "text/html")
    finally:
        parse._walk = saved
    assert compiled == python


@needs_speedups
def test_text_is_collapsed_as_the_python_walk_does() -> None:
    html = ("<p>a\x1cb \x0b c\x7fd  e\x01f\tg</p><p> x\u00a0 y\u2003z </p><div>\x1f</div>"
            "<p>caf\u00e9  bar</p><b>\r\n</b><i>end</i>")
    root = tree(html).root
    walks_agree(root)
    assert "a b c\x7fd e\x01f g" in parse._walk_compiled(root).text


@needs_speedups
def test_deep_nesting_grows_the_walks_stack() -> None:
    html = "<span>" * 5000 + "deep <a href='/d'>link</a>" + "</span>" * 5000
    root = tree(html).root
    walks_agree(root)
    assert parse._walk_compiled(root).links[0][0] == "/d"


def test_a_container_without_attributes_is_boilerplate_only_if_a_landmark() -> None:
    """The rule the compiled walk relies on when it does not ask about such containers."""
    for tag in boilerplate.CONTAINER_TAGS.split():
        for depth in range(6):
            html = "<body>" + "<div>" * depth + f"<{tag}>x</{tag}>" + "<p>after</p>" + "</div>" * depth
            node = next(n for n in tree(html).root.css(tag) if not n.attributes and
                        boilerplate.depth_below_body(n) == depth)
            if tag not in boilerplate.LANDMARKS:
                assert not boilerplate.is_boilerplate(node, depth), (tag, depth)
                assert not boilerplate.is_boilerplate(node), (tag, depth)


@needs_speedups
def test_walks_agree_on_the_demo_web() -> None:
    web = DemoWeb(DemoConfig(), [f"http://127.0.0.{i + 2}:8123" for i in range(DemoConfig().hosts)])
    checked = 0
    for url in web.pages():
        p = urlsplit(url)
        resp = web.respond(f"{p.scheme}://{p.netloc}", p.path + (f"?{p.query}" if p.query else ""))
        if (resp.header("Content-Type") or "").startswith("text/html"):
            text, _ = parse.decode_body(resp.body, resp.header("Content-Type"))
            walks_agree(tree(text).root)
            checked += 1
    assert checked > 300


@needs_speedups
@pytest.mark.skipif(DOCS is None, reason="python3.11-doc is not installed (.ci/run installs it)")
def test_walks_agree_on_pages_nobody_here_wrote() -> None:
    files = sorted(DOCS.rglob("*.html"))
    assert len(files) > 400
    for f in files[::3]:
        walks_agree(tree(f.read_bytes()).root)


# ---------------------------------------------------------------------------------------------
# winnowing and the near-duplicate index

# ASCII, symbols normalising drops, letters that case-fold to ASCII (Kelvin sign, long s), to
# several letters (ß, ﬁ) or stay non-ASCII (é, Σ, 日), and U+0345 (no letter; case-folds to one)
MIXED = ("abcxyz019 ABCXYZ .,-_\n\t\u00a0©®“”‘’–—…€\u212a\u017f\u00df\ufb01éÉΣσς日本\u0301\u0345")

TEXTS = st.one_of(
    st.text(alphabet=st.sampled_from("abcdefghij ABC,.-0123"), max_size=3000),
    st.text(max_size=800),
    st.builds(lambda words, n: " ".join(words) * n,
              st.lists(st.sampled_from(["the", "ship", "Ä", "日本", "x1", "ΣΑΣ"]), max_size=30),
              st.integers(1, 40)),
)


def python_dedup():
    """A context in which skitter.dedup runs its NumPy code, and skitter.neardup its Python code."""
    class Pure:
        def __enter__(self):
            self.saved = dedup._speedups, neardup._speedups
            dedup._speedups = neardup._speedups = None

        def __exit__(self, *exc):
            dedup._speedups, neardup._speedups = self.saved

    return Pure()


@needs_speedups
@given(TEXTS, st.integers(1, 30), st.integers(1, 16), st.integers(1, 300))
@settings(max_examples=300, deadline=None)
def test_compiled_hashing_and_selection_equal_numpys(text: str, k: int, w: int, count: int) -> None:
    compiled = (dedup._codepoints(text), dedup.kgram_hashes(text, k),
                dedup.winnow_smallest(text, count, k, w))
    with python_dedup():
        python = (dedup._codepoints(text), dedup.kgram_hashes(text, k),
                  dedup.winnow_smallest(text, count, k, w))
        full = dedup.winnow(text, k, w)
    for a, b in zip(compiled, python):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    assert compiled[2].tolist() == full[:count].tolist()


@needs_speedups
@given(TEXTS | st.text(alphabet=MIXED, max_size=400), st.integers(1, 30), st.integers(1, 16),
       st.integers(1, 300))
@settings(max_examples=300, deadline=None)
def test_the_workers_fingerprints_without_numpy_equal_the_references(text: str, k: int, w: int,
                                                                     count: int) -> None:
    """skitter.winnow (the analysis worker's, over array buffers) gives winnow_smallest's values."""
    from skitter import winnow

    got = winnow.smallest(text, count, k, w)
    assert got.typecode == "Q"
    with python_dedup():
        assert got.tolist() == dedup.winnow_smallest(text, count, k, w).tolist()


@needs_speedups
def test_the_workers_power_tables_and_a_page_longer_than_the_kept_ones() -> None:
    from skitter import winnow

    tables = dedup._power_tables(1000)
    for base, table in zip((winnow.BASE, winnow.BASE_INV), tables):
        out = array("Q", [0]) * 1000
        dedup._speedups.fill_powers(base, out)
        assert out.tolist() == table.tolist()
    text = " ".join(f"word{i} other{i % 97}" for i in range(30000))   # past POWERS_KEPT code points
    assert len(dedup.normalise(text)) > winnow.POWERS_KEPT
    with python_dedup():
        assert winnow.smallest(text, 129).tolist() == dedup.winnow_smallest(text, 129).tolist()


@needs_speedups
@given(st.text(alphabet=MIXED, max_size=300) | st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_the_compiled_code_points_are_those_of_normalise(text: str) -> None:
    """ascii_codepoints: normalise()'s code points when they are all ASCII, else -1 and the case-
    folded text's letters and digits from alnum_codepoints."""
    sp = dedup._speedups
    want = [ord(c) for c in dedup.normalise(text)]
    out8 = bytearray(len(text))
    m = sp.ascii_codepoints(text, out8)
    if m >= 0:
        assert list(out8[:m]) == want
    else:
        assert any(ord(c) >= 128 and c.isalnum() for c in text) or "\u0345" in text
        folded = text.casefold()
        out32 = array("I", [0]) * len(folded)
        assert out32[:sp.alnum_codepoints(folded, out32)].tolist() == want


def test_u0345_is_the_one_character_that_is_no_letter_but_case_folds_to_one() -> None:
    """ascii_codepoints' one exception, checked against this Python's Unicode tables."""
    odd = [c for c in range(128, sys.maxunicode + 1)
           if not chr(c).isalnum() and any(ch.isalnum() for ch in chr(c).casefold())]
    assert odd == [0x345]


@needs_speedups
def test_compiled_selection_on_a_long_page() -> None:
    text = " ".join(f"word{i % 997} other{i % 89}" for i in range(20000))
    got = dedup.winnow_smallest(text, 64)
    with python_dedup():
        assert got.tolist() == dedup.winnow_smallest(text, 64).tolist()
        assert got.tolist() == dedup.winnow(text)[:64].tolist()


@needs_speedups
@given(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), min_size=1, max_size=400),
       st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), max_size=60), st.integers(0, 7))
@settings(max_examples=300, deadline=None)
def test_compiled_run_lookup_and_directory_equal_pythons(stored: list[int], wanted: list[int], bits: int) -> None:
    keys = array("Q", sorted(stored))
    runs = [neardup._Run(keys, array("I", range(len(keys)))) for _ in range(2)]
    runs[1].build_directory(bits)
    with python_dedup():
        reference = neardup._Run(keys, runs[1].docs)
        reference.build_directory(bits)
    assert runs[1].starts.tolist() == reference.starts.tolist()
    probe = wanted + stored[::7]
    for run in runs:
        got = run.lookup(probe)
        with python_dedup():
            assert run.lookup(probe) == got


@needs_speedups
@pytest.mark.parametrize("max_df, directory_min", [(100, 1 << 40), (5000, 64)])
def test_compiled_queries_equal_pythons(max_df: int, directory_min: int, monkeypatch) -> None:
    """Whole queries: the compiled count and candidate steps against the Python ones, with
    near-copies, hashes over max_df (which the Python path handles), two generations, directories,
    low thresholds (many candidates) and the index's own."""
    rng = np.random.default_rng(5)
    common = rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)
    docs = []
    for i in range(500):
        own = rng.integers(0, 2**64 - 1, 300, dtype=np.uint64, endpoint=True)
        if i > 10 and i % 3 == 0:
            own = np.concatenate((docs[i // 2][: 200 + i % 100], own[:30]))
        if i % 7 == 0:                                   # a tiny page: two of an earlier page's hashes
            own = docs[i // 2][:2] if i else own[:2]
        docs.append(np.concatenate((own, common[: i % 40])))
    monkeypatch.setattr(neardup, "_DIRECTORY_MIN", directory_min)
    index = neardup.NearDupIndex(max_df=max_df, window=350)
    matched = 0
    for i, fps in enumerate(docs):
        for args in ((), (0.2,), (0.9,), (0.01,)):
            kw = {"containment": 0.3} if args == (0.2,) else {"containment": 0.01} if args == (0.01,) else {}
            got = index.query(fps, *args, **kw)
            counts = (index.last_candidates, index.last_compared)
            with python_dedup():
                assert index.query(fps, *args, **kw) == got
                assert (index.last_candidates, index.last_compared) == counts
            matched += bool(got)
        index.add(i, fps)
    assert matched > 150 and len(index._gens) > 1
    assert any(r.starts is not None for g in index._gens for r in g.runs) == (directory_min == 64)


@needs_speedups
@given(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 30), max_size=300),
       st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 30), max_size=100))
@settings(max_examples=300, deadline=None)
def test_compiled_merge_equals_pythons(older: list[int], newer: list[int]) -> None:
    k1, k2 = array("Q", sorted(older)), array("Q", sorted(newer))
    runs = (neardup._Run(k1, array("I", range(len(k1)))),
            neardup._Run(k2, array("I", range(len(k1), len(k1) + len(k2)))))
    compiled = neardup._merge(*runs)
    with python_dedup():
        python = neardup._merge(*runs)
    assert compiled.keys.typecode == python.keys.typecode and compiled.docs.typecode == python.docs.typecode
    assert compiled.keys.tolist() == python.keys.tolist()
    assert compiled.docs.tolist() == python.docs.tolist()     # the older run first among equal keys


# ---------------------------------------------------------------------------------------------
# the search index's analyzer (skitter.index.analyze: words, column)

from skitter.index import analyze  # noqa: E402

needs_analyzer = pytest.mark.skipif(analyze._speedups is None, reason="skitter._speedups not in use")

ANALYZER_TEXTS = st.one_of(
    st.text(max_size=600),                                                  # any Unicode
    st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=600),      # one-byte (Latin-1) texts
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300).map(str.upper),
    st.builds(lambda ws, sep: sep.join(ws),                                 # words, stop words, limits
              st.lists(st.sampled_from(["The", "ship", "SHIPS", "don't", "Café", "ﬁne", "Σ", "ΣΑΣ", "ς",
                                        "İstanbul", "½", "e-mail", "a_b", "x" * 40, "y" * 41, "日本",
                                        "Straße", "™", "ǅ", "١٢٣", "themselves", "ⅻ", "\u0345"]),
                       max_size=40),
              st.sampled_from([" ", "", "-", "\u00a0", "’", "\u2014", "_", "\ud800"])),
)


def agree(text: str, counts: dict | None = None) -> None:
    assert analyze.words(text) == analyze._words_py(text)
    before = dict(counts or {})
    c_compiled, c_python = dict(before), dict(before)
    assert analyze.column(text, c_compiled) == analyze._column_py(text, c_python)
    assert c_compiled == c_python


@needs_analyzer
@given(ANALYZER_TEXTS)
@settings(max_examples=1500, deadline=None)
def test_compiled_analyzer_equals_the_regex_on_arbitrary_text(text: str) -> None:
    agree(text, {"ship": 3, "cafe": 1})


@needs_analyzer
def test_compiled_analyzer_on_every_character() -> None:
    """Each code point alone, between letters and as a word of its own: folding, the split."""
    import sys as _sys
    for lo in range(0, _sys.maxunicode + 1, 4096):
        chunk = "".join(chr(c) for c in range(lo, lo + 4096))
        agree(chunk)
        agree(" a".join(chunk))
        agree(chunk.upper())


@needs_analyzer
def test_compiled_vocabulary_grows_clears_and_counts() -> None:
    many = " ".join(f"w{i}x" for i in range(30_000))       # past the first table sizes: rehashes
    agree(many)
    analyze._speedups.clear_vocabulary()
    assert analyze._speedups.vocabulary_size() == 0
    agree(many + " " + many, {"w1x": 5})
    assert analyze._speedups.vocabulary_size() >= 30_000
    with pytest.raises(ValueError):
        analyze._speedups.column("one two", {}, lambda ws: ws[:1])   # a stemmer that loses words
    agree("one two one")                                            # the failed call left no trace


@needs_analyzer
def test_compiled_analyzer_on_the_demo_web() -> None:
    from skitter.index.analyze import url_words

    web = DemoWeb(DemoConfig(), [f"http://127.0.0.{i + 2}:8123" for i in range(DemoConfig().hosts)])
    counts_c: dict = {}
    counts_py: dict = {}
    checked = 0
    for url in web.pages():
        p = urlsplit(url)
        resp = web.respond(f"{p.scheme}://{p.netloc}", p.path + (f"?{p.query}" if p.query else ""))
        if (resp.header("Content-Type") or "").startswith("text/html"):
            text, _ = parse.decode_body(resp.body, resp.header("Content-Type"))
            page = parse.parse_html(text.encode(), url)
            for value in (page.title or "", page.text or "", url_words(url)):
                assert analyze.column(value, counts_c) == analyze._column_py(value, counts_py)
            checked += 1
    assert checked > 300 and counts_c == counts_py


@needs_analyzer
@pytest.mark.skipif(DOCS is None, reason="python3.11-doc is not installed (.ci/run installs it)")
def test_compiled_analyzer_on_pages_nobody_here_wrote() -> None:
    files = sorted(DOCS.rglob("*.html"))
    for f in files[::2]:
        text = parse.parse_html(f.read_bytes(), f.as_uri()).text or ""
        agree(text)


@needs_analyzer
def test_compiled_column_from_several_threads() -> None:
    """One vocabulary: a call while another thread's runs (its stemmer let the other thread in)
    is refused with ColumnBusy, and analyze.column then gives the same result in Python."""
    import threading
    import time as _time

    def slow_stemmer(ws):
        _time.sleep(0.05)      # lets the other thread run
        return analyze._INDEX_STEMMER.stemWords(ws)

    analyze._speedups.clear_vocabulary()
    started = threading.Event()

    def first():
        started.set()
        analyze._speedups.column("quiet harbour ships", {}, slow_stemmer)

    t = threading.Thread(target=first)
    t.start()
    started.wait()
    _time.sleep(0.01)
    with pytest.raises(analyze._speedups.ColumnBusy):
        analyze._speedups.column("other words", {}, slow_stemmer)
    t.join()
    texts = [f"thread {i} Café ships harbour {i * 7} words" * 50 for i in range(8)]
    want = [analyze._column_py(x, {}) for x in texts]
    got: list = [None] * len(texts)

    def work(i):
        for _ in range(20):
            got[i] = analyze.column(texts[i], {})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got == want
