"""``skitter merge DIR... -o DIR``: one crawl directory from the directories of a distributed crawl's
workers (or of any crawls), on which ``search``, ``rank``, ``serve``, ``export`` and
``eval-crawl`` work as on a local crawl.

Each URL once: where several directories fetched a URL (a worker killed mid-crawl, its hosts
moved, a page fetched again), the latest fetch wins, with its page text and its outgoing links; the
link graph is the union of the winners' links, so links between pages fetched by different
workers join up. ``fetch_order`` is renumbered by fetch time. WARC files are copied (renamed
``<n>-<name>`` after the directory they come from) and the fetch records point into the copies.
The near-duplicate sketches are not merged: a merged directory is for reading, not for resuming.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import CrawlDirError
from .store.db import DB_NAME, CrawlDB

__all__ = ["merge", "winners"]


def winners(sources: Iterable[Iterable[tuple[int, str | None, int | None]]]) -> dict[int, int]:
    """The rule of ``merge`` (and of ``export DIR...``): for each URL fingerprint, the index of the
    source whose fetch wins, from each source's ``(fp, fetched_at, fetch_order)`` rows. The
    latest fetch wins; a URL decided without a request (no ``fetch_order``) loses to any fetch;
    on a tie the first source."""
    best: dict[int, tuple[tuple[bool, str], int]] = {}
    for i, rows in enumerate(sources):
        for fp, fetched_at, order in rows:
            key = (order is not None, fetched_at or "")
            if fp not in best or key > best[fp][0]:
                best[fp] = (key, i)
    return {fp: i for fp, (_, i) in best.items()}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _check_warc_files(src: Path) -> None:
    """CrawlDirError if a WARC file that ``src``'s fetch records name is missing: the merge would
    copy the records without the responses they point to (the merged crawl's WARC export fails)."""
    conn = sqlite3.connect(f"file:{src / DB_NAME}?mode=ro", uri=True)
    try:
        names = [n for (n,) in conn.execute("SELECT DISTINCT warc_file FROM fetches WHERE warc_file IS NOT NULL")]
    except sqlite3.DatabaseError as exc:
        raise CrawlDirError(f"{src}: cannot read its {DB_NAME}: {exc}") from None
    finally:
        conn.close()
    for name in names:
        if not (src / "warc" / name).is_file():
            raise CrawlDirError(f"a WARC file of {src} is missing: {src / 'warc' / name} (nothing was merged)")


def merge(sources: list[Path], out: Path) -> dict[str, int]:
    """Merge ``sources`` into the new crawl directory ``out``; returns counts."""
    for src in sources:
        if not (src / DB_NAME).exists():
            raise CrawlDirError(f"{src} is not a crawl directory (no {DB_NAME})")
        if (src / DB_NAME).stat().st_size == 0:
            raise CrawlDirError(f"{src} is not a crawl directory (its {DB_NAME} is empty)")
        _check_warc_files(src)
    if (out / DB_NAME).exists():
        raise CrawlDirError(f"{out} already holds a crawl: merge writes a new directory")
    out.mkdir(parents=True, exist_ok=True)
    states = []
    for src in sources:   # migrate each (an older schema) and settle its WAL
        src_db = CrawlDB(src)
        states.append(src_db.get_meta("state"))
        src_db.close()
    db = CrawlDB(out)
    conn = db.conn
    try:
        fcols = [c for c in _columns(conn, "fetches") if c != "id"]
        pcols = [c for c in _columns(conn, "pages") if c != "id"]
        lcols = _columns(conn, "links")
        ucols = [c for c in _columns(conn, "urls") if c != "id"]
        def rows(src: Path) -> Iterator[tuple[int, str | None, int | None]]:
            conn.execute("ATTACH DATABASE ? AS s", (f"file:{src / DB_NAME}?mode=ro",))
            try:
                yield from conn.execute("SELECT fp, fetched_at, fetch_order FROM s.fetches")
            finally:
                conn.execute("DETACH DATABASE s")

        best = winners(rows(src) for src in sources)   # the winner of each URL
        warc_dir = out / "warc"
        warc_dir.mkdir(exist_ok=True)
        conn.execute("CREATE TEMP TABLE win (fp INTEGER PRIMARY KEY)")
        for i, src in enumerate(sources):
            mine = [fp for fp, j in best.items() if j == i]
            conn.execute("ATTACH DATABASE ? AS s", (f"file:{src / DB_NAME}?mode=ro",))
            conn.execute("BEGIN")
            try:
                conn.execute("DELETE FROM temp.win")
                conn.executemany("INSERT INTO temp.win VALUES (?)", [(fp,) for fp in mine])
                cols = ", ".join(fcols)
                conn.execute(f"INSERT INTO fetches ({cols}) SELECT {cols} FROM s.fetches WHERE fp IN temp.win")
                conn.execute("UPDATE fetches SET warc_file = ? || '-' || warc_file WHERE fp IN temp.win"
                             " AND warc_file IS NOT NULL", (str(i + 1),))
                cols = ", ".join(pcols)
                conn.execute(f"INSERT INTO pages ({cols}) SELECT {cols} FROM s.pages WHERE fp IN temp.win")
                cols = ", ".join(lcols)
                conn.execute(f"INSERT INTO links ({cols}) SELECT {cols} FROM s.links WHERE src IN temp.win")
                conn.execute("INSERT OR IGNORE INTO contents SELECT * FROM s.contents")
                conn.execute("INSERT OR REPLACE INTO robots SELECT * FROM s.robots")
                cols = ", ".join(ucols)
                conn.execute(f"INSERT OR IGNORE INTO urls ({cols}) SELECT {cols} FROM s.urls WHERE state = 2")
                if i == 0:
                    for name in ("config", "started_at"):
                        row = conn.execute("SELECT value FROM s.meta WHERE key = ?", (name,)).fetchone()
                        if row:
                            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, row[0]))
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                conn.execute("DETACH DATABASE s")
            for f in sorted((src / "warc").glob("*.warc*")) if (src / "warc").is_dir() else ():
                shutil.copyfile(f, warc_dir / f"{i + 1}-{f.name}")
        # a URL fetched is done in the merged frontier too; fetch_order by fetch time
        conn.execute("BEGIN")
        conn.execute("INSERT OR IGNORE INTO urls (fp, url, host, depth, parent, priority, seq, state)"
                     " SELECT fp, url, coalesce(host, ''), coalesce(depth, 0), parent, 0, id, 2 FROM fetches")
        conn.execute("UPDATE urls SET state = 2")
        ordered = conn.execute("SELECT id FROM fetches WHERE fetch_order IS NOT NULL"
                               " ORDER BY fetched_at, fetch_order").fetchall()
        conn.execute("UPDATE fetches SET fetch_order = NULL")
        conn.executemany("UPDATE fetches SET fetch_order = ? WHERE id = ?",
                         [(n, rid) for n, (rid,) in enumerate(ordered, 1)])
        ended = conn.execute("SELECT max(fetched_at) FROM fetches").fetchone()[0]
        conn.execute("COMMIT")
        # stopped if any directory is (a cluster stopped by --max-pages or by a lost Redis leaves
        # every worker's directory stopped: the merge says so); a worker killed and not restarted
        # leaves its directory "running" while the others finish the crawl: that one does not count
        db.set_meta("state", "stopped" if "stopped" in states else "finished")
        if ended:
            db.set_meta("finished_at", ended)
        db.set_meta("merged_from", [str(s) for s in sources])
        db.commit()
        return {"urls": conn.execute("SELECT count(*) FROM fetches").fetchone()[0],
                "pages": conn.execute("SELECT count(*) FROM pages").fetchone()[0],
                "links": conn.execute("SELECT count(*) FROM links").fetchone()[0]}
    finally:
        db.close()
