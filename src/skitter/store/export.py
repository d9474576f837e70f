"""``skitter export``: the crawl as JSONL, CSV or one WARC file (DESIGN.md's export record)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import IO
from collections.abc import Iterator

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


def iter_records(db: CrawlDB) -> Iterator[dict]:
    """Every URL the crawler tried, in fetch order (URLs decided without a request last)."""
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
    sql = f"SELECT {cols}, {via}{recrawl} FROM fetches f{join}"
    for row in db.query(sql + " ORDER BY f.fetch_order IS NULL, f.fetch_order, f.fp"):
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
        yield rec


def export(directory: Path, fmt: str, out: Path | None) -> int:
    db = CrawlDB(directory, readonly=True)
    try:
        if fmt == "warc":
            from .warc import export_warc

            if out is None:
                raise SystemExit("skitter: error: --format warc needs -o FILE")
            rows = list(db.query("SELECT warc_file, warc_offset, warc_length FROM fetches"
                                 " WHERE warc_file IS NOT NULL ORDER BY fetch_order"))
            export_warc([(str(directory / "warc" / r[0]), r[1], r[2]) for r in rows], out)
            return len(rows)
        stream: IO[str] = open(out, "w", encoding="utf-8", newline="") if out else sys.stdout
        n = 0
        try:
            if fmt == "jsonl":
                for rec in iter_records(db):
                    stream.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    n += 1
            else:
                w = csv.DictWriter(stream, fieldnames=list(FIELDS))
                w.writeheader()
                for rec in iter_records(db):
                    w.writerow({k: ("" if v is None else v) for k, v in rec.items()})
                    n += 1
        finally:
            if out:
                stream.close()
        return n
    finally:
        db.conn.close()
