"""The recrawl's evaluation (``skitter eval-fresh``): how fresh a recrawl kept its collection against
a ground-truth change log, beside the policies simulated with the true rates (issue #20,
docs/recrawl.md).

The scores are Cho's time-averaged freshness and age (:mod:`skitter.recrawl.freshness`), plain and
weighted by the pages' stored importance (``recrawl_pages.weight``, mean 1; all 1 without
``--importance``), over the window from the end of the discovery crawl plus ``warmup`` to the end
of the recrawl or of the log, whichever is first. The discovery crawl ends when
:data:`DISCOVERED` of the collection has had its first fetch (or of the pages fetched before the
first revisit, when they are most of it: a recrawl after a finished crawl, on a web that grew
while it was recrawled); the pages first fetched later (new
pages, a trap's endless pages found one by one) are left out of every figure: a page is scored
only from a time its copy is held. Beside the recrawl's own fetches: uniform, proportional, freshness-optimal and age-optimal
schedules computed with the true rates and the same weights, with as many fetches in the same span
(:func:`skitter.recrawl.evaluate.score_recrawl`).

The change log is JSON (what ``skitter demo --changing`` writes as ``changes.json`` and
``DemoWeb.change_log_document`` returns)::

    {"from": 1795530762.3, "to": 1795534362.3,
     "changes": {"http://127.0.0.2:8000/a/1.html": [1795530801.2, 1795533100.9], ...},
     "rates": {"http://127.0.0.2:8000/a/1.html": 0.00055, ...}}

``changes``: every URL's change times (epoch seconds) in ``(from, to]``; a URL of the collection
the log does not name never changed. ``rates`` (optional): the true rates, changes a second;
without it a URL's rate is its number of changes in the log over the log's span. ``from`` and
``to`` are optional (the span is then the recrawl's). A bare ``{url: [times]}`` object is read as
``changes`` alone.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..urls import URLError, canonicalize

#: The share of the collection whose first fetch ends the discovery crawl.
DISCOVERED = 0.95

#: A scored window below this share of the recrawl's time gets a note in the report.
SMALL_WINDOW = 0.25
MIN_GAIN = 0.02   # the optimum's gain over uniform below which no share of it is reported

#: The rows of the table, in order: the recrawl's own, then the simulations with true rates.
ROWS = ("recrawl", "uniform (true rates)", "proportional (true rates)", "optimal (true rates)",
        "age-optimal (true rates)")


@dataclass
class ChangeLog:
    changes: dict[str, list[float]]
    rates: dict[str, float] | None = None
    start: float | None = None      # "from"
    end: float | None = None        # "to"


@dataclass
class FreshEval:
    policy: str                     # the recrawl's --policy
    importance: str                 # its --importance
    pages: int                      # pages of the collection scored
    unlisted: int                   # of them, not named by the log (never changed)
    late: int                       # pages first fetched after the discovery crawl: not scored
    start: float                    # the window scored, epoch seconds
    end: float
    synced: float                   # the end of the discovery crawl
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    began: float | None = None      # the recrawl's first fetch

    def scored_share(self) -> float | None:
        """The scored window's share of the recrawl's time (None if unknown)."""
        if self.began is None or not self.end > self.began:
            return None
        return (self.end - self.start) / (self.end - self.began)

    def gain_share(self, key: str = "freshness") -> float | None:
        """The recrawl's gain over uniform as a share of the true-rate optimum's (None if the
        optimum gains less than ``MIN_GAIN``: a share of next to nothing is noise, -3.9 or -7.0
        on a hold-out web where the optimum gained 0.006)."""
        u = self.scores["uniform (true rates)"][key]
        o = self.scores["optimal (true rates)"][key]
        f = self.scores["recrawl"][key]
        return (f - u) / (o - u) if o - u >= MIN_GAIN else None

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "importance": self.importance, "pages": self.pages,
                "unlisted": self.unlisted, "late": self.late, "start": self.start, "end": self.end, "synced": self.synced,
                "began": self.began, "scored_share": self.scored_share(),
                "scores": {k: {m: round(v, 6) if isinstance(v, float) else v for m, v in s.items()}
                           for k, s in self.scores.items()},
                "gain_share": self.gain_share(), "weighted_gain_share": self.gain_share("weighted_freshness")}


def _times(path: Path | str, url: str, value: Any) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(t, int | float) and not isinstance(t, bool)
                                              and math.isfinite(t) for t in value):
        raise UsageError(f"--changes: {path}: {url}: the change times must be a list of numbers (epoch seconds)")
    return sorted(float(t) for t in value)


def load_change_log(path: Path | str) -> ChangeLog:
    """The change log in ``path`` (module docstring), URLs canonical; a UsageError for a file that
    cannot be read or is not such a log."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--changes: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--changes: {path} is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--changes: {path}: want a JSON object {{url: [times]}} or {{\"changes\": ...}}")
    body = doc.get("changes", doc) if isinstance(doc.get("changes"), dict) else doc
    raw_rates = doc.get("rates") if body is not doc else None
    if raw_rates is not None and not isinstance(raw_rates, dict):
        raise UsageError(f"--changes: {path}: \"rates\" must be an object {{url: changes per second}}")

    def canonical(url: str) -> str:
        try:
            return canonicalize(url)
        except (URLError, TypeError, ValueError):
            raise UsageError(f"--changes: {path}: not a URL: {url!r}") from None

    changes = {canonical(u): _times(path, u, v) for u, v in body.items()}
    if not changes:
        raise UsageError(f"--changes: {path} names no URL")
    rates = None
    if raw_rates is not None:
        rates = {}
        for u, r in raw_rates.items():
            if not isinstance(r, int | float) or isinstance(r, bool) or not (math.isfinite(r) and r >= 0):
                raise UsageError(f"--changes: {path}: {u}: a rate must be a number >= 0 (changes per second)")
            rates[canonical(u)] = float(r)
    bounds = []
    for key in ("from", "to"):
        v = doc.get(key) if body is not doc else None
        if v is not None and (not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v)):
            raise UsageError(f"--changes: {path}: \"{key}\" must be a time (epoch seconds)")
        bounds.append(None if v is None else float(v))
    if bounds[0] is not None and bounds[1] is not None and not bounds[1] > bounds[0]:
        raise UsageError(f"--changes: {path}: \"to\" must be after \"from\"")
    return ChangeLog(changes, rates, bounds[0], bounds[1])


