"""The crawl summary: printed at the end of ``skitter crawl`` and by ``skitter stats DIR``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .store.db import CrawlDB
from .store.forms import form_summary


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return max(0.0, (parse(end) - parse(start)).total_seconds())


def summary(db: CrawlDB) -> dict[str, Any]:
    q = lambda sql: db.conn.execute(sql).fetchall()  # noqa: E731
    one = lambda sql: db.conn.execute(sql).fetchone()[0]  # noqa: E731
    statuses = {str(k): v for k, v in q("SELECT status, count(*) FROM fetches WHERE status IS NOT NULL"
                                      " GROUP BY status ORDER BY status")}
    errors = {k: v for k, v in q(
        "SELECT substr(error, 1, instr(error || ':', ':') - 1) AS kind, count(*) FROM fetches"
        " WHERE error IS NOT NULL GROUP BY kind ORDER BY count(*) DESC")}
    first, last = db.conn.execute("SELECT min(fetched_at), max(fetched_at) FROM fetches").fetchone()
    fetched = one("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL")
    span = _seconds(first, last)
    return {
        "state": db.get_meta("state"),
        "seeds": db.get_meta("config", {}).get("seeds", []),
        "started_at": db.get_meta("started_at"),
        "finished_at": db.get_meta("finished_at"),
        "fetched": fetched,
        "pages": one("SELECT count(*) FROM pages"),
        "statuses": statuses,
        "errors": errors,
        "duplicates": one("SELECT count(*) FROM fetches WHERE duplicate_of IS NOT NULL"),
        "near_duplicates": one("SELECT count(*) FROM fetches WHERE near_duplicate_of IS NOT NULL"),
        "mirrors": _mirrors(db),
        "disallowed": one("SELECT count(*) FROM fetches WHERE error LIKE 'robots:%'"),
        "queued": one("SELECT count(*) FROM urls WHERE state != 2"),
        "seen": one("SELECT count(*) FROM urls"),
        "hosts": one("SELECT count(DISTINCT host) FROM fetches WHERE fetch_order IS NOT NULL"),
        "links": one("SELECT count(*) FROM links"),
        "bytes": one("SELECT coalesce(sum(content_length), 0) FROM fetches"),
        "fetch_seconds": span,
        "pages_per_second": (fetched / span) if span else None,
        "top_hosts": q("SELECT host, count(*) FROM fetches WHERE fetch_order IS NOT NULL GROUP BY host"
                       " ORDER BY count(*) DESC LIMIT 5"),
        "forms": form_summary(db.conn),   # --forms (issue #22); None when no form was found
    }


def _mirrors(db: CrawlDB) -> list[tuple[str, str, float]]:
    """Hosts whose pages are mostly near-duplicates of another host's (seed 004's mirrors)."""
    from .dedup import mirror_hosts

    pairs = db.conn.execute("SELECT url, near_duplicate_of FROM fetches WHERE near_duplicate_of IS NOT NULL").fetchall()
    if not pairs:
        return []
    per_host = dict(db.conn.execute("SELECT host, count(*) FROM fetches WHERE content_hash IS NOT NULL GROUP BY host"))
    return [(a, b, round(share, 3)) for a, b, share in mirror_hosts(pairs, per_host)]


def load_summary(directory: Path) -> dict[str, Any]:
    db = CrawlDB(directory, readonly=True)
    try:
        s = summary(db)
    finally:
        db.conn.close()
    from .watchdog import read_status

    # the watchdog's last word (skitter.watchdog): a stalled or blocked crawl says so here
    s["watchdog"] = read_status(directory)
    return s


def render(s: dict[str, Any]):
    """A rich renderable of the summary."""
    from rich.table import Table

    t = Table(title="skitter crawl summary", show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    rate = f"{s['pages_per_second']:.1f}" if s["pages_per_second"] else "-"
    rows = [
        ("state", s["state"] or "-"),
        ("seeds", ", ".join(s["seeds"][:3]) + (" …" if len(s["seeds"]) > 3 else "")),
        ("URLs fetched", str(s["fetched"])),
        ("HTML pages", str(s["pages"])),
        ("pages/s", rate),
        ("status codes", ", ".join(f"{k}: {v}" for k, v in s["statuses"].items()) or "-"),
        ("errors", ", ".join(f"{k}: {v}" for k, v in s["errors"].items()) or "none"),
        ("exact duplicates", str(s["duplicates"])),
        ("near-duplicates", str(s["near_duplicates"])),
        ("mirrored hosts", ", ".join(f"{a} mirrors {b} ({share:.0%})" for a, b, share in s["mirrors"]) or "none"),
        ("robots-disallowed", str(s["disallowed"])),
        ("hosts", str(s["hosts"])),
        ("links stored", str(s["links"])),
        ("URLs seen / still queued", f"{s['seen']} / {s['queued']}"),
        ("bytes", f"{s['bytes']:,}"),
        ("top hosts", ", ".join(f"{h} ({n})" for h, n in s["top_hosts"]) or "-"),
    ]
    f = s.get("forms")
    if f:
        rows.append(("forms", f"{f['found']:,} found, {f['searchable']:,} searchable, {f['planned']:,} planned"
                              f"{', ' + format(f['refused'], ',') + ' refused' if f['refused'] else ''}; "
                              f"{f['submitted']:,} submissions fetched, {f['result_pages']:,} further result "
                              f"pages, {f['records']:,} records reached"))
    w = s.get("watchdog")
    if w and s["state"] == "running":
        rows.append(("watchdog", f"{w['kind']} at {w['at']}: {w['message']}"))
    for k, v in rows:
        t.add_row(k, v)
    return t
