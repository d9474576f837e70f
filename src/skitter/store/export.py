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
FIELDS = EXPORT_FIELDS + EXTRA_FIELDS + JOINED_FIELDS


def iter_records(db: CrawlDB) -> Iterator[dict]:
    """Every URL the crawler tried, in fetch order (URLs decided without a request last)."""
    cols = ", ".join(f"f.{c}" for c in EXPORT_FIELDS + EXTRA_FIELDS)
    forms = has_form_tables(db.conn)
    via = "u.via_form" if forms else "NULL AS via_form"
    join = " LEFT JOIN form_urls u ON u.fp = f.fp" if forms else ""
    for row in db.query(f"SELECT {cols}, {via} FROM fetches f{join}"
                        " ORDER BY f.fetch_order IS NULL, f.fetch_order, f.fp"):
        rec = {k: row[k] for k in FIELDS}
        rec["noindex"] = bool(rec["noindex"])
        rec["nofollow"] = bool(rec["nofollow"])
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
