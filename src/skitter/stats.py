"""The crawl summary: printed at the end of ``skitter crawl`` and by ``skitter stats DIR``."""

from __future__ import annotations

import math
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from .store.crawlstore import iso
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
        "seeds": db.config().get("seeds", []),
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
        # (a recrawl's pages wait for their next revisit: scheduled, not queued)
        "queued": one("SELECT count(*) FROM urls WHERE state != 2 AND revisit = 0"),
        "revisits_scheduled": one("SELECT count(*) FROM urls WHERE state != 2 AND revisit = 1"),
        "seen": one("SELECT count(*) FROM urls"),
        "hosts": one("SELECT count(DISTINCT host) FROM fetches WHERE fetch_order IS NOT NULL"),
        "links": one("SELECT count(*) FROM links"),
        "bytes": one("SELECT coalesce(sum(content_length), 0) FROM fetches"),
        "fetch_seconds": span,
        "pages_per_second": (fetched / span) if span else None,
        "top_hosts": q("SELECT host, count(*) FROM fetches WHERE fetch_order IS NOT NULL GROUP BY host"
                       " ORDER BY count(*) DESC LIMIT 5"),
        "forms": form_summary(db.conn),   # --forms (issue #22); None when no form was found
        "recrawl": recrawl_summary(db),
    }


#: The buckets of the estimated change intervals (``skitter stats``, the web UI's crawl page).
INTERVAL_BUCKETS = ((60.0, "<1m"), (600.0, "1-10m"), (3600.0, "10m-1h"), (86400.0, "1h-1d"), (math.inf, ">1d"))
NEVER = "never changed"


def interval_histogram(rows: list[tuple[float | None, int | None]]) -> dict[str, int]:
    """Pages by estimated change interval (1 / rate) in :data:`INTERVAL_BUCKETS`, from their
    ``(rate, changes seen)``; a page revisited but never seen changing is ``never changed``
    (its estimate is the prior's, not its own)."""
    out = {label: 0 for _, label in INTERVAL_BUCKETS}
    out[NEVER] = 0
    for rate, changes in rows:
        if not changes or not rate or rate <= 0:
            out[NEVER] += 1
            continue
        interval = 1.0 / rate
        out[next(label for bound, label in INTERVAL_BUCKETS if interval < bound)] += 1
    return out


