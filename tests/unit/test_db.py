"""CrawlDB (skitter.store.db): opening, refusing bad crawl directories, meta, leases, counts."""

from __future__ import annotations

import sqlite3

import pytest

from skitter.errors import CrawlDirError, UsageError
from pathlib import Path

from skitter.store.db import DB_NAME, SCHEMA_VERSION, CrawlDB, connect

ROOT = Path(__file__).resolve().parents[2]


def add_url(db: CrawlDB, fp: int, state: int = 0, seq: int | None = None, host: str = "a.test") -> None:
    db.conn.execute(
        "INSERT INTO urls (fp, url, host, depth, priority, seq, state) VALUES (?, ?, ?, 0, 0, ?, ?)",
        (fp, f"http://{host}/{fp}", host, fp if seq is None else seq, state))


def test_new_directory_gets_a_database_with_the_schema(tmp_path):
    db = CrawlDB(tmp_path)
    assert (tmp_path / DB_NAME).is_file()
    assert db.get_meta("schema_version") == SCHEMA_VERSION
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "urls", "fetches", "pages", "links", "contents", "robots"} <= tables
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.counts() == {"queued": 0, "seen": 0, "fetched": 0, "max_order": 0, "max_seq": 0}
    db.close()


def test_reopening_keeps_the_data(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    add_url(db, 1)
    db.set_meta("state", "running")
    db.commit()
    db.close()
    db = CrawlDB(tmp_path)
    assert db.counts()["seen"] == 1
    assert db.get_meta("state") == "running"
    db.close()


def test_links_are_indexed_by_source_only(tmp_path):
    """An index on links.dst made most of a crawl's database writes (18 random inserts a page);
    nothing reads links by dst (the search indexer keeps its own anchors table)."""
    db = CrawlDB(tmp_path)
    assert {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'"
                                          " AND tbl_name = 'links'")} == {"links_src"}
    db.close()


def _v1_directory(directory) -> None:
    """A crawl database of schema 1 with what that version stored in the forms it no longer reads:
    near-duplicate sketches a row per hash (near_fps) before newer ones a row per page, page text
    as TEXT next to deflated text, a links_dst index."""
    import numpy as np

    from skitter.store.text import pack_text

    conn = sqlite3.connect(directory / DB_NAME)
    conn.executescript((ROOT / "tests" / "data" / "crawl_schema_v1.sql").read_text())
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute("INSERT INTO urls (fp, url, host, depth, priority, seq, state) VALUES (1, 'http://a.test/', 'a.test', 0, 0, 1, 0)")
    conn.execute("INSERT INTO fetches (fp, fetch_order, url, status) VALUES (1, 1, 'http://a.test/', 200)")
    conn.execute("INSERT INTO pages (fp, url, text) VALUES (1, 'http://a.test/', 'plain old text')")
    conn.execute("INSERT INTO pages (fp, url, text) VALUES (2, 'http://a.test/2', ?)", (pack_text("packed text"),))
    conn.executemany("INSERT INTO near_fps VALUES (?, ?)", [(7, -5), (7, 3), (8, 9)])
    conn.execute("INSERT INTO near_sketches VALUES (9, ?)", (np.array([1, 2], dtype="<u8").tobytes(),))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("readonly", [False, True])