def _discovered(firsts: list[float]) -> float:
    """When :data:`DISCOVERED` of these first fetches (sorted) were made."""
    return firsts[max(math.ceil(DISCOVERED * len(firsts)) - 1, 0)]


def evaluate_fresh(directory: Path | str, log: ChangeLog, *, warmup: float = 0.0) -> FreshEval:
    """Score the recrawl in ``directory`` against ``log`` (module docstring)."""
    from ..recrawl.evaluate import collection_visits, score_recrawl
    from ..store.db import CrawlDB

    db = CrawlDB(Path(directory), readonly=True)
    try:
        config = db.config()
    finally:
        db.conn.close()
    try:
        urls, visits, weights = collection_visits(directory)
    except ValueError:
        raise UsageError(f"{directory} holds no recrawl (run skitter recrawl, or crawl --recrawl)") from None
    if not urls:   # (a crawl never recrawled has the tables, empty)
        raise UsageError(f"{directory} holds no recrawl: its collection is empty (run skitter recrawl, "
                         "or crawl --recrawl)")
    firsts = sorted(v[0] for v in visits.values() if v)
    if not firsts:
        raise UsageError(f"{directory}: no page of the collection was fetched")
    synced = _discovered(firsts)
    # a recrawl after a finished crawl: the web's new pages, found one by one while it recrawled,
    # do not push the start towards the end (a hold-out web that grew 12 % had 11 % of its
    # recrawl scored): the discovery crawl is what was fetched before the first revisit, when
    # that is most of the collection
    revisits = [v[1] for v in visits.values() if len(v) > 1]
    if revisits:
        before = [f for f in firsts if f < min(revisits)]
        if 2 * len(before) >= len(firsts):
            synced = min(synced, _discovered(before))
    last = max(v[-1] for v in visits.values() if v)
    found = len(urls)
    urls = [u for u in urls if visits[u] and visits[u][0] <= synced]
    visits = {u: visits[u] for u in urls}
    weights = {u: weights[u] for u in urls}
    end = min(last, log.end) if log.end is not None else last
    start = synced + warmup
    if log.start is not None and log.start > start:
        start = log.start
    if not end > start:
        raise UsageError(f"{directory}: nothing to score: the window from the end of the discovery crawl"
                         f"{' plus --warmup' if warmup else ''} to the end of the recrawl or the log is empty")
    named = [u for u in urls if u in log.changes]
    if not named:
        raise UsageError(f"{directory}: no page of the collection is in the change log (another web?)")
    changes = {u: log.changes.get(u, []) for u in urls}
    if log.rates is not None:
        rates = {u: log.rates.get(u, 0.0) for u in urls}
    else:   # the log's own rate: its changes over its span (the recrawl's where it names none)
        lo = log.start if log.start is not None else min(firsts)
        hi = log.end if log.end is not None else last
        span = max(hi - lo, 1e-9)
        rates = {u: sum(1 for t in changes[u] if lo < t <= hi) / span for u in urls}
    scores = score_recrawl(visits, changes, rates, start, end, synced=synced, weights=weights)
    return FreshEval(policy=str(config.get("policy", "?")), importance=str(config.get("importance", "?")),
                     pages=len(urls), unlisted=len(urls) - len(named), late=found - len(urls), start=start, end=end,
                     synced=synced, scores=scores, began=firsts[0])


