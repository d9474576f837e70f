"""``skitter export``: the crawl as JSONL, CSV or one WARC file (DESIGN.md's export record)."""

from __future__ import annotations

import csv
import heapq
import json
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

from .db import EXPORT_FIELDS, EXTRA_FIELDS, CrawlDB
from .forms import has_form_tables

#: Fields of other tables than ``fetches``: ``via_form`` (forms, issue #22: the submission through
#: which the URL was reached, from ``form_urls``; null for every other URL).
JOINED_FIELDS = ("via_form",)
# the incremental crawler's (issue #20, docs/recrawl.md): null for a URL it never revisited
RECRAWL_FIELDS = ("visits", "changes", "last_changed", "change_rate", "change_rate_low", "change_rate_high",
                  "in_collection")
FIELDS = EXPORT_FIELDS + EXTRA_FIELDS + JOINED_FIELDS + RECRAWL_FIELDS
_DAY = 86400.0
_ORDER = " ORDER BY f.fetch_order IS NULL, f.fetch_order, f.fp"   # fetch order; then those without one


def iter_records(db: CrawlDB) -> Iterator[dict]:
    """Every URL the crawler tried, in fetch order (URLs decided without a request last)."""
    for _, rec in _rows(db):
        yield rec


def _rows(db: CrawlDB, *, by_time: bool = False) -> Iterator[tuple[sqlite3.Row, dict]]:
    """(the row, its export record) in fetch order, or ``by_time``: by the time fetched."""
    from .crawlstore import iso
    from .recrawlstore import has_tables

    cols = ", ".join(f"f.{c}" for c in EXPORT_FIELDS + EXTRA_FIELDS)
    forms = has_form_tables(db.conn)
    via = "u.via_form AS via_form" if forms else "NULL AS via_form"
    join = " LEFT JOIN form_urls u ON u.fp = f.fp" if forms else ""
    if has_tables(db.conn):
        recrawl = (", r.visits AS visits, r.changes AS changes, r.last_change AS last_changed,"
                   " r.rate AS change_rate, r.rate_low AS change_rate_low, r.rate_high AS change_rate_high,"
                   " r.in_collection AS in_collection, r.fp AS rfp")
        join += " LEFT JOIN recrawl_pages r ON r.fp = f.fp"
    else:
        recrawl = ", NULL AS rfp"
    sql = f"SELECT {cols}, {via}{recrawl}, f.fp AS fp_, f.warc_file AS warc_file_, f.warc_offset AS warc_offset_," \
          f" f.warc_length AS warc_length_ FROM fetches f{join}"
    order = (" ORDER BY f.fetch_order IS NULL, iif(f.fetch_order IS NULL, NULL, f.fetched_at), f.fetch_order, f.fp"
             if by_time else _ORDER)
    for row in db.query(sql + order):
        rec = {k: row[k] for k in EXPORT_FIELDS + EXTRA_FIELDS + JOINED_FIELDS}
        rec["noindex"] = bool(rec["noindex"])
        rec["nofollow"] = bool(rec["nofollow"])
        if row["rfp"] is None:
            rec.update(dict.fromkeys(RECRAWL_FIELDS))
        else:
            lc = row["last_changed"]
            rec.update(visits=row["visits"], changes=row["changes"], last_changed=None if lc is None else iso(lc),
                       in_collection=bool(row["in_collection"]))
            for k in ("change_rate", "change_rate_low", "change_rate_high"):   # per day
                rec[k] = None if row[k] is None else row[k] * _DAY
        yield row, rec


def _merged(dbs: list[CrawlDB]) -> Iterator[tuple[int, sqlite3.Row, dict]]:
    """The records of several crawl directories (a distributed crawl's workers'): each URL once,
    chosen by ``skitter merge``'s rule (:func:`skitter.merge.winners`: the latest fetch wins), in
    the order fetched, ``fetch_order`` numbered anew as ``merge`` does. (index of the directory,
    row, record)"""
    from ..merge import winners

    best = winners(db.conn.execute("SELECT fp, fetched_at, fetch_order FROM fetches") for db in dbs)

    def stream(i: int) -> Iterator[tuple[tuple, int, sqlite3.Row, dict]]:
        for row, rec in _rows(dbs[i], by_time=True):
            if best.get(row["fp_"]) == i:
                order = rec["fetch_order"]
                # fetched by time (a tie by directory), then those decided without a request by fp
                yield ((False, rec["fetched_at"] or "", order, i) if order is not None
                       else (True, "", 0, row["fp_"])), i, row, rec

    n = 0
    for _, i, row, rec in heapq.merge(*(stream(i) for i in range(len(dbs))), key=lambda t: t[0]):
        if rec["fetch_order"] is not None:
            n += 1
            rec["fetch_order"] = n
        yield i, row, rec


def export(directories: Path | Sequence[Path], fmt: str, out: Path | None) -> int:
    """Write the export of one crawl directory, or of several as one (each URL once, as ``skitter
    merge`` would merge them); returns the number of records written."""
    dirs = [directories] if isinstance(directories, Path) else list(directories)
    dbs: list[CrawlDB] = []
    try:
        for d in dirs:
            dbs.append(CrawlDB(d, readonly=True))
        records: Iterable[tuple[int, sqlite3.Row, dict]] = (
            ((0, row, rec) for row, rec in _rows(dbs[0])) if len(dbs) == 1 else _merged(dbs))
        if fmt == "warc":
            from .warc import export_warc

            if out is None:
                from ..errors import UsageError

                raise UsageError("--format warc needs -o FILE")
            if len(dbs) == 1:   # one directory: its records' WARC locations alone, in the same order
                pairs = [(str(dirs[0] / "warc" / f), offset, length) for f, offset, length in dbs[0].query(
                    "SELECT f.warc_file, f.warc_offset, f.warc_length FROM fetches f WHERE f.warc_file IS NOT NULL"
                    + _ORDER)]
            else:
                pairs = [(str(dirs[i] / "warc" / row["warc_file_"]), row["warc_offset_"], row["warc_length_"])
                         for i, row, _ in records if row["warc_file_"] is not None]
            export_warc(pairs, out)
            return len(pairs)
        stream: IO[str] = open(out, "w", encoding="utf-8", newline="") if out else sys.stdout
        n = 0
        try:
            if fmt == "jsonl":
                for _, _, rec in records:
                    stream.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    n += 1
            else:
                w = csv.DictWriter(stream, fieldnames=list(FIELDS))
                w.writeheader()
                for _, _, rec in records:
                    w.writerow({k: ("" if v is None else v) for k, v in rec.items()})
                    n += 1
        finally:
            if out:
                stream.close()
        return n
    finally:
        for db in dbs:
            db.conn.close()