def test_a_schema_1_directory_is_migrated_on_open(tmp_path, readonly):
    import numpy as np

    from skitter.store.text import page_text

    _v1_directory(tmp_path)
    db = CrawlDB(tmp_path, readonly=readonly)   # a reader migrates it once too
    c = db.conn
    assert db.get_meta("schema_version") == SCHEMA_VERSION == 4
    cols = {r[1] for r in c.execute("PRAGMA table_info(urls)")}
    assert {"main_hash", "main_start"} <= {r[1] for r in c.execute("PRAGMA table_info(pages)")}
    assert {"due", "revisit"} <= cols and "response_time" in {r[1] for r in c.execute("PRAGMA table_info(fetches)")}
    indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"urls_ready", "urls_due"} <= indexes and not {"urls_queued", "links_dst"} & indexes
    assert c.execute("SELECT 1 FROM sqlite_master WHERE name = 'near_fps'").fetchone() is None
    sketches = [(d, np.frombuffer(b, dtype="<u8").tolist()) for d, b in
                c.execute("SELECT doc_id, sketch FROM near_sketches ORDER BY rowid")]
    assert sketches == [(7, [3, 2**64 - 5]), (8, [9]), (9, [1, 2])]   # the old ones first, each sorted
    texts = dict(c.execute("SELECT fp, text FROM pages"))
    assert all(isinstance(t, bytes) for t in texts.values())
    assert page_text(texts[1]) == "plain old text" and page_text(texts[2]) == "packed text"
    assert c.execute("SELECT url, state, due, revisit FROM urls").fetchall() == [("http://a.test/", 0, None, 0)]
    db.close()


def test_a_missing_directory_is_a_crawl_dir_error(tmp_path):
    with pytest.raises(CrawlDirError):
        CrawlDB(tmp_path / "does" / "not" / "exist")


def test_schema_version_mismatch(tmp_path):
    db = CrawlDB(tmp_path)
    db.set_meta("schema_version", SCHEMA_VERSION + 1)
    db.close()
    for readonly in (False, True):
        with pytest.raises(CrawlDirError, match="schema"):
            CrawlDB(tmp_path, readonly=readonly)
    # refusing it did not rewrite the version
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION + 1)
    conn.close()


def test_an_empty_crawl_db_and_a_missing_one_are_no_crawl(tmp_path):
    """An empty crawl.db is no crawl, not one "of schema None, written by a newer skitter"; a
    writer other than the crawl's (skitter rank) does not make a new database where there is none."""
    (tmp_path / DB_NAME).write_bytes(b"")
    with pytest.raises(CrawlDirError, match="empty or holds no crawl"):
        CrawlDB(tmp_path, readonly=True)
    with pytest.raises(CrawlDirError, match="empty or holds no crawl"):
        CrawlDB(tmp_path, create=False)   # (skitter rank made its 32 tables in it)
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)   # no table made
    conn.close()
    with pytest.raises(CrawlDirError, match="not a crawl directory"):
        CrawlDB(tmp_path / "sub", create=False)
    assert not (tmp_path / "sub").exists()


