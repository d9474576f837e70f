"""The index and the query engine on a real (small) crawl of the demo web, checked against the
brute-force reference evaluator (tests/search_reference.py) for every operator."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.errors import CrawlDirError, QuerySyntaxError, UsageError
from skitter.index import COLUMNS, IndexMissingError, Indexer, analyze
from skitter.index import indexer as indexer_mod
from skitter.index.indexer import stored_columns
from skitter.search import Searcher
from skitter.search.query import And, DateFilter, Near, Not, Or, Site, Term, Xor, unparse
from search_reference import Reference
from skitter.urls import fingerprint


def crawl_demo(directory: Path, *, hosts: int = 3, pages: int = 300, seed: int = 3):
    with DemoServer(DemoConfig(hosts=hosts, pages=pages, seed=seed, crawl_delay=0)) as srv:
        res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(directory),
                              "--delay", "0", "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet"],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return srv.web


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    d = tmp_path_factory.mktemp("idx") / "crawl"
    web = crawl_demo(d)
    before = hashlib.sha256((d / "crawl.db").read_bytes()).hexdigest()
    stats = Indexer(d).rebuild()
    after = hashlib.sha256((d / "crawl.db").read_bytes()).hexdigest()
    assert before == after, "indexing must not write the crawl database"
    return d, web, stats


@pytest.fixture(scope="module")
def ref(crawl):
    return Reference(crawl[0])


@pytest.fixture(scope="module")
def searcher(crawl):
    s = Searcher(crawl[0])
    yield s
    s.close()


def fts_rows(directory: Path) -> dict[int, tuple]:
    """The analysed columns of every indexed page, after checking that the (contentless) FTS
    table holds exactly their postings: the per-column document count of every term, from
    fts5vocab, equals the count from the stored columns (a stale posting would show)."""
    rows = stored_columns(directory)
    expected: Counter = Counter()
    for cols in rows.values():
        for c, text in zip(COLUMNS, cols):
            expected.update((t, c) for t in set(text.split()))
    conn = sqlite3.connect(directory / "index.db")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vc USING fts5vocab(main, fts, col)")
        conn.execute("CREATE VIRTUAL TABLE temp.va USING fts5vocab(main, fta, col)")
        got = Counter({(t, c): n for t, c, n in conn.execute("SELECT term, col, doc FROM temp.vc")})
        got.update({(t, c): n for t, c, n in conn.execute("SELECT term, col, doc FROM temp.va")})
        n_fts = conn.execute("SELECT count(*) FROM fts").fetchone()[0]
        n_fta = conn.execute("SELECT count(*) FROM fta").fetchone()[0]
        n_meta = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'n_docs'").fetchone()[0])
    finally:
        conn.close()
    assert got == expected
    assert n_fts == n_meta == len(rows)
    assert n_fta == sum(1 for cols in rows.values() if cols[COLUMNS.index("anchors")])
    return rows


# ------------------------------------------------------------------------------ analyzer

def test_analyzer():
    assert analyze.tokens("The Running DOGS, running!") == ["run", "dog", "run"]
    assert analyze.tokens("Café crème brûlée") == ["cafe", "creme", "brule"]
    assert analyze.tokens("e-mail snake_case x2") == ["e", "mail", "snake", "case", "x2"]
    assert analyze.tokens("of the and") == []
    assert analyze.tokens("a" * 41 + " ok") == ["ok"]
    assert analyze.url_words("http://www.Ex.com:8080/blue-whales/2.html?q=1") == "www Ex com 8080 blue whales 2 html q 1"


def test_the_analyzer_id_is_the_one_earlier_indexes_recorded():
    """index.db records which analyzer built it; the id's digest is SHA-1 (without OpenSSL in the
    index process): the same as hashlib's, so indexes built before are not rebuilt."""
    stop = hashlib.sha1(" ".join(sorted(analyze.STOP_WORDS)).encode()).hexdigest()[:12]
    assert indexer_mod._analyzer_id() == f"unicode-words/english-porter2/stop-{stop}/max{analyze.MAX_TOKEN}"


# ------------------------------------------------------------------------------ contents

def test_what_is_indexed(crawl, ref):
    d, web, stats = crawl
    rows = fts_rows(d)
    assert set(rows) == set(ref.docs)
    assert stats.docs == len(rows) and stats.indexed == len(rows)
    conn = sqlite3.connect(d / "crawl.db")
    noindex = {r[0] for r in conn.execute("SELECT fp FROM fetches WHERE noindex = 1")}
    dups = {r[0] for r in conn.execute("SELECT fp FROM fetches WHERE duplicate_of IS NOT NULL")}
    pages = {r[0] for r in conn.execute("SELECT fp FROM pages")}
    conn.close()
    assert noindex and dups, "the demo web has noindex pages and exact duplicates"
    assert not (noindex | dups) & set(rows)
    assert set(rows) == pages - noindex - dups
    # every column as the reference analyses it (anchors included)
    for fp, cols in rows.items():
        assert list(cols) == [" ".join(ref.docs[fp].columns[c]) for c in COLUMNS]
    assert any(cols[COLUMNS.index("anchors")] for cols in rows.values())


def test_index_is_a_separate_file_and_readers_need_it(crawl, tmp_path):
    d, _, _ = crawl
    assert (d / "index.db").exists()
    with pytest.raises(CrawlDirError):
        Indexer(tmp_path)
    (tmp_path / "crawl.db").write_bytes((d / "crawl.db").read_bytes())
    with pytest.raises(IndexMissingError, match="skitter index"):
        Searcher(tmp_path)


def test_page_text_is_stored_deflated_and_older_text_rows_read_the_same(crawl, searcher, tmp_path):
    from skitter.store.text import page_text
    d, _, _ = crawl
    conn = sqlite3.connect(d / "crawl.db")
    rows = conn.execute("SELECT fp, text FROM pages").fetchall()
    conn.close()
    assert rows and all(isinstance(t, bytes) for _, t in rows)            # deflated BLOBs
    plain = {fp: page_text(t) for fp, t in rows}
    assert sum(map(len, (t for _, t in rows))) < 0.6 * sum(len(t.encode()) for t in plain.values())
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(d / "crawl.db", old / "crawl.db")
    conn = sqlite3.connect(old / "crawl.db")   # a crawl directory from before: TEXT rows
    conn.executemany("UPDATE pages SET text = ? WHERE fp = ?", [(t, fp) for fp, t in plain.items()])
    conn.commit()
    conn.close()
    Indexer(old).rebuild()
    found = 0
    with Searcher(old) as s:
        for q in ("river", "river OR garden", '"the sea"', "water NOT sea"):
            got, want = s.search(q, limit=20), searcher.search(q, limit=20)
            assert [(h.url, h.snippet) for h in got.hits] == [(h.url, h.snippet) for h in want.hits]
            assert got.total == want.total
            found += len(want.hits)
    assert found > 0