def interval_distribution(conn: sqlite3.Connection, sites: int = 5,
                          hosts: list[str] | None = None) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The histogram of the collection's pages revisited at least once, and the same for each of
    ``hosts`` (default: the ``sites`` hosts with the most pages revisited)."""
    rows = conn.execute("SELECT host, rate, x FROM recrawl_pages WHERE in_collection = 1 AND n > 0").fetchall()
    by_host: dict[str, list[tuple[float | None, int | None]]] = {}
    for host, rate, x in rows:
        by_host.setdefault(host, []).append((rate, x))
    top = hosts if hosts is not None else sorted(by_host, key=lambda h: (-len(by_host[h]), h))[:sites]
    return interval_histogram([(r, x) for _, r, x in rows]), {h: interval_histogram(by_host.get(h, [])) for h in top}


def recrawl_summary(db: CrawlDB) -> dict[str, Any] | None:
    """The collection's state (the incremental crawler, docs/recrawl.md); None if never revisited."""
    from .store.recrawlstore import has_tables

    if not has_tables(db.conn):
        return None
    one = lambda sql: db.conn.execute(sql).fetchone()  # noqa: E731
    members = one("SELECT count(*) FROM recrawl_pages WHERE in_collection = 1")[0]
    if not members and not one("SELECT count(*) FROM recrawl_pages")[0]:
        return None
    revisits, changes, not_modified, first_at, last_at, failed = one(
        "SELECT count(*), sum(changed = 1), sum(kind = '304'), min(at), max(at), sum(kind = 'error')"
        " FROM recrawl_visits WHERE kind != 'first'")
    # where revisits failed (a host down for a while: its pages keep their stored versions)
    failing = db.conn.execute(
        "SELECT p.host, count(*) FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp WHERE v.kind = 'error'"
        " GROUP BY p.host ORDER BY count(*) DESC, p.host LIMIT 3").fetchall() if failed else []
    hours = (last_at - first_at) / 3600.0 if revisits and last_at > first_at else None
    states = dict(db.conn.execute("SELECT state, count(*) FROM recrawl_pages GROUP BY state").fetchall())
    log = db.conn.execute("SELECT at, freshness, weighted_freshness, added, discarded FROM recrawl_log"
                          " ORDER BY at DESC LIMIT 1").fetchone()
    rates = db.conn.execute("SELECT rate, x FROM recrawl_pages WHERE in_collection = 1 AND n > 0").fetchall()
    # the estimated change intervals of the pages seen changing at least once
    changing = sorted(1.0 / r for r, x in rates if x and r and r > 0)

    def quantile(values: list[float], q: float) -> float | None:
        return values[min(len(values) - 1, int(q * len(values)))] if values else None

    sites: list[dict[str, Any]] = []
    for host, n in db.conn.execute("SELECT host, count(*) FROM recrawl_pages WHERE in_collection = 1"
                                   " GROUP BY host ORDER BY count(*) DESC LIMIT 5").fetchall():
        site = sorted(1.0 / r[0] for r in db.conn.execute(
            "SELECT rate FROM recrawl_pages WHERE host = ? AND in_collection = 1 AND x > 0 AND rate > 0", (host,)))
        sites.append({"host": host, "pages": n, "changing": len(site), "median_interval": quantile(site, 0.5)})
    histogram, site_histograms = interval_distribution(db.conn, hosts=[entry["host"] for entry in sites])
    for entry in sites:
        entry["intervals"] = site_histograms[entry["host"]]
    return {
        "pages": members,
        "freshness": None if log is None else log[1],
        "weighted_freshness": None if log is None else log[2],
        "freshness_at": None if log is None else iso(log[0]),
        "revisits": revisits or 0,
        "changes": changes or 0,
        "failed": failed or 0,
        "failed_hosts": {host: n for host, n in failing},
        "not_modified_share": (not_modified or 0) / revisits if revisits else None,
        "revisits_per_hour": revisits / hours if hours else None,
        "changes_per_hour": (changes or 0) / hours if hours else None,
        "added": log[3] if log else 0,
        "discarded": states.get("discarded", 0),
        "gone": states.get("gone", 0),
        "disallowed": states.get("disallowed", 0),
        "estimated": len(rates),
        "never_changed": len(rates) - len(changing),
        "change_interval_quartiles": [quantile(changing, q) for q in (0.25, 0.5, 0.75)],
        "change_interval_deciles": {f"p{round(100 * q)}": quantile(changing, q) for q in (0.1, 0.5, 0.9)},
        "change_intervals": histogram,
        "sites": sites,
    }


def _histogram(h: dict[str, int]) -> str:
    return ", ".join(f"{label}: {n}" for label, n in h.items())


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _mirrors(db: CrawlDB) -> list[tuple[str, str, float]]:
    """Hosts whose pages are mostly exact or near duplicates of another host's (seed 004's mirrors:
    an exact copy of a site is the plainest mirror)."""
    from .neardup import mirror_hosts

    pairs = db.conn.execute("SELECT url, coalesce(duplicate_of, near_duplicate_of) FROM fetches"
                            " WHERE duplicate_of IS NOT NULL OR near_duplicate_of IS NOT NULL").fetchall()
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

    from .store.lock import holder

    # the watchdog's last word (skitter.watchdog): a stalled or blocked crawl says so here
    s["watchdog"] = read_status(directory)
    # who crawls the directory now (skitter.store.lock): "running" with nobody is an interrupted
    # crawl, and says so in the JSON as in the text (kill -9: the kernel dropped the lock)
    s["crawling_pid"] = holder(directory)
    if s["state"] == "running" and s["crawling_pid"] is None:
        s["state"] = "interrupted"
    s["index"] = _index(directory)
    return s


def index_line(ix: dict[str, Any] | None) -> str:
    """The summary's search-index entry in words (``skitter stats``, the web UI's crawl page)."""
    if ix is None:
        return "none (`skitter index DIR` builds it)"
    return f"{ix['docs']:,} pages" + (f"; {ix['note']}" if ix["note"] else ", up to date")