def test_a_crawl_db_that_may_not_be_written_is_not_called_corrupt(tmp_path):
    """A crawl.db made immutable (chattr +i: root too may not write it) is "cannot write", not
    "corrupt" (a hold-out check: `skitter rank` on a read-only crawl said it was corrupt)."""
    import shutil
    import subprocess

    CrawlDB(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("PRAGMA journal_mode = DELETE")   # no WAL: the immutable file is all there is
    conn.close()
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(tmp_path / DB_NAME)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available on this file system")
    try:
        with pytest.raises(CrawlDirError, match="cannot (write|open)") as info:
            CrawlDB(tmp_path, create=False)
        assert "corrupt" not in str(info.value)
    finally:
        subprocess.run([chattr, "-i", str(tmp_path / DB_NAME)], check=True)


@pytest.mark.parametrize("content", [
    b"this is not a database\n" * 40,
    bytes(range(256)) * 20,
    b"SQLite format 3\x00" + b"\xff" * 4000,   # the right magic, garbage after it
    b"x" * 64,                              # short garbage
])
@pytest.mark.parametrize("readonly", [False, True])
def test_a_garbage_crawl_db_is_a_crawl_dir_error(tmp_path, content, readonly):
    (tmp_path / DB_NAME).write_bytes(content)
    with pytest.raises(CrawlDirError) as info:
        CrawlDB(tmp_path, readonly=readonly)
    assert not isinstance(info.value, sqlite3.Error)
    assert isinstance(info.value, UsageError)      # the CLI reports it in one line, exit status 2
    assert str(tmp_path) in str(info.value)


def test_a_corrupt_database_is_caught_by_the_integrity_check(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    db.conn.executemany(
        "INSERT INTO urls (fp, url, host, depth, priority, seq) VALUES (?, ?, 'a.test', 0, 0, ?)",
        [(i, f"http://a.test/{'x' * 40}/{i}", i) for i in range(3000)])
    db.commit()
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    path = tmp_path / DB_NAME
    data = bytearray(path.read_bytes())
    page = 4096
    for off in range(3 * page, len(data) - page, page):   # scribble over the b-tree pages
        data[off + 100:off + 400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    with pytest.raises(CrawlDirError, match="corrupt|malformed"):
        CrawlDB(tmp_path)


def test_readonly_open_of_a_missing_directory(tmp_path):
    with pytest.raises(CrawlDirError, match="not a crawl directory"):
        CrawlDB(tmp_path / "nope", readonly=True)
    assert not (tmp_path / "nope").exists()      # and nothing was created


def test_readonly_open_of_an_empty_directory(tmp_path):
    with pytest.raises(CrawlDirError):
        CrawlDB(tmp_path, readonly=True)
    assert not (tmp_path / DB_NAME).exists()


def test_readonly_open_of_an_uninitialised_database(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"")       # an empty file is an empty SQLite database: no meta table
    with pytest.raises(CrawlDirError):
        CrawlDB(tmp_path, readonly=True)


def test_readonly_handle_reads_but_cannot_write(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    add_url(db, 7)
    db.commit()
    reader = CrawlDB(tmp_path, readonly=True)
    assert reader.counts()["seen"] == 1
    with pytest.raises(sqlite3.OperationalError):
        reader.conn.execute("DELETE FROM urls")
    reader.close()
    db.close()


def test_connect_error_is_a_crawl_dir_error(tmp_path):
    with pytest.raises(CrawlDirError):
        connect(tmp_path / "missing" / DB_NAME)


# -- meta ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    "running", 42, 1.5, True, None, [1, "two", None], {"seeds": ["http://a.test/"], "nested": {"k": [1, 2]}},
    "unicode \u00e9\u4e2d\U0001F600",
])
def test_meta_round_trip(tmp_path, value):
    db = CrawlDB(tmp_path)
    db.set_meta("k", value)
    assert db.get_meta("k", default="absent") == value
    db.close()
    db = CrawlDB(tmp_path, readonly=True)
    assert db.get_meta("k", default="absent") == value
    db.close()


def test_meta_default_and_overwrite(tmp_path):
    db = CrawlDB(tmp_path)
    assert db.get_meta("missing") is None
    assert db.get_meta("missing", default={"d": 1}) == {"d": 1}
    db.set_meta("k", [1])
    db.set_meta("k", {"now": "a dict"})
    assert db.get_meta("k") == {"now": "a dict"}
    assert db.conn.execute("SELECT count(*) FROM meta WHERE key = 'k'").fetchone()[0] == 1
    db.close()


def test_meta_tuples_come_back_as_lists(tmp_path):
    """JSON: what loop.py relies on when it reads back the WARC commit point."""
    db = CrawlDB(tmp_path)
    db.set_meta("warc_commit", ("skitter-00000.warc.gz", 1234))
    assert db.get_meta("warc_commit") == ["skitter-00000.warc.gz", 1234]
    db.close()


# -- transactions, leases, counts -------------------------------------------------------------

def test_uncommitted_writes_are_lost_and_committed_ones_kept(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    add_url(db, 1)
    db.commit()
    db.ensure_tx()
    assert db.in_transaction()
    db.ensure_tx()                      # idempotent inside a transaction
    add_url(db, 2)
    db.conn.close()                     # a crash: no commit
    db = CrawlDB(tmp_path)
    assert [r[0] for r in db.conn.execute("SELECT fp FROM urls")] == [1]
    db.close()


def test_close_commits(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    add_url(db, 1)
    db.close()
    db = CrawlDB(tmp_path)
    assert db.counts()["seen"] == 1
    db.close()


def test_release_leases(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    for fp, state in [(1, 0), (2, 1), (3, 1), (4, 2), (5, 1)]:
        add_url(db, fp, state)
    assert db.release_leases() == 3
    states = dict(db.conn.execute("SELECT fp, state FROM urls").fetchall())
    assert states == {1: 0, 2: 0, 3: 0, 4: 2, 5: 0}
    assert db.release_leases() == 0
    db.commit()
    db.close()


def test_counts(tmp_path):
    db = CrawlDB(tmp_path)
    db.begin()
    for fp, state, seq in [(1, 0, 10), (2, 1, 3), (3, 2, 7), (4, 2, 12)]:
        add_url(db, fp, state, seq)
    db.conn.executemany("INSERT INTO fetches (fp, url, fetch_order) VALUES (?, ?, ?)",
                        [(3, "http://a.test/3", 1), (4, "http://a.test/4", 2)])
    # a URL decided without a request (robots): a record with no fetch order
    db.conn.execute("INSERT INTO fetches (fp, url, fetch_order) VALUES (5, 'http://a.test/5', NULL)")
    db.commit()
    assert db.counts() == {"queued": 2, "seen": 4, "fetched": 2, "max_order": 2, "max_seq": 12}
    db.close()


def test_query_rows_by_name(tmp_path):
    db = CrawlDB(tmp_path)
    add_url(db, 9)
    row = next(iter(db.query("SELECT fp, url FROM urls WHERE fp = ?", (9,))))
    assert row["fp"] == 9 and row["url"] == "http://a.test/9"
    db.close()


def test_the_wal_stays_bounded_while_a_checkpoint_thread_runs(tmp_path):
    """A writer committing often, with checkpoints in their own thread (the crawl's set-up): the WAL
    file is started over and truncated instead of growing with everything ever written."""
    import os

    db = CrawlDB(tmp_path)
    db.start_checkpointer(interval=0.05, wal_limit=2 << 20)
    wal = str(db.path) + "-wal"
    blob = os.urandom(50_000).hex()   # 100 kB a row: 80 MB in all
    peak = 0
    try:
        for i in range(800):
            db.ensure_tx()
            db.set_meta(f"row-{i}", blob)
            db.commit()
            peak = max(peak, os.path.getsize(wal))
    finally:
        db.close()
    assert peak < 16 << 20, peak        # without the bound: ~80 MB
    back = CrawlDB(tmp_path)
    assert back.get_meta("row-799") == blob and back.get_meta("row-0") == blob
    back.close()


def _insert_page(db: CrawlDB, fp: int, text: bytes = b"x") -> None:
    db.conn.execute("INSERT OR REPLACE INTO pages (fp, url, text) VALUES (?, ?, ?)", (fp, f"http://a.test/{fp}", text))


FPS = [(-1) ** i * (i * 0x9E3779B97F4A7C15 % (1 << 62)) for i in range(1, 200)]


def _uses_fp_index(db: CrawlDB, table: str) -> bool:
    plan = " ".join(r[-1] for r in db.conn.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE fp = ?", (1,)))
    return "USING INDEX sqlite_autoindex" in plan


def test_urls_and_fetches_are_stored_in_arrival_order_and_found_by_fp(tmp_path):
    """URLs and fetch records go at the end of their tables, not into random leaves by their
    fingerprints (docs/benchmarks.md, stop 14); an index finds them by fp, a URL is admitted once,
    and storing a fetch again replaces its record. Export order stays fetch order, then fp."""
    from skitter.store.export import iter_records

    db = CrawlDB(tmp_path)
    with db.conn:
        for i, fp in enumerate(FPS):
            add_url(db, fp, seq=i)
            assert db.conn.execute("INSERT OR IGNORE INTO urls (fp, url, host, depth, priority, seq) VALUES (?, 'x', 'h', 0, 0, 0)",
                                   (fp,)).rowcount == 0
        db.conn.execute("UPDATE urls SET state = 2 WHERE fp = ?", (FPS[3],))
        for i, fp in enumerate(reversed(FPS)):
            order = i + 1 if i % 2 else None
            db.conn.execute("INSERT OR REPLACE INTO fetches (fp, url, fetch_order) VALUES (?, ?, ?)",
                            (fp, f"http://a.test/{fp}", order))
        db.conn.execute("INSERT OR REPLACE INTO fetches (fp, url, fetch_order) VALUES (?, 'again', 1000)", (FPS[0],))
    assert [r[0] for r in db.conn.execute("SELECT fp FROM urls ORDER BY rowid")] == FPS
    assert [r[0] for r in db.conn.execute("SELECT fp FROM fetches ORDER BY rowid")][-1] == FPS[0]
    assert _uses_fp_index(db, "urls") and _uses_fp_index(db, "fetches") and _uses_fp_index(db, "pages")
    assert db.conn.execute("SELECT state FROM urls WHERE fp = ?", (FPS[3],)).fetchone() == (2,)
    assert db.counts()["seen"] == len(FPS) and db.counts()["queued"] == len(FPS) - 1
    records = list(iter_records(db))
    fetched = [r for r in records if r["fetch_order"] is not None]
    decided = [r for r in records if r["fetch_order"] is None]
    assert records == fetched + decided and len(records) == len(FPS)
    assert [r["fetch_order"] for r in fetched] == sorted(r["fetch_order"] for r in fetched)
    assert fetched[-1]["url"] == "again"
    decided_fps = [int(r["url"].rsplit("/", 1)[1]) for r in decided]   # stored in another order
    assert decided_fps == sorted(decided_fps) and len(decided_fps) > 50
    db.close()


def test_pages_are_stored_in_arrival_order_and_found_by_fp(tmp_path):
    """A page's row (~10 KB of text) goes at the end of the table, not into a random leaf by its
    fingerprint; an index finds it by fp, and storing a page again replaces its row."""
    db = CrawlDB(tmp_path)
    fps = FPS
    with db.conn:
        for fp in fps:
            _insert_page(db, fp, b"t" * 5000)
    assert [r[0] for r in db.conn.execute("SELECT fp FROM pages ORDER BY rowid")] == fps
    assert _uses_fp_index(db, "pages")
    assert db.conn.execute("SELECT url FROM pages WHERE fp = ?", (fps[7],)).fetchone()[0] == f"http://a.test/{fps[7]}"
    with db.conn:
        _insert_page(db, fps[7], b"again")
    assert db.conn.execute("SELECT count(*), sum(fp = ?) FROM pages", (fps[7],)).fetchone() == (len(fps), 1)
    assert db.conn.execute("SELECT fp, text FROM pages ORDER BY rowid DESC LIMIT 1").fetchone() == (fps[7], b"again")
    db.close()


def test_a_directory_with_pages_keyed_by_fp_keeps_working(tmp_path):
    """Crawl directories made before stop 14 key ``pages`` (and ``urls``, ``fetches``) by fp
    itself; opening one leaves the table as it is, and the same statements read and replace its
    rows (a whole crawl resumed in such a directory: tests/e2e/test_crash_resume.py)."""
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("CREATE TABLE pages (fp INTEGER PRIMARY KEY, url TEXT NOT NULL, title TEXT, description TEXT,"
                 " keywords TEXT, headings TEXT, text TEXT, lang TEXT, encoding TEXT, last_modified TEXT, etag TEXT)")
    conn.execute("INSERT INTO pages (fp, url, text) VALUES (5, 'http://a.test/5', 'old')")
    conn.commit()
    conn.close()
    db = CrawlDB(tmp_path)
    assert "id" not in {r[1] for r in db.conn.execute("PRAGMA table_info(pages)")}
    with db.conn:
        _insert_page(db, 5, b"new")
        _insert_page(db, 6, b"six")
    assert db.conn.execute("SELECT fp, text FROM pages ORDER BY fp").fetchall() == [(5, b"new"), (6, b"six")]
    db.close()
