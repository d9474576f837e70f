"""PNG plots of a crawl for the /crawl page, drawn with matplotlib's Agg backend (no pyplot: a
Figure per call, safe in the server's worker threads). Each function takes a read-only
connection to crawl.db and returns PNG bytes."""

from __future__ import annotations

import io
import sqlite3
from datetime import datetime

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

SIZE = (6.4, 3.6)


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def _empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} yet", ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])


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


PLOTS = {"pages": pages_over_time, "status": status_codes, "hosts": top_hosts, "queue": queue_size}


# -- the crawl's evaluation (``skitter serve DIR --labels FILE``) --------------------------------
# Each takes an :class:`~skitter.evalcrawl.Evaluation` of the crawl; drawn by skitter.evalcrawl's
# panels, as in ``skitter eval-crawl --plot``.

def _eval_png(ev, draw, what: str, has):
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    if not has(ev):
        draw(ax, {})
        _empty(ax, what)
    else:
        draw(ax, {"this crawl": ev})
    return ax, fig


def eval_harvest(ev) -> bytes:
    from ..evalcrawl import draw_harvest

    ax, fig = _eval_png(ev, draw_harvest, "fetches", lambda e: bool(e.harvest))
    if ev.harvest and ev.pages:
        ax.axhline(ev.relevant_total / ev.pages, color="gray", linestyle=":", linewidth=1,
                   label="topic's share of the labelled pages")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_title(f"harvest rate: topic {ev.topic!r}")
    return _png(fig)


def eval_recall(ev) -> bytes:
    from ..evalcrawl import draw_recall

    ax, fig = _eval_png(ev, draw_recall, "fetches", lambda e: bool(e.recall_curve))
    ax.set_title(f"topic recall: topic {ev.topic!r} (budgets marked)")
    return _png(fig)


def eval_top_share(ev) -> bytes:
    from ..evalcrawl import draw_top_share

    ax, fig = _eval_png(ev, draw_top_share, "fetches", lambda e: bool(e.top_share_at))
    ax.set_title(f"top-1% PageRank pages ({ev.top_k}) fetched")
    return _png(fig)


def eval_avg_pagerank(ev) -> bytes:
    from ..evalcrawl import draw_avg_pagerank

    ax, fig = _eval_png(ev, draw_avg_pagerank, "fetches", lambda e: bool(e.avg_pagerank))
    return _png(fig)


# name -> (function, needs a topic)
EVAL_PLOTS = {"eval-harvest": (eval_harvest, True), "eval-recall": (eval_recall, True),
              "eval-top": (eval_top_share, False), "eval-pagerank": (eval_avg_pagerank, False)}