def _label(ev: FreshEval, row: str) -> str:
    return f"recrawl ({ev.policy}, own estimates)" if row == "recrawl" else row


def report(name: str, ev: FreshEval) -> str:
    """The figures as a Markdown table, one row per schedule."""
    span = ev.end - ev.start
    scored = f"{span / 3600:.2f} h" if span >= 7200 else f"{span / 60:.1f} min"
    # ages in minutes, or in seconds where every one is under 10 minutes (8.9 s was "0.1" minutes)
    small = max(max(ev.scores[r]["age"], ev.scores[r]["weighted_age"]) for r in ROWS) < 600
    unit, per = ("s", 1.0) if small else ("min", 60.0)
    lines = [f"{name}: {ev.pages} pages, {scored} scored (--importance {ev.importance})"
             + (f"; {ev.unlisted} not in the change log (never changed)" if ev.unlisted else "")
             + (f"; {ev.late} first fetched after the discovery crawl, not scored" if ev.late else ""),
             "", f"| schedule | fetches | freshness | weighted freshness | age ({unit}) | weighted age ({unit}) |"
             " gain over uniform |", "| --- | --- | --- | --- | --- | --- | --- |"]
    u = ev.scores["uniform (true rates)"]["freshness"]
    for row in ROWS:
        s = ev.scores[row]
        lines.append(f"| {_label(ev, row)} | {s['fetches']:,} | {s['freshness']:.3f} | {s['weighted_freshness']:.3f} |"
                     f" {s['age'] / per:.1f} | {s['weighted_age'] / per:.1f} | {s['freshness'] - u:+.3f} |")
    part = ev.scored_share()
    if part is not None and part < SMALL_WINDOW:
        lines += ["", f"note: the scored window is {part:.0%} of the recrawl's time (the rest: the discovery"
                      " crawl, --warmup, or time outside the change log): the figures rest on few revisits of"
                      " each page; a longer recrawl (--for) scores more"]
    share, wshare = ev.gain_share(), ev.gain_share("weighted_freshness")
    earned = [f"{x:+.2f}{label}" for x, label in ((share, ""), (wshare, " weighted")) if x is not None]
    if earned:
        lines += ["", f"the recrawl earned {' and '.join(earned)} of the true-rate optimum's gain over uniform"]
    if share is None or wshare is None:
        lines += ["", f"(the true-rate optimum gains less than {MIN_GAIN} over uniform"
                      f"{' in plain freshness' if wshare is not None else ' in weighted freshness' if share is not None else ''}"
                      " here: no share of it is shown)"]
    return "\n".join(lines)


def plot(results: dict[str, FreshEval], path: Path | str) -> None:
    """Freshness and age of every schedule (plain and weighted bars), a PNG file."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels: list[str] = []
    rows: list[dict[str, float]] = []
    for name, ev in results.items():
        for row in ROWS if not rows else ROWS[:1]:   # the simulations once: the first log's
            labels.append(_label(ev, row).replace(" (", "\n(")
                          + (f"\n{name}" if len(results) > 1 and row == "recrawl" else ""))
            rows.append(ev.scores[row])
    fig = Figure(figsize=(max(6.4, 1.3 * len(rows)), 6.4))
    FigureCanvasAgg(fig)
    x = np.arange(len(rows))
    for i, (key, unit, title) in enumerate((("freshness", 1.0, "time-averaged freshness"),
                                            ("age", 60.0, "time-averaged age (minutes)"))):
        ax = fig.add_subplot(2, 1, i + 1)
        ax.bar(x - 0.2, [r[key] / unit for r in rows], 0.4, label="plain")
        ax.bar(x + 0.2, [r["weighted_" + key] / unit for r in rows], 0.4, label="importance-weighted")
        ax.set_xticks(x, labels if i == 1 else [""] * len(rows), fontsize="small")
        ax.set(title=title)
        if key == "freshness":
            ax.set_ylim(0, 1)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="lower right" if key == "freshness" else "upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(str(path), format="png", dpi=90)
