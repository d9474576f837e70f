"""The crawl database's form tables (``forms`` and ``form_urls``, created with the others by
:mod:`skitter.store.db`): the writes of the form crawler (:mod:`skitter.formcrawl`, inside the
store's transactions) and the reads of ``skitter stats``, the export's ``via_form`` and
``skitter eval-forms``.

- ``forms``: one row per distinct form found (``Form.key``): the page it was first found on, its
  action, method and the whole form as JSON (inputs with their kinds, options and defaults);
  ``searchable`` and ``reason`` (``classify``'s verdict, or why a searchable form is not planned);
  ``status``: ``never`` (not searchable: recorded, never submitted), ``refused`` (searchable, but
  its action is outside the scope or disallowed by robots.txt), ``queued`` (planned, waiting for a
  planner slot), ``active``, ``done``; the planner's state (``FormPlanner.to_json()``, deflated)
  and the submissions it issued.
- ``form_urls``: the URLs reached through a submission, by fingerprint: ``via_form`` is the
  submission's URL, ``role`` is ``submission`` (the submission itself, or where it redirected),
  ``results`` (a further page of its results) or ``record`` (a page first found on its results).

No import of :mod:`skitter.forms` here (it loads the HTML parser, which the crawl process does
without when forms are off).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from typing import Any
from collections.abc import Iterator

from ..urls import fingerprint
from .db import CrawlDB
from .text import deflate, page_text

SUBMISSION, RESULTS, RECORD = "submission", "results", "record"
ROLES = (SUBMISSION, RESULTS, RECORD)
PLANNED = ("queued", "active", "done")


def pack_state(state: str) -> bytes:
    return deflate(state.encode("utf-8"), 1)


def unpack_state(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8")


class FormRecords:
    """The writer's side, on the crawl's one connection (every write joins its transaction)."""

    def __init__(self, db: CrawlDB) -> None:
        self.db = db

    # -- forms ----------------------------------------------------------------------------------
    def has_form(self, key: str) -> bool:
        return self.db.conn.execute("SELECT 1 FROM forms WHERE key = ?", (key,)).fetchone() is not None

    def add_form(self, key: str, form: dict[str, Any], *, searchable: bool, status: str, reason: str,
                 depth: int | None, priority: float | None, found_at: str, state: str | None) -> None:
        self.db.ensure_tx()
        self.db.conn.execute(
            "INSERT OR IGNORE INTO forms (key, page_url, action, method, form, searchable, status, reason, depth,"
            " priority, found_at, planner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, form["page_url"], form["action"], form["method"], json.dumps(form, ensure_ascii=False),
             int(searchable), status, reason, depth, priority, found_at,
             None if state is None else pack_state(state)))

    def save_planner(self, key: str, *, status: str, submitted: int, state: str) -> None:
        self.db.ensure_tx()
        self.db.conn.execute("UPDATE forms SET status = ?, submitted = ?, planner = ? WHERE key = ?",
                             (status, submitted, pack_state(state), key))

    def planners(self, status: str, limit: int | None = None) -> list[tuple[str, str, int, float, str]]:
        """(key, planner state, depth, priority, page URL) of the planned forms in ``status``, in the
        order they were found."""
        sql = "SELECT key, planner, depth, priority, page_url FROM forms WHERE status = ? ORDER BY id"
        rows = self.db.conn.execute(sql + ("" if limit is None else f" LIMIT {int(limit)}"), (status,))
        return [(k, unpack_state(p), d, pr, u) for k, p, d, pr, u in rows]

    def planned_actions(self) -> list[str]:
        """The actions of the planned forms (queued, active or done), in the order found."""
        marks = ",".join("?" * len(PLANNED))
        return [a for (a,) in self.db.conn.execute(
            f"SELECT action FROM forms WHERE status IN ({marks}) ORDER BY id", PLANNED) if a]

    def queued(self) -> list[tuple[str, str, int, float, str]]:
        """(key, action, depth, priority, page URL) of the queued forms, in the order found (the
        state of one that starts: :meth:`state`)."""
        return self.db.conn.execute("SELECT key, action, depth, priority, page_url FROM forms WHERE status = 'queued'"
                                    " ORDER BY id").fetchall()

    def state(self, key: str) -> str:
        """The planner state stored for the form ``key``."""
        (blob,) = self.db.conn.execute("SELECT planner FROM forms WHERE key = ?", (key,)).fetchone()
        return unpack_state(blob)

    # -- URLs reached through a submission --------------------------------------------------------
    def mark(self, url: str, via_form: str, form: str, role: str) -> None:
        """``url`` was first reached through submission ``via_form`` (the first mark stays)."""
        self.db.ensure_tx()
        self.db.conn.execute("INSERT OR IGNORE INTO form_urls (fp, url, via_form, form, role) VALUES (?, ?, ?, ?, ?)",
                             (fingerprint(url), url, via_form, form, role))

    def via(self, url: str) -> tuple[str, str, str] | None:
        """(via_form, form key, role) of ``url``, or None if no submission reached it."""
        return self.db.conn.execute("SELECT via_form, form, role FROM form_urls WHERE fp = ?",
                                    (fingerprint(url),)).fetchone()

    def page_text(self, url: str) -> str:
        """The stored text of page ``url`` ('' if the crawl stored none)."""
        row = self.db.conn.execute("SELECT text FROM pages WHERE fp = ?", (fingerprint(url),)).fetchone()
        return (page_text(row[0]) or "") if row is not None else ""

    def result_pages(self, via_form: str) -> int:
        """Further result pages of a submission marked so far (read once per submission after a
        restart)."""
        return self.db.conn.execute("SELECT count(*) FROM form_urls WHERE via_form = ? AND role = ?",
                                    (via_form, RESULTS)).fetchone()[0]

    def awaited(self, submission: str) -> bool:
        """Whether a URL that stands for ``submission`` (where it redirected) is still to be
        fetched."""
        return self.db.conn.execute(
            "SELECT 1 FROM form_urls u WHERE u.via_form = ? AND u.role = ? AND u.url != ?"
            " AND NOT EXISTS (SELECT 1 FROM fetches f WHERE f.fp = u.fp)",
            (submission, SUBMISSION, submission)).fetchone() is not None

    def tried(self, url: str) -> bool:
        """Whether the crawl has a fetch record of ``url`` (a request made, or refused)."""
        return self.db.conn.execute("SELECT 1 FROM fetches WHERE fp = ?", (fingerprint(url),)).fetchone() is not None


# -- readers ------------------------------------------------------------------------------------------

def has_form_tables(conn: sqlite3.Connection) -> bool:
    """A crawl directory written before forms (opened read-only, so not upgraded) has no tables."""
    return conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                        " AND name IN ('forms', 'form_urls')").fetchone()[0] == 2


def form_summary(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """``skitter stats``'s figures of the form crawl, or None if the crawl found no form: forms
    found, searchable, planned, refused; submissions issued and fetched; further result pages and
    records (pages first found on result pages) fetched with a 2xx; and each planned form."""
    if not has_form_tables(conn) or conn.execute("SELECT count(*) FROM forms").fetchone()[0] == 0:
        return None
    one = lambda sql, *a: conn.execute(sql, a).fetchone()[0]  # noqa: E731
    fetched = ("SELECT count(*) FROM form_urls u JOIN fetches f ON f.fp = u.fp WHERE u.role = ?"
               " AND f.fetch_order IS NOT NULL")
    ok = " AND f.status BETWEEN 200 AND 299"
    by_form = [{"action": a, "page": p, "status": s, "submitted": n, "reason": r}
               for a, p, s, n, r in conn.execute(
                   "SELECT action, page_url, status, submitted, reason FROM forms"
                   " WHERE status IN ('queued', 'active', 'done', 'refused') ORDER BY id LIMIT 50")]
    return {
        "found": one("SELECT count(*) FROM forms"),
        "searchable": one("SELECT count(*) FROM forms WHERE searchable"),
        "planned": one("SELECT count(*) FROM forms WHERE status IN ('queued', 'active', 'done')"),
        "refused": one("SELECT count(*) FROM forms WHERE status = 'refused'"),
        "never": dict(conn.execute("SELECT reason, count(*) FROM forms WHERE status = 'never'"
                                   " GROUP BY reason ORDER BY count(*) DESC LIMIT 8").fetchall()),
        "submissions": one("SELECT coalesce(sum(submitted), 0) FROM forms"),
        "submitted": one(fetched, SUBMISSION),
        "result_pages": one(fetched + ok, RESULTS),
        "records": one(fetched + ok, RECORD),
        "by_form": by_form,
    }


def via_forms(conn: sqlite3.Connection) -> Iterator[tuple[int, str]]:
    """(fingerprint, via_form) of every URL reached through a submission (the export's field)."""
    if has_form_tables(conn):
        yield from conn.execute("SELECT fp, via_form FROM form_urls")