def test_a_corrupt_page_text_is_one_error_line(crawl, tmp_path):
    d, _, _ = crawl
    shutil.copy(d / "crawl.db", tmp_path / "crawl.db")
    conn = sqlite3.connect(tmp_path / "crawl.db")
    conn.execute("UPDATE pages SET text = ? WHERE fp = (SELECT min(fp) FROM pages)", (b"not deflate",))
    conn.commit()
    conn.close()
    res = subprocess.run([sys.executable, "-m", "skitter", "index", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and "corrupt page text" in res.stderr


def _copy_with_a_corrupt_page(src: Path, dst: Path, offset: int) -> tuple[sqlite3.Connection, int, bytes]:
    """crawl.db copied into ``dst`` with the text of its ``offset``-th indexable page (fetch order)
    made unreadable: (a connection to the copy, that page's fp, its real text to put back)."""
    shutil.copy(src / "crawl.db", dst / "crawl.db")
    conn = sqlite3.connect(dst / "crawl.db")
    fp, text = conn.execute(
        "SELECT p.fp, p.text FROM pages p JOIN fetches f ON f.fp = p.fp WHERE f.noindex = 0"
        " AND f.duplicate_of IS NULL ORDER BY f.fetch_order LIMIT 1 OFFSET ?", (offset,)).fetchone()
    conn.execute("UPDATE pages SET text = ? WHERE fp = ?", (b"not deflate", fp))
    conn.commit()
    return conn, fp, text


@pytest.mark.parametrize("pipelined", [False, True])
def test_a_chunk_that_fails_is_rolled_back_and_the_next_update_redoes_it(crawl, tmp_path, pipelined):
    """Each chunk of pages is one transaction on index.db: a page that cannot be read (corrupt
    text) in the third chunk leaves the first two indexed and nothing of the third; once the page
    is readable again, an update gives what a rebuild gives."""
    d, _, _ = crawl
    conn, fp, text = _copy_with_a_corrupt_page(d, tmp_path, 80)
    order = conn.execute("SELECT fetch_order FROM fetches WHERE fp = ?", (fp,)).fetchone()[0]
    with pytest.raises(CrawlDirError, match="corrupt page text"):
        Indexer(tmp_path, chunk=37).update(pipelined=pipelined)
    idx = sqlite3.connect(tmp_path / "index.db")
    last = json.loads(idx.execute("SELECT value FROM meta WHERE key = 'last_order'").fetchone()[0])
    idx.close()
    assert 0 < last < order                       # the chunks before the bad page committed
    partial = fts_rows(tmp_path)                  # and the FTS postings match their documents
    assert 0 < len(partial) and fp not in partial
    conn.execute("UPDATE pages SET text = ? WHERE fp = ?", (text, fp))
    conn.commit()
    conn.close()
    Indexer(tmp_path, chunk=37).update(pipelined=pipelined)
    assert fts_rows(tmp_path) == fts_rows(d)


def test_incremental_update_equals_rebuild(crawl, tmp_path):
    """Index a crawl cut at half its fetches, then the whole crawl with update(): same index as
    a rebuild (pages added, anchors of already indexed pages refreshed)."""
    d, _, _ = crawl
    part = tmp_path / "part"
    part.mkdir()
    shutil.copy(d / "crawl.db", part / "crawl.db")
    conn = sqlite3.connect(part / "crawl.db")
    half = conn.execute("SELECT max(fetch_order) / 2 FROM fetches").fetchone()[0]
    late = [r[0] for r in conn.execute("SELECT fp FROM fetches WHERE fetch_order > ?", (half,))]
    conn.executemany("DELETE FROM links WHERE src = ?", [(fp,) for fp in late])
    conn.executemany("DELETE FROM pages WHERE fp = ?", [(fp,) for fp in late])
    conn.execute("DELETE FROM fetches WHERE fetch_order > ?", (half,))
    conn.commit()
    conn.close()
    Indexer(part, chunk=37).update()
    partial = fts_rows(part)
    assert 0 < len(partial) < len(fts_rows(d))
    shutil.copy(d / "crawl.db", part / "crawl.db")   # the crawl went on: links rowids grow
    # the crawl's links table is append-only: the copy has the same rows, so the late pages'
    # links (which were deleted above) now have higher rowids only if re-inserted; emulate that
    conn = sqlite3.connect(part / "crawl.db")
    conn.execute("CREATE TEMP TABLE l AS SELECT * FROM links WHERE src IN (SELECT fp FROM fetches WHERE fetch_order > ?)",
                 (half,))
    conn.execute("DELETE FROM links WHERE src IN (SELECT fp FROM fetches WHERE fetch_order > ?)", (half,))
    conn.execute("INSERT INTO links SELECT * FROM temp.l")
    conn.commit()
    conn.close()
    lazy = Indexer(part, chunk=37).update(exact_anchors=False)   # as during a crawl
    assert lazy.indexed > 0
    stats = Indexer(part, chunk=37).update()                       # as when it ends
    assert stats.indexed == 0 and lazy.anchors_refreshed + stats.anchors_refreshed > 0

    def anchors_sorted(rows):   # links re-inserted above come in another order
        a = COLUMNS.index("anchors")
        return {fp: cols[:a] + (sorted(cols[a].split()),) + cols[a + 1:] for fp, cols in rows.items()}

    assert anchors_sorted(fts_rows(part)) == anchors_sorted(fts_rows(d))
    again = Indexer(part).update()
    assert again.indexed == 0 and again.anchors_refreshed == 0


def test_anchors_are_the_first_links_by_rowid_in_any_batches(crawl, monkeypatch):
    """The anchors table holds, for every link target, the anchor text of its first MAX_ANCHORS
    links by rowid (self-links and empty anchors left out), whether the links are read in one
    range or in many (a rebuild reads in batches, a crawl's updates in the ranges they find)."""
    d, _, _ = crawl
    monkeypatch.setattr(indexer_mod, "MAX_ANCHORS", 3)
    crawl_conn = sqlite3.connect(d / "crawl.db")
    links = crawl_conn.execute("SELECT dst, anchor FROM links WHERE src != dst AND anchor IS NOT NULL"
                               " AND anchor != '' ORDER BY rowid").fetchall()
    top = crawl_conn.execute("SELECT max(rowid) FROM links").fetchone()[0]
    expected: dict[int, list[str]] = {}
    for dst, anchor in links:
        got = expected.setdefault(dst, [])
        if len(got) < 3:
            got.append(anchor)
    assert max(map(len, expected.values())) == 3 and min(map(len, expected.values())) < 3
    try:
        for ranges, batch in (([(0, top)], 10**9), ([(0, top)], 7), ([(0, top // 3), (top // 3, top)], 50)):
            idx = sqlite3.connect(":memory:")
            idx.execute("CREATE TABLE anchors (dst INTEGER PRIMARY KEY, n INTEGER NOT NULL, text TEXT NOT NULL)")
            counts = {}
            for lo, hi in ranges:
                counts.update(indexer_mod._ingest_anchors(crawl_conn, idx, lo, hi, batch=batch))
            table = {dst: (n, text) for dst, n, text in idx.execute("SELECT dst, n, text FROM anchors")}
            assert table == {dst: (len(a), " \n ".join(a)) for dst, a in expected.items()}
            assert counts == {dst: len(a) for dst, a in expected.items()}
            idx.close()
    finally:
        crawl_conn.close()


@pytest.mark.parametrize("version", [3, 4])
def test_an_index_of_an_earlier_layout_is_built_again(crawl, tmp_path, version):
    """Versions 3 and 4 had the anchor text as a column of fts: readers ask for `skitter index`,
    and the next update (a crawl's, or `skitter index DIR --update`) indexes the crawl again, into
    the index a rebuild makes."""
    d, _, _ = crawl
    work = tmp_path / "c"
    work.mkdir()
    shutil.copy(d / "crawl.db", work / "crawl.db")
    Indexer(work).rebuild()
    rebuilt = fts_rows(work)
    n = len(rebuilt)
    idx = sqlite3.connect(work / "index.db")
    idx.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(version),))
    idx.commit()
    idx.close()
    with pytest.raises(IndexMissingError, match="skitter index"):   # readers do not migrate
        Searcher(work)
    stats = Indexer(work).update()
    assert stats.indexed == n
    assert fts_rows(work) == rebuilt
    Searcher(work).close()



def _damage(db: Path, keep: int = 1, table: str | None = None) -> None:
    """Overwrite every page of ``db`` after its first ``keep`` with garbage, or (``table``) every
    leaf page of that table, as a disk error could leave it (``db`` checkpointed: its writers
    closed)."""
    pages = None
    if table is not None:
        conn = sqlite3.connect(db)
        pages = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
        conn.close()
        assert pages
    with open(db, "r+b") as fh:
        if pages is None:
            fh.seek(4096 * keep)
            fh.write(bytes(range(256)) * ((db.stat().st_size - 4096 * keep) // 256))
        for n in pages or ():
            fh.seek(4096 * (n - 1))
            fh.write(bytes(range(256)) * 16)


@pytest.mark.parametrize("how", ["docs", "pages", "header"])
def test_a_damaged_index_is_made_again_by_the_next_update(crawl, tmp_path, how):
    """index.db is made from crawl.db: the next update removes a damaged index and makes it
    again from the crawl's first fetch, and says so (``stats.damaged``), once: a live step with its
    connections kept open, and `skitter index --update`. The damage shows when the update reads a
    table (``docs``: the update's retry, its connections opened again), or when SQLite opens the
    file (every page but the first, or the header too)."""
    from skitter.index.step import live_close, live_step

    d, _, _ = crawl
    work = tmp_path / "c"
    work.mkdir()
    shutil.copy(d / "crawl.db", work / "crawl.db")

    def damage():
        if how == "docs":
            _damage(work / "index.db", table="docs")
        else:
            _damage(work / "index.db", keep=1 if how == "pages" else 0)

    Indexer(work, chunk=40).update(max_pages=80)
    damage()
    step = live_step(str(work), 40)
    try:
        assert step["damaged"] and "made again from the crawl" in step["damaged"]
        assert step["indexed"] + step["skipped"] == 40              # from the first fetch on
        assert live_step(str(work), 40)["damaged"] is None          # said once
    finally:
        live_close(str(work))
    damage()
    res = subprocess.run([sys.executable, "-m", "skitter", "index", "--update", "--quiet", str(work)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("skitter: WARNING: the search index") and len(res.stderr.splitlines()) == 1
    assert fts_rows(work) == fts_rows(d)
    Searcher(work).close()
    damage()
    Indexer(work).rebuild()                                         # `skitter index DIR` too
    assert fts_rows(work) == fts_rows(d)


def test_a_locked_index_is_not_damaged(crawl, tmp_path):
    """Only SQLite's "corrupt" or "not a database" makes an index damaged: not a lock another
    process holds on index.db (its quick check cannot read it then), nor a "corrupt" from crawl.db
    while index.db is locked. The index is left alone."""
    d, _, _ = crawl
    work = tmp_path / "c"
    work.mkdir()
    shutil.copy(d / "crawl.db", work / "crawl.db")
    Indexer(work, chunk=40).update(max_pages=40)
    before = fts_rows(work)
    bad = tmp_path / "bad.db"                  # a real "corrupt" error, as crawl.db would raise it
    shutil.copy(d / "crawl.db", bad)
    _damage(bad, table="pages")
    with pytest.raises(sqlite3.DatabaseError) as corrupt:
        sqlite3.connect(bad).execute("SELECT count(text) FROM pages").fetchone()
    assert corrupt.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_CORRUPT
    holder = sqlite3.connect(work / "index.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        probe = sqlite3.connect(work / "index.db", timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked") as locked:
            probe.execute("SELECT count(*) FROM docs").fetchone()
        probe.close()
        ix = Indexer(work)
        assert not ix._index_damaged(locked.value)
        assert not ix._index_damaged(indexer_mod.IndexMissingError("cannot open the search index"))
        assert not ix._index_damaged(corrupt.value)   # its quick check could not read index.db
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert Indexer(work)._index_damaged(corrupt.value) is False   # index.db is sound
    assert fts_rows(work) == before


def test_a_damaged_crawl_database_leaves_the_index_alone(crawl, tmp_path):
    """A damaged crawl.db is an error of the update, not a reason to remove the (sound) index."""
    d, _, _ = crawl
    work = tmp_path / "c"
    work.mkdir()
    shutil.copy(d / "crawl.db", work / "crawl.db")
    Indexer(work, chunk=40).update(max_pages=40)
    before = fts_rows(work).keys()
    assert len(before) > 30
    conn = sqlite3.connect(work / "crawl.db")   # the leaves of the pages table but its first one
    leaves = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'pages' AND pagetype = 'leaf'"
                                         " ORDER BY path LIMIT -1 OFFSET 1")]
    conn.close()
    with open(work / "crawl.db", "r+b") as fh:
        for n in leaves:
            fh.seek(4096 * (n - 1))
            fh.write(bytes(range(256)) * 16)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):   # the page text is read mid-update
        Indexer(work).update()
    assert fts_rows(work).keys() == before   # its pages still indexed
    # a rebuild (`skitter index DIR`) finds the damage before it drops the index it could not make again
    with pytest.raises(CrawlDirError, match="left as it was"):
        Indexer(work).rebuild()
    assert fts_rows(work).keys() == before


def test_a_crawl_resumed_on_a_damaged_index_makes_it_again(tmp_path):
    """The CLI: a crawl resumed on a crawl directory whose index.db is damaged crawls on, says so
    in one warning line, and leaves the index a rebuild would make."""
    d = tmp_path / "crawl"
    with DemoServer(DemoConfig(hosts=2, pages=120, seed=5, crawl_delay=0)) as srv:
        args = [sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(d), "--delay", "0", "--quiet"]
        first = subprocess.run([*args, "--max-pages", "40"], capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stderr
        _damage(d / "index.db")
        res = subprocess.run([*args, "--max-pages", "100"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "index.db was damaged" in lines[0] and lines[0].startswith("skitter: WARNING:")
    live = fts_rows(d)
    Indexer(d).rebuild()
    assert len(live) > 40 and live == fts_rows(d)


def test_recrawled_page_is_replaced_or_removed(crawl, tmp_path):
    d, _, _ = crawl
    work = tmp_path / "c"
    work.mkdir()
    shutil.copy(d / "crawl.db", work / "crawl.db")
    Indexer(work).rebuild()
    conn = sqlite3.connect(work / "crawl.db")
    top = conn.execute("SELECT max(fetch_order) FROM fetches").fetchone()[0]
    a, b = [r[0] for r in conn.execute(
        "SELECT p.fp FROM pages p JOIN fetches f USING (fp) WHERE f.noindex = 0 AND f.duplicate_of IS NULL"
        " ORDER BY f.fetch_order LIMIT 2")]
    conn.execute("UPDATE pages SET title = 'Zyzzyva unique' WHERE fp = ?", (a,))
    conn.execute("UPDATE fetches SET fetch_order = ? WHERE fp = ?", (top + 1, a))
    conn.execute("UPDATE fetches SET fetch_order = ?, noindex = 1 WHERE fp = ?", (top + 2, b))
    conn.commit()
    conn.close()
    stats = Indexer(work).update()
    assert stats.indexed == 1 and stats.removed == 1
    with Searcher(work) as s:
        assert s.match_fps("zyzzyva") == {a}
        assert b not in s.match_fps("NOT zzzzqqq")


# ------------------------------------------------------------------------------ operators vs reference

FIXED = [
    "telescope", "telescopes", "nebula galaxy", "nebula AND galaxy", "nebula OR keel", "nebula XOR galaxy",
    "NOT nebula", "nebula -galaxy", "nebula NOT galaxy", "-nebula -galaxy", "nebula NEAR galaxy",
    "nebula NEAR/0 galaxy", "nebula NEAR/3 galaxy NEAR/3 comet", "title:nebula", 'body:"nebula galaxy"',
    "url:html", "anchor:nebula", "meta:nebula", "headings:nebula", '"harbour mistakes"', "keel XOR hull XOR rudder",
    "(keel OR hull) -rudder", "NOT (keel OR hull)", "keel OR NOT hull", "NOT keel XOR NOT hull",
    "the telescope", "the OR nebula", "nebula NEAR the", "e-mail", "zzzqqq", "zzzqqq OR keel",
]


@pytest.mark.parametrize("query", FIXED)
def test_fixed_queries_match_the_reference(searcher, ref, query):
    assert searcher.match_fps(query) == ref.match(query), query


def test_a_query_too_deep_for_sqlite_is_a_query_error(searcher):
    """Groups alternating AND and OR compile to nested compound SELECTs: a dozen levels overflow
    SQLite's parser stack, which the CLI used to report as a corrupt crawl database."""
    q = "page"
    for i in range(12):
        q = f"(w{i} {'OR' if i % 2 else 'AND'} {q})"
    with pytest.raises(QuerySyntaxError, match="too complex"):
        searcher.search(q)


def test_filters_match_the_reference(searcher, ref, crawl):
    d, web, _ = crawl
    hosts = sorted({doc.host for doc in ref.docs.values()})
    hostport = sorted({doc.hostport for doc in ref.docs.values()})[0]
    day = min(doc.date for doc in ref.docs.values())[:10]
    for q in [f"site:{hosts[0]}", f"keel site:{hosts[1]}", f"keel -site:{hosts[1]}", f"site:{hostport} nebula",
              f"site:0.0.{hosts[0].rsplit('.', 1)[1]}", "site:nowhere.example",
              f"after:{day}", f"before:{day}", "after:2999-01-01", "before:2000-01-01",
              f"keel OR site:{hosts[2]}", f"NOT site:{hosts[0]} XOR after:{day}"]:
        assert searcher.match_fps(q) == ref.match(q), q
    assert searcher.match_fps(f"site:{hosts[0]}") and searcher.match_fps(f"after:{day}")
    assert hosts[0][0].isdigit() and not searcher.match_fps(f"site:0.0.{hosts[0].rsplit('.', 1)[1]}")


@pytest.fixture(scope="module")
def vocabulary(ref):
    """Surface words of the crawl (frequent, middling, rare), adjacent pairs for phrases."""
    counts: dict[str, int] = {}
    pairs: list[str] = []
    rng = random.Random(5)
    docs = list(ref.docs.values())
    for doc in docs:
        for t in set(doc.columns["body"]):
            counts[t] = counts.get(t, 0) + 1
    by_freq = sorted(counts, key=lambda t: (-counts[t], t))
    words = by_freq[:12] + by_freq[len(by_freq) // 3: len(by_freq) // 3 + 12] + by_freq[-8:]
    for doc in rng.sample(docs, 20):
        body = doc.columns["body"]
        if len(body) > 3:
            i = rng.randrange(len(body) - 2)
            pairs.append(" ".join(body[i:i + rng.choice([2, 3])]))
    hosts = sorted({d.host for d in docs})
    return words + ["the", "of", "zzzqqq"], pairs, hosts


def query_trees(words, pairs, hosts):
    fields = st.sampled_from([None, None, None, None, "title", "meta", "headings", "url", "anchors", "body"])
    word = st.sampled_from(words)

    def term(field=True):
        return st.one_of(
            st.builds(lambda w, f: Term(w, False, f), word, fields if field else st.none()),
            st.builds(lambda p, f: Term(p, True, f), st.sampled_from(pairs), fields if field else st.none()),
        )

    leaf = st.one_of(
        term(), term(), term(),
        st.builds(lambda ts, k: Near(tuple(ts), k), st.lists(term(False), min_size=2, max_size=3),
                  st.sampled_from([0, 1, 3, 10, 30])),
        st.builds(Site, st.sampled_from(hosts)),
        st.builds(DateFilter, st.sampled_from(["after", "before"]), st.sampled_from(["2000-01-01", "2999-01-01"])),
    )
    return st.recursive(leaf, lambda kids: st.one_of(
        st.builds(Not, kids),
        st.builds(lambda cs, imp: And(tuple(cs), imp), st.lists(kids, min_size=2, max_size=3), st.booleans()),
        st.builds(lambda cs: Or(tuple(cs)), st.lists(kids, min_size=2, max_size=3)),
        st.builds(lambda cs: Xor(tuple(cs)), st.lists(kids, min_size=2, max_size=3)),
    ), max_leaves=6)


def test_generated_queries_match_the_reference(searcher, ref, vocabulary):
    words, pairs, hosts = vocabulary

    @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
    @given(query_trees(words, pairs, hosts))
    def check(tree):
        q = unparse(tree)
        try:
            expected = ref.match(q)
        except QuerySyntaxError:     # only stop words: the engine says so too
            with pytest.raises(QuerySyntaxError):
                searcher.match_fps(q)
            return
        assert searcher.match_fps(q) == expected, q

    check()


def test_ranked_search_returns_the_match_set_in_tiers(searcher, ref, vocabulary):
    words, pairs, _ = vocabulary
    for q in [f"{words[3]} {words[15]}", f"{words[0]} {words[20]} {pairs[0]!r}".replace("'", '"'),
              f"{words[14]} OR {words[16]}", f"NOT {words[2]}"]:
        res = searcher.search(q, limit=None, collapse=False, snippets=False)
        fps = [h.fp for h in res.hits]
        assert len(fps) == len(set(fps)) == res.total == res.matched
        assert set(fps) == ref.match(q), q
        first = ref.first_tier(q)
        if first is not None:
            assert res.bare
            flags = [h.all_words for h in res.hits]
            assert flags == sorted(flags, reverse=True)          # all the words first
            assert {h.fp for h in res.hits if h.all_words} == first
        for tier in (True, False, None):
            scores = [h.score for h in res.hits if h.all_words is tier]
            assert scores == sorted(scores, reverse=True)


# ------------------------------------------------------------------------------ ranking, collapse

def test_column_weights_reach_bm25(searcher, ref):
    """With every column's weight 0 but the title's, exactly the title matches score above 0."""
    counts = Counter(t for d in ref.docs.values() for t in set(d.columns["title"]))
    word = next(w for w, n in counts.most_common() if 3 <= n <= len(ref.docs) // 4)
    in_title = {fp for fp, d in ref.docs.items() if word in d.columns["title"]}
    weights = {c: 0.0 for c in COLUMNS}
    weights["title"] = 1.0
    with Searcher(searcher.crawl_dir, weights=weights, pagerank_weight=0.0) as s:
        res = s.search(word, limit=None, snippets=False, collapse=False)
    assert {h.fp for h in res.hits if h.bm25 > 0} == in_title
    assert {h.fp for h in res.hits} == ref.match(word)


def _copy_crawl(crawl_dir: Path, dest: Path) -> Path:
    dest.mkdir()
    shutil.copy(crawl_dir / "crawl.db", dest / "crawl.db")
    return dest


def test_pagerank_blend_and_near_duplicate_collapse(crawl, tmp_path):
    d, _, _ = crawl
    work = _copy_crawl(d, tmp_path / "pr")
    Indexer(work).rebuild()
    with Searcher(work, pagerank_weight=0.0) as s:
        base = s.search("keel", limit=None, snippets=False, collapse=False)
    assert len(base.hits) >= 6
    # give the text's worst hits the highest PageRank
    conn = sqlite3.connect(work / "crawl.db")
    worst = [h.fp for h in base.hits[-3:]]
    conn.execute("UPDATE fetches SET pagerank = 0.0001")
    for i, fp in enumerate(worst):
        conn.execute("UPDATE fetches SET pagerank = ? WHERE fp = ?", (0.5 - 0.1 * i, fp))
    # and fold the 2nd and 3rd best into the family of the best
    best, second, third = (h.fp for h in base.hits[:3])
    best_url = base.hits[0].url
    conn.execute("UPDATE fetches SET near_duplicate_of = NULL WHERE fp = ?", (best,))
    conn.executemany("UPDATE fetches SET near_duplicate_of = ? WHERE fp = ?", [(best_url, second), (best_url, third)])
    conn.commit()
    conn.close()
    stats = Indexer(work).update()
    assert stats.marks_refreshed and stats.indexed == 0
    idx = sqlite3.connect(work / "index.db")
    family = dict(idx.execute("SELECT fp, family FROM docs"))
    idx.close()
    assert family[second] == family[third] == family[best] == fingerprint(best_url) == best
    with Searcher(work, pagerank_weight=1.0) as s:
        res = s.search("keel", limit=3, snippets=False, collapse=False)
        assert [h.fp for h in res.hits] == worst
    with Searcher(work, pagerank_weight=0.0) as s:
        res = s.search("keel", limit=None, snippets=False)
        assert res.hits[0].fp == best and res.hits[0].duplicates >= 2
        shown = {h.fp for h in res.hits}
        assert second not in shown and third not in shown
        assert res.matched == len(base.hits)
        assert res.total == len({family[h.fp] for h in base.hits}) == len(res.hits)
        assert len({family[fp] for fp in shown}) == len(shown)           # one page per family
        assert sum(h.duplicates for h in res.hits) == res.matched - res.total
        every = s.search("keel", limit=None, snippets=False, collapse=False)
        assert every.total == len(base.hits)
    with Searcher(work, pagerank_weight=0.3) as s:
        mixed = s.search("keel", limit=None, snippets=False)
        for h in mixed.hits:
            assert 0.0 <= h.score <= 1.0


def test_pagination(searcher):
    full = searcher.search("keel OR hull", limit=None, snippets=False)
    p1 = searcher.search("keel OR hull", limit=7, page=1, snippets=False)
    p2 = searcher.search("keel OR hull", limit=7, page=2, snippets=False)
    assert [h.url for h in p1.hits + p2.hits] == [h.url for h in full.hits[:14]]
    assert [h.rank for h in p2.hits] == list(range(8, 15))
    assert p1.pages == -(-full.total // 7)
    assert searcher.search("keel", limit=7, page=10_000).hits == []
    with pytest.raises(UsageError):
        searcher.search("keel", page=0)


# ------------------------------------------------------------------------------ snippets, suggestions

def test_snippets_highlight_the_query_words(searcher):
    res = searcher.search("keels hull", limit=5)
    assert res.hits
    for h in res.hits:
        assert "**" in h.snippet and "<mark>" in h.snippet_html
        for part in h.snippet.split("**")[1::2]:
            assert analyze.tokens(part)[0] in {"keel", "hull"}
        assert "<" not in h.snippet_html.replace("<mark>", "").replace("</mark>", "")


@pytest.mark.parametrize(("text", "query", "marked"), [
    ("La crème brûlée", "creme", "crème"), ("a naïve person", "naive", "naïve"), ("in Zürich", "zurich", "Zürich"),
    ("my résumé", "resume", "résumé"), ("Garçon!", "garcon", "Garçon"), ("un café", "cafe", "café"),
    ("ÉCOLE normale", "ecole", "ÉCOLE"),
    # Greek and Cyrillic diacritics, and Porter-2's stems that are not the word's start (a hold-out
    # tester's snippets showed these pages without a mark)
    ("Новогодняя Ёлка в парке", "елка", "Ёлка"), ("στην Ακρόπολη", "ακροπολη", "Ακρόπολη"),
    ("Grey skies tonight", "sky", "skies"), ("the dying light", "dying", "dying"), ("lying low", "lie", "lying")])
def test_a_word_with_diacritics_is_marked_in_a_snippet(text, query, marked):
    """The index folds diacritics ("crème" is found by creme); the snippet now marks such words,
    where only those whose stem's first letters had no accent were (café, not crème)."""
    from skitter.search.snippets import snippet

    plain, _, n = snippet(text, set(analyze.tokens(query)))
    assert n == 1 and f"**{marked}**" in plain, plain


def test_snippet_html_is_escaped():
    from skitter.search.snippets import highlight, snippet

    plain, html_, n = snippet("before <script>alert(1)</script> & the keel & after", {"keel"})
    assert n == 1 and "**keel**" in plain
    assert "&lt;/script&gt;" in html_ and "<mark>keel</mark>" in html_
    assert "<" not in html_.replace("<mark>", "").replace("</mark>", "")
    long = " ".join(f"w{i}" for i in range(200)) + " keel " + " ".join(f"v{i}" for i in range(200))
    plain, _, _ = snippet(long, {"keel"})
    assert plain.startswith("… ") and plain.endswith(" …") and "**keel**" in plain
    assert len(plain.split()) <= 34
    assert highlight("Keels & Hulls", {"keel"})[1] == "<mark>Keels</mark> &amp; Hulls"


@pytest.mark.parametrize("at", [99_990, 150_000, 3_000_000])
def test_a_snippet_of_a_huge_page_shows_words_far_in(at):
    """Words only past the first 100,000 characters (a page of megabytes) are in the snippet,
    as the index finds them; a hold-out test got the page's beginning, with nothing marked."""
    from skitter.search.snippets import MAX_TEXT, snippet

    filler = "lorem ipsum dolor sit amet "
    text = (filler * (at // len(filler) + 1))[:at] + " the hugemiddleword and keel here " + filler * 4_000
    plain, html_, n = snippet(text, {"hugemiddleword", "keel"})
    assert n == 2 and "**hugemiddleword** and **keel**" in plain and plain.startswith("… "), plain[:200]
    assert "<mark>hugemiddleword</mark>" in html_ and len(plain.split()) <= 36
    assert len(text) > MAX_TEXT
    assert snippet(text, {"absentword"})[2] == 0
    # the one query word across the 100,000th character (a review found it in neither look)
    plain, _, n = snippet(text, {"hugemiddleword"})
    assert n == 1 and "**hugemiddleword**" in plain and plain.startswith("… ")
    assert plain.split()[1] in ("lorem", "ipsum", "dolor", "sit", "amet", "the")   # whole words after "…"


def test_did_you_mean(searcher):
    res = searcher.search("telscope nebual", limit=3)
    assert res.corrections == {"telscope": "telescope", "nebual": "nebula"}
    assert res.suggestion == "telescope nebula"
    res = searcher.search('title:"nebual" OR keel', limit=3)
    assert res.suggestion == 'title:"nebula" OR keel'
    assert searcher.search("telescope", limit=1).suggestion is None
    assert searcher.search("qqqqqqqqqqqqq", limit=1).suggestion is None
    # a word the query excludes is not corrected (NOT telscope matches every page as it is)
    assert searcher.search("NOT telscope", limit=1).suggestion is None
    assert searcher.search("keel -nebual", limit=1).suggestion is None
    assert searcher.search("nebual NOT telscope", limit=1).suggestion == "nebula NOT telscope"


def test_did_you_mean_leaves_short_words_and_numbers_alone(tmp_path):
    """A word of one or two characters is not corrected, and a word is not corrected to a number
    (a hold-out test saw every one-letter word of a query become "3")."""
    from sites import StaticSite

    site = tmp_path / "site"
    site.mkdir()
    body = "<p>Chapter 3 of 112 pages, 3 keels and 112 hulls. Version 3. Page 112.</p>"
    (site / "index.html").write_text(f"<html><title>Home</title><body>{body}"
                                      "<a href='a.html'>a</a> <a href='b.html'>b</a></body></html>")
    for name in ("a", "b"):
        (site / f"{name}.html").write_text(f"<html><title>{name}</title><body>{body} keel</body></html>")
    with StaticSite(site) as srv:
        res = subprocess.run([sys.executable, "-m", "skitter", "crawl", f"{srv.base}/", "-o", str(tmp_path / "c"),
                              "--delay", "0", "--quiet", "--index-interval", "-1"],
                             capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    Indexer(tmp_path / "c").rebuild()
    with Searcher(tmp_path / "c") as s:
        assert s.corrections("c 4 x9 a12 kel") == {"kel": "keel"}
        assert s.corrections("4123 1112") == {"1112": "112"}   # a number for a number


def test_rank_copies_pagerank_into_the_index_but_leaves_an_older_index_alone(crawl, tmp_path):
    """`skitter rank` refreshes the index's PageRank; an index of an older version is not started
    again by it (that drops every page until `skitter index`): it gets a note instead."""
    import json as json_
    import shutil

    from skitter.rank import rank_crawl

    work = tmp_path / "c"
    shutil.copytree(crawl[0], work)
    assert rank_crawl(work)["index"] is None
    idx = sqlite3.connect(work / "index.db")
    assert idx.execute("SELECT count(*) FROM docs WHERE pagerank IS NOT NULL").fetchone()[0] > 0
    docs = idx.execute("SELECT count(*) FROM docs").fetchone()[0]
    idx.execute("UPDATE meta SET value = ? WHERE key = 'version'", (json_.dumps(4),))
    idx.commit()
    idx.close()
    note = rank_crawl(work)["index"]
    assert note is not None and "built differently" in note
    idx = sqlite3.connect(work / "index.db")
    assert idx.execute("SELECT count(*) FROM docs").fetchone()[0] == docs
    idx.close()


def test_the_lag_note_counts_in_words():
    from skitter.index.indexer import lag_note

    assert lag_note({"exists": True, "crawl_order": 8, "last_order": 7}, "d").startswith("the index is 1 fetch behind")
    assert lag_note({"exists": True, "crawl_order": 2008, "last_order": 7}, "d").startswith(
        "the index is 2,001 fetches behind")
    assert lag_note({"exists": True, "crawl_order": 7, "last_order": 7}, "d") is None


# ------------------------------------------------------------------------------ the live index

def test_a_live_step_commits_its_anchors_and_first_chunk_together(crawl, tmp_path):
    """A step of the live index (``update(max_pages=...)``) ingests the new links' anchors and
    indexes its first chunk in one transaction: a page that cannot be read in that chunk rolls the
    anchors back too (both watermarks stay), and the next step redoes both. A new index merges
    FTS5 segments at 16 a level (crisis 64), not FTS5's 4 (docs/benchmarks.md)."""
    d, _, _ = crawl
    conn, fp, text = _copy_with_a_corrupt_page(d, tmp_path, 5)
    commits = []
    real = indexer_mod._write_tx

    def counting(idx):
        commits.append(1)
        return real(idx)

    ix = Indexer(tmp_path, chunk=40)
    ix.connect()
    try:
        with pytest.raises(CrawlDirError, match="corrupt page text"):
            ix.update(exact_anchors=False, max_pages=40, marks=False)
        idx = sqlite3.connect(tmp_path / "index.db")
        meta = dict(idx.execute("SELECT key, value FROM meta"))
        assert "last_link" not in meta and "last_order" not in meta   # the anchors rolled back too
        assert idx.execute("SELECT count(*) FROM anchors").fetchone()[0] == 0
        assert dict(idx.execute("SELECT k, v FROM fts_config WHERE k IN ('automerge', 'crisismerge')")) == \
            {"automerge": 16, "crisismerge": 64}
        idx.close()
        conn.execute("UPDATE pages SET text = ? WHERE fp = ?", (text, fp))
        conn.commit()
        ix.connect()
        indexer_mod._write_tx = counting
        try:
            step = ix.update(exact_anchors=False, max_pages=40, marks=False)
        finally:
            indexer_mod._write_tx = real
        assert step.indexed + step.skipped == 40 and len(commits) == 1   # one transaction
        idx = sqlite3.connect(tmp_path / "index.db")
        assert idx.execute("SELECT count(*) FROM anchors").fetchone()[0] > 0
        idx.close()
    finally:
        ix.close()
        conn.close()
    Indexer(tmp_path).update()
    assert fts_rows(tmp_path) == fts_rows(d)



def _replay_slices(src: Path, dst: Path, per: int):
    """Copy a finished crawl into ``dst`` in slices of ``per`` fetches (fetch order; each slice's
    pages and links, links in rowid order), as the crawl wrote it: a generator, one slice a step."""
    s = sqlite3.connect(src / "crawl.db")
    d = sqlite3.connect(dst / "crawl.db", isolation_level=None)
    d.execute("PRAGMA journal_mode = WAL")
    for (sql,) in s.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"):
        d.execute(sql)
    d.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", s.execute("SELECT key, value FROM meta"))
    ncols = {t: len(s.execute(f"PRAGMA table_info({t})").fetchall()) for t in ("fetches", "pages", "links")}
    fetches = s.execute("SELECT * FROM fetches ORDER BY fetch_order IS NULL, fetch_order").fetchall()
    for i in range(0, len(fetches), per):
        part = fetches[i:i + per]
        fps = [r[1] for r in part]
        q = ",".join("?" * len(fps))
        d.execute("BEGIN")
        d.executemany(f"INSERT INTO fetches VALUES ({','.join('?' * ncols['fetches'])})", part)
        d.executemany(f"INSERT INTO pages VALUES ({','.join('?' * ncols['pages'])})",
                      s.execute(f"SELECT * FROM pages WHERE fp IN ({q})", fps).fetchall())
        d.executemany(f"INSERT INTO links VALUES ({','.join('?' * ncols['links'])})",
                      s.execute(f"SELECT * FROM links WHERE src IN ({q}) ORDER BY rowid", fps).fetchall())
        d.execute("COMMIT")
        yield
    s.close()
    d.close()


@pytest.mark.parametrize("shared_pool", [False, True])
def test_the_live_indexer_keeps_up_and_the_last_update_gives_the_rebuilds_index(crawl, tmp_path, shared_pool):
    """A LiveIndexer follows a crawl that grows slice by slice (in a process of its own, or in a
    pool it is given), is cancelled, and finish_index() indexes the rest and brings every anchor
    column up to date: the index is the rebuild's (docs/search.md)."""
    import asyncio

    from skitter.index.live import LiveIndexer, finish_index
    from skitter.procpool import ProcessPool

    d, _, _ = crawl
    live = tmp_path / "live"
    live.mkdir()

    async def follow():
        pool = ProcessPool(1) if shared_pool else None
        if pool is not None:
            await pool.start()
        indexer = LiveIndexer(live, pool=pool, pause=0.01, step=40)
        task = None
        try:
            for _ in _replay_slices(d, live, 25):
                if task is None:
                    task = asyncio.create_task(indexer.run())
                await asyncio.sleep(0.05)
            for _ in range(200):          # let it catch up with the last slice
                if indexer.steps and Indexer(live).status()["last_order"] == Indexer(live).status()["crawl_order"]:
                    break
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if pool is not None:
                await pool.close()
        return indexer

    indexer = asyncio.run(follow())
    assert indexer.steps > 3 and indexer.indexed > 0
    fin = finish_index(live)
    rows = fts_rows(live)
    want = fts_rows(d)
    a = COLUMNS.index("anchors")
    assert rows.keys() == want.keys()
    assert {fp: c[:a] + c[a + 1:] for fp, c in rows.items()} == {fp: c[:a] + c[a + 1:] for fp, c in want.items()}
    conn = sqlite3.connect(live / "index.db")
    pairs = conn.execute("SELECT d.n_anchors, coalesce(a.n, 0) FROM docs d LEFT JOIN anchors a ON a.dst = d.fp").fetchall()
    conn.close()
    assert all(n == c for n, c in pairs)                          # every page's anchors
    assert Indexer(live).status()["anchors_pending"] is False
    assert fin["marks_refreshed"] and indexer.anchors_refreshed > 0   # pages gained anchors after being indexed

    def anchors_sorted(r):   # (the links of slices replayed come in another order)
        return {fp: cols[:a] + (sorted(cols[a].split()),) + cols[a + 1:] for fp, cols in r.items()}

    assert anchors_sorted(rows) == anchors_sorted(want)


def test_a_snippet_comes_from_the_main_text_not_the_menu():
    """A documentation site's menu names the query's words on every page ("Monitoring garbage
    collection"): the snippet came from the menu, and a filter-only query showed the menu. With
    the page's main_start (where the boilerplate rules found the content to start) the content's
    window is shown, unless only the menu has the words."""
    from skitter.search.snippets import snippet

    menu = "Docs Install Configure Monitoring garbage collection Tuning log rotation API reference "
    body = ("When the heap grows past its limit the runtime starts a garbage collection cycle, and "
            "the threads pause briefly before they resume their work. " + "Filler words follow here. " * 20)
    text = menu + body
    plain, _, n = snippet(text, {"garbag", "collect"}, main_start=len(menu))
    assert n == 2 and "Monitoring" not in plain and "Install" not in plain, plain
    assert snippet(text, {"garbag", "collect"})[0].startswith("Docs Install")   # without it: the menu
    assert snippet(text, set(), main_start=len(menu))[0].startswith("… When the heap")
    # a word only the menu has: the menu's window, as before
    assert "**rotation**" in snippet(text, {"rotat"}, main_start=len(menu))[0]
    # a main_start past the text (a page cut short) is ignored
    assert snippet(text, set(), main_start=10**6)[0].startswith("Docs")


@given(st.dictionaries(st.integers(0, 30), st.integers(0, 30), max_size=30))
def test_families_are_the_ends_of_the_chains_of_marks(up):
    """A page's family is where its near-duplicate marks lead (a chain: its end; a loop: one
    member for all of it); two pages one mark apart are in one family."""
    from skitter.index.indexer import _families

    fam = _families(up)
    assert set(fam) == set(up)
    for a, b in up.items():
        assert fam[a] == fam.get(b, b)          # one mark apart: one family
        end = fam[a]
        assert end not in up or fam[end] == end   # an end is unmarked, or a loop's named member


def test_a_phrase_never_joins_two_pieces_of_a_field(tmp_path):
    """A page's anchors come from separate links, its headings are separate headings, its meta is
    a description and keywords: a phrase (or NEAR/0) does not join the end of one piece to the
    start of the next (a hold-out tester's anchors "amber" and "falcon", from two pages, matched
    "amber falcon"); within a piece it matches as before."""
    from sites import StaticSite

    from skitter.api import crawl

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<html><body><a href="a.html">next</a> <a href="t.html">amber</a></body></html>')
    (site / "a.html").write_text('<html><body><a href="t.html">falcon wings</a></body></html>')
    (site / "t.html").write_text(
        '<html><head><title>Target</title><meta name="description" content="a quiet glacier">'
        '<meta name="keywords" content="lagoon, tides"></head><body><h2>Saffron</h2><h2>tundra winds</h2>'
        '<p>plain words</p></body></html>')
    with StaticSite(site) as srv:
        crawl([srv.base + "/"], tmp_path / "c", delay=0, adaptive_delay=0, allow_private=True, index_interval=-1)
    Indexer(tmp_path / "c").update(exact_anchors=True)
    s = Searcher(tmp_path / "c")
    target = srv.base + "/t.html"

    def urls(q: str) -> set[str]:
        return {h.url for h in s.search(q, limit=None, collapse=False, snippets=False).hits}

    try:
        for q in ['"amber falcon"', 'anchor:"amber falcon"', "amber NEAR/0 falcon", 'headings:"saffron tundra"',
                  'meta:"glacier lagoon"']:
            assert target not in urls(q), q
        for q in ["anchor:amber", "anchor:falcon", 'anchor:"falcon wings"', 'headings:"tundra winds"',
                  'meta:"quiet glacier"', "meta:lagoon", "headings:saffron"]:
            assert target in urls(q), q
    finally:
        s.close()
