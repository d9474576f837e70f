"""PNG plots of a crawl for the /crawl page, drawn with matplotlib's Agg backend (no pyplot: a
Figure per call, safe in the server's worker threads). Each function takes a read-only
connection to crawl.db and returns PNG bytes."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from matplotlib.figure import Figure

from ..eval.plots import PANEL as SIZE, empty as _empty, png as _png


def _ts(s: str) -> float | None:
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def pages_over_time(conn: sqlite3.Connection) -> bytes:
    rows = conn.execute("SELECT fetched_at FROM fetches WHERE fetch_order IS NOT NULL AND fetched_at IS NOT NULL"
                        " ORDER BY fetch_order").fetchall()
    times = sorted(t for t in (_ts(r[0]) for r in rows) if t is not None)
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title("pages fetched over time")
    if not times:
        _empty(ax, "fetches")
    else:
        t0 = times[0]
        ax.plot([t - t0 for t in times], range(1, len(times) + 1), color="tab:blue")
        ax.set_xlabel("seconds since the first fetch")
        ax.set_ylabel("URLs fetched")
        ax.grid(alpha=0.3)
    return _png(fig)


def status_codes(conn: sqlite3.Connection) -> bytes:
    rows = conn.execute("SELECT coalesce(CAST(status AS TEXT), 'error'), count(*) FROM fetches"
                        " WHERE fetch_order IS NOT NULL GROUP BY 1 ORDER BY 1").fetchall()
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title("status codes")
    if not rows:
        _empty(ax, "fetches")
    else:
        labels = [r[0] for r in rows]
        colors = ["tab:green" if lab.startswith("2") else "tab:orange" if lab.startswith("3")
                  else "tab:red" for lab in labels]
        ax.bar(labels, [r[1] for r in rows], color=colors)
        ax.set_ylabel("fetches")
    return _png(fig)


def top_hosts(conn: sqlite3.Connection, n: int = 10) -> bytes:
    rows = conn.execute("SELECT host, count(*) FROM fetches WHERE fetch_order IS NOT NULL AND host IS NOT NULL"
                        " GROUP BY host ORDER BY count(*) DESC LIMIT ?", (n,)).fetchall()
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title(f"top {n} hosts")
    if not rows:
        _empty(ax, "hosts")
    else:
        rows = rows[::-1]
        ax.barh([str(r[0])[:40] for r in rows], [r[1] for r in rows], color="tab:purple")
        ax.set_xlabel("URLs fetched")
    return _png(fig)


def queue_size(conn: sqlite3.Connection) -> bytes:
    """URLs seen and URLs done against fetch order: a URL is seen once the page linking to it (its
    ``parent``) was fetched; seeds are seen from the start."""
    order = dict(conn.execute("SELECT url, fetch_order FROM fetches WHERE fetch_order IS NOT NULL"))
    n = len(order)
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title("frontier: URLs seen vs done")
    if not n:
        _empty(ax, "fetches")
        return _png(fig)
    ranks = {o: i for i, o in enumerate(sorted(order.values()), 1)}
    new_at = [0] * (n + 1)
    for (parent,) in conn.execute("SELECT parent FROM urls"):
        k = ranks.get(order.get(parent)) if parent else 0
        new_at[k if k is not None else n] += 1
    seen, total = [], 0
    for c in new_at:
        total += c
        seen.append(total)
    xs = list(range(n + 1))
    ax.plot(xs, seen, label="seen", color="tab:blue")
    ax.plot(xs, xs, label="done", color="tab:green")
    ax.fill_between(xs, xs, seen, alpha=0.15, color="tab:orange", label="queued")
    ax.set_xlabel("fetch order")
    ax.set_ylabel("URLs")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    return _png(fig)


def freshness(conn: sqlite3.Connection) -> bytes:
    """The recrawled collection's estimated freshness over time (docs/recrawl.md: each planning
    pass's mean of e^(−λ̂·(now − last visit)) over the collection), plain and importance-weighted."""
    try:
        rows = conn.execute("SELECT at, freshness, weighted_freshness FROM recrawl_log WHERE freshness IS NOT NULL"
                            " ORDER BY at").fetchall()
    except sqlite3.OperationalError:   # a crawl directory from before the recrawl tables
        rows = []
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title("estimated freshness of the collection")
    if not rows:
        _empty(ax, "revisits")
        return _png(fig)
    t0 = rows[0][0]
    hours = [(r[0] - t0) / 3600.0 for r in rows]
    ax.plot(hours, [r[1] for r in rows], label="freshness", color="tab:blue")
    ax.plot(hours, [r[2] for r in rows], label="weighted by importance", color="tab:orange", alpha=0.8)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("hours since the first planning pass")
    ax.set_ylabel("share of pages fresh")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
    return _png(fig)


def change_intervals(conn: sqlite3.Connection) -> bytes:
    """The distribution of the estimated change intervals (docs/recrawl.md): pages revisited at
    least once by bucket of 1 / (estimated rate), the collection's and each of the largest sites',
    side by side (``skitter stats``'s histogram)."""
    import numpy as np

    from ..stats import interval_distribution

    try:
        whole, sites = interval_distribution(conn)
    except sqlite3.OperationalError:   # a crawl directory from before the recrawl tables
        whole, sites = {}, {}
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    ax.set_title("estimated change intervals of the pages revisited")
    if not sum(whole.values()):
        _empty(ax, "revisits")
        return _png(fig)
    labels = list(whole)
    groups = [("all pages", whole), *sites.items()]
    width = 0.8 / len(groups)
    x = np.arange(len(labels))
    for i, (name, h) in enumerate(groups):
        ax.bar(x + (i - (len(groups) - 1) / 2) * width, [h[k] for k in labels], width, label=name)
    ax.set_xticks(x, labels, fontsize="small")
    ax.set_ylabel("pages")
    ax.legend(loc="upper left", fontsize="x-small")
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


PLOTS = {"pages": pages_over_time, "status": status_codes, "hosts": top_hosts, "queue": queue_size}
# on the crawl page once the crawl has revisited
RECRAWL_PLOTS = {"freshness": freshness, "intervals": change_intervals}