def _index(directory: Path) -> dict[str, Any] | None:
    """The search index: its pages and how far behind the crawl it is (None: no readable index)."""
    from .errors import SkitterError
    from .index.indexer import Indexer, lag_note

    try:
        st = Indexer(directory).status()
    except (SkitterError, sqlite3.Error):
        return None
    if not st["exists"]:
        return None
    return {"docs": st["docs"], "behind": max(0, st["crawl_order"] - st["last_order"]),
            "note": lag_note(st, directory)}


def _state(s: dict[str, Any]) -> str:
    state = s["state"] or "-"
    if state == "interrupted":   # no process holds a directory left "running" (load_summary)
        return "interrupted: run the same command to resume"
    if state != "running" or "crawling_pid" not in s:   # the summary of a crawl that just ended, or a merge's
        return state
    return f"running (skitter process {s['crawling_pid']})" if s["crawling_pid"] else "running"


def render(s: dict[str, Any]):
    """A rich renderable of the summary."""
    from rich.table import Table

    from .terminal import text

    t = Table(title="skitter crawl summary", show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    rate = f"{s['pages_per_second']:.1f}" if s["pages_per_second"] else "-"
    rows = [
        ("state", _state(s)),
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
        ("URLs seen / still queued", f"{s['seen']} / {s['queued']}"
                                     + (f" ({s['revisits_scheduled']} revisits scheduled)" if s.get("revisits_scheduled") else "")),
        ("bytes", f"{s['bytes']:,}"),
        ("top hosts", ", ".join(f"{h} ({n})" for h, n in s["top_hosts"]) or "-"),
    ]
    f = s.get("forms")
    if f:
        rows.append(("forms", f"{f['found']:,} found, {f['searchable']:,} searchable, {f['planned']:,} planned"
                              f"{', ' + format(f['refused'], ',') + ' refused' if f['refused'] else ''}; "
                              f"{f['submitted']:,} submissions fetched, {f['result_pages']:,} further result "
                              f"pages, {f['records']:,} records reached"))
    r = s.get("recrawl")
    if r:
        fresh = "-" if r["freshness"] is None else f"{r['freshness']:.3f} (weighted {r['weighted_freshness']:.3f})"
        per_hour = "-" if r["revisits_per_hour"] is None else \
            f"{r['revisits_per_hour']:.0f} revisits, {r['changes_per_hour']:.0f} changes"
        share = "-" if r["not_modified_share"] is None else f"{r['not_modified_share']:.0%}"
        rows += [
            ("collection", f"{r['pages']} pages ({r['added']} added, {r['discarded']} discarded by refinement,"
                           f" {r['gone']} gone, {r['disallowed']} disallowed)"),
            ("estimated freshness", fresh),
            ("revisits / changes", f"{r['revisits']} / {r['changes']} ({share} answered 304)"),
            ("revisits failed", (f"{r['failed']:,} (" + ", ".join(f"{h}: {n:,}" for h, n in r["failed_hosts"].items())
                                 + ")") if r.get("failed") else "none"),
            ("per hour", per_hour),
            ("change intervals", f"{r['never_changed']} of {r['estimated']} pages revisited never seen changing;"
                                 " the others' estimated intervals "
                                 + " / ".join(duration(x) for x in r["change_interval_quartiles"])
                                 + " (quartiles)"),
            ("interval histogram", _histogram(r["change_intervals"])
                                   + " (pages revisited, by estimated change interval; 10 % / 90 % of the changing: "
                                   + " / ".join(duration(r["change_interval_deciles"][k]) for k in ("p10", "p90"))
                                   + ")"),
            ("per site", ", ".join(f"{x['host']}: {x['changing']} of {x['pages']} changing, median "
                                   f"{duration(x['median_interval'])}" for x in r["sites"]) or "-"),
        ]
        rows += [(f"  {x['host']}", _histogram(x["intervals"])) for x in r["sites"]]
    if "index" in s:   # (the summary of a directory, not a merge's)
        rows.append(("search index", index_line(s["index"])))
    w = s.get("watchdog")
    if w and s["state"] == "running" and s.get("crawling_pid", 0) is not None:
        rows.append(("watchdog", f"{w['kind']} at {w['at']}: {w['message']}"))
    for k, v in rows:
        t.add_row(k, text(v))   # seeds, hosts and the watchdog's message may hold brackets or controls
    return t
