"""Evaluate a crawl's order against ground-truth labels (``skitter eval-crawl``).

Labels: JSON lines ``{"url", "topic", "pagerank"[, "reachable"]}`` (for the demo web,
``python -m skitter.strategies.demo_labels``). The crawl: the fetch records of a crawl directory
in ``fetch_order`` (every URL the crawler requested counts against the budget: errors, redirects
and duplicates included).

Metrics (:func:`evaluate`):

- harvest rate (focused crawling): relevant fetched / fetched, as the crawl goes on; a page is
  relevant iff its label's topic is the evaluated topic;
- topic recall at budgets: relevant fetched / relevant pages in the labels (but those labelled
  ``"reachable": false``, which a polite crawler never fetches), after a budget of
  ``b`` × (number of labelled pages) fetches, for b in ``BUDGETS``;
- importance (seed 004): the share of the top-1% pages by ground-truth PageRank fetched after
  10/25/50/100% of the crawl, and the average ground-truth PageRank (× number of labelled pages,
  so 1 = an average page) of the pages fetched in each tenth of the crawl (seed 004's figure 6).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .store.db import CrawlDB
from .urls import URLError, canonicalize

BUDGETS = (0.05, 0.1, 0.2, 0.5, 1.0)
CRAWL_SHARES = (0.1, 0.25, 0.5, 1.0)
TOP_SHARE = 0.01
DECILES = 10


@dataclass
class Labels:
    topic: dict[str, str | None]
    pagerank: dict[str, float]
    unreachable: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.topic)

    @property
    def topics(self) -> set[str]:
        return {t for t in self.topic.values() if t}


def _canon(url: str) -> str:
    try:
        return canonicalize(url)
    except URLError:
        return url


def load_labels_for(path: Path | str, topic: str | None = None) -> Labels:
    """``load_labels`` for the command line: a bad file or a topic it lacks is a UsageError."""
    from .errors import UsageError

    try:
        labels = load_labels(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if topic is not None and topic not in labels.topics:
        raise UsageError(f"--topic {topic!r} is not a topic of {path} "
                         f"({', '.join(sorted(labels.topics)) or 'it has none'})")
    return labels


def load_labels(path: Path | str) -> Labels:
    topic: dict[str, str | None] = {}
    pagerank: dict[str, float] = {}
    unreachable: set[str] = set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                url = _canon(rec["url"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{n}: not a label record ({exc})") from None
            topic[url] = rec.get("topic")
            if rec.get("pagerank") is not None:
                pagerank[url] = float(rec["pagerank"])
            if rec.get("reachable") is False:
                unreachable.add(url)
    return Labels(topic, pagerank, unreachable)


def crawl_order(directory: Path | str) -> tuple[list[str], dict]:
    """The URLs a crawl requested, in fetch order, and its config."""
    db = CrawlDB(Path(directory), readonly=True)
    try:
        urls = [r[0] for r in db.conn.execute(
            "SELECT url FROM fetches WHERE fetch_order IS NOT NULL ORDER BY fetch_order")]
        config = db.get_meta("config") or {}
    finally:
        db.conn.close()
    return urls, config


def guess_topic(config: dict, labels: Labels) -> str | None:
    """The labelled topic the crawl was about: a topic name among its --topic words."""
    from .strategies.topic import tokenize

    words = set(tokenize(config.get("topic") or ""))
    words |= set(tokenize(Path(config.get("topic_file") or "").stem))
    for name in sorted(labels.topics):
        if set(tokenize(name)) & words:
            return name
    return None


@dataclass
class Evaluation:
    fetched: int
    pages: int                                    # labelled pages
    topic: str | None = None
    relevant_total: int = 0
    harvest: list[float] = field(default_factory=list)       # after each fetch
    recall_at: dict[float, float] = field(default_factory=dict)   # budget share -> recall
    recall_curve: list[float] = field(default_factory=list)
    top_k: int = 0
    top_share_at: dict[float, float] = field(default_factory=dict)  # crawl share -> top-1% share
    avg_pagerank: list[float] = field(default_factory=list)   # per tenth of the crawl

    @property
    def harvest_rate(self) -> float | None:
        return self.harvest[-1] if self.harvest else None

    def harvest_at(self, n: int) -> float | None:
        if not self.harvest:
            return None
        return self.harvest[min(n, len(self.harvest)) - 1]

    def to_dict(self) -> dict:
        return {"fetched": self.fetched, "pages": self.pages, "topic": self.topic,
                "relevant_total": self.relevant_total, "harvest_rate": self.harvest_rate,
                "recall_at": {str(k): v for k, v in self.recall_at.items()},
                "top_k": self.top_k, "top_share_at": {str(k): v for k, v in self.top_share_at.items()},
                "avg_pagerank": self.avg_pagerank}


def evaluate(urls: list[str], labels: Labels, topic: str | None = None) -> Evaluation:
    """The metrics of one crawl order (see the module docstring)."""
    n = len(urls)
    ev = Evaluation(fetched=n, pages=len(labels), topic=topic)
    if topic is not None:
        relevant = [labels.topic.get(u) == topic for u in urls]
        ev.relevant_total = sum(1 for u, t in labels.topic.items() if t == topic and u not in labels.unreachable)
        hits = 0
        for i, r in enumerate(relevant, 1):
            hits += r
            ev.harvest.append(hits / i)
            ev.recall_curve.append(hits / ev.relevant_total if ev.relevant_total else 0.0)
        for b in BUDGETS:
            k = int(round(b * len(labels)))
            if 0 < k <= n:
                ev.recall_at[b] = ev.recall_curve[k - 1]
    if labels.pagerank and n:
        ranked = sorted(labels.pagerank, key=lambda u: -labels.pagerank[u])
        ev.top_k = max(1, int(round(TOP_SHARE * len(ranked))))
        top = set(ranked[:ev.top_k])
        for s in CRAWL_SHARES:
            k = max(1, int(math.ceil(s * n)))
            ev.top_share_at[s] = sum(1 for u in urls[:k] if u in top) / ev.top_k
        scale = len(labels.pagerank)
        for d in range(DECILES):
            part = urls[d * n // DECILES:(d + 1) * n // DECILES]
            if part:
                ev.avg_pagerank.append(sum(labels.pagerank.get(u, 0.0) for u in part) / len(part) * scale)
    return ev


def evaluate_crawl(directory: Path | str, labels: Labels, topic: str | None = None) -> Evaluation:
    urls, config = crawl_order(directory)
    if topic is None:
        topic = guess_topic(config, labels)
    return evaluate(urls, labels, topic)


def report(name: str, ev: Evaluation) -> str:
    """A plain-text report of one evaluation."""
    lines = [f"{name}: {ev.fetched} fetched, {ev.pages} labelled pages"]
    if ev.topic is not None:
        lines.append(f"  topic {ev.topic!r}: {ev.relevant_total} relevant pages; harvest rate "
                     f"{_pct(ev.harvest_rate)}")
        marks = [k for k in (10, 50, 100, 200, 500, 1000, 2000, 5000) if k < ev.fetched] + [ev.fetched]
        lines.append("  harvest rate after " + ", ".join(f"{k}: {_pct(ev.harvest_at(k))}" for k in marks))
        lines.append("  topic recall at budget " + ", ".join(
            f"{int(b * 100)}% ({int(round(b * ev.pages))}): {_pct(r)}" for b, r in ev.recall_at.items()))
    if ev.top_share_at:
        lines.append(f"  top-1% PageRank pages ({ev.top_k}) fetched after " + ", ".join(
            f"{int(s * 100)}%: {_pct(v)}" for s, v in ev.top_share_at.items()) + " of the crawl")
        lines.append("  average PageRank (1 = average page) by tenth of the crawl: "
                     + " ".join(f"{v:.2f}" for v in ev.avg_pagerank))
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


# -- plots ------------------------------------------------------------------------------------
# matplotlib's object API (a Figure per call, no pyplot): safe in the web UI's worker threads.
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
          "tab:gray", "tab:olive", "tab:cyan")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _style(i: int) -> dict:
    """Line style of the i-th crawl: a colour, and a dash pattern and marker that also differ
    between neighbours, so that 8+ overlapping lines stay apart (and in grey print)."""
    return {"color": COLORS[i % len(COLORS)], "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


def _curve(ax, i: int, name: str, ys: list[float]) -> None:
    st = _style(i)
    n = len(ys)
    ax.plot(range(1, n + 1), ys, label=name, color=st["color"], linestyle=st["linestyle"], linewidth=1.6,
            marker=st["marker"], markersize=4, markevery=max(1, n // 8), alpha=0.9)


def draw_harvest(ax, evaluations: dict[str, Evaluation]) -> None:
    """The harvest rate after each fetch, one line per crawl."""
    for i, (name, ev) in enumerate(evaluations.items()):
        if ev.harvest:
            _curve(ax, i, name, ev.harvest)
    ax.set(title="harvest rate", xlabel="pages fetched", ylabel="relevant / fetched", ylim=(0, 1.02))
    ax.grid(alpha=0.3)


def draw_recall(ax, evaluations: dict[str, Evaluation]) -> None:
    """Topic recall after each fetch, the budgets of ``recall_at`` marked."""
    for i, (name, ev) in enumerate(evaluations.items()):
        if ev.recall_curve:
            _curve(ax, i, name, ev.recall_curve)
    budgets = sorted({int(round(b * ev.pages)) for ev in evaluations.values() for b in ev.recall_at})
    for k in budgets:
        ax.axvline(k, color="gray", linewidth=0.6, alpha=0.4)
    ax.set(title="topic recall", xlabel="pages fetched", ylabel="relevant fetched / relevant", ylim=(0, 1.02))
    ax.grid(alpha=0.3)


def draw_avg_pagerank(ax, evaluations: dict[str, Evaluation]) -> None:
    """The average ground-truth PageRank of each tenth of the crawl (seed 004's figure 6)."""
    for i, (name, ev) in enumerate(evaluations.items()):
        if ev.avg_pagerank:
            st = _style(i)
            xs = [(d + 0.5) * 100 / len(ev.avg_pagerank) for d in range(len(ev.avg_pagerank))]
            ax.plot(xs, ev.avg_pagerank, label=name, markersize=5, linewidth=1.6, alpha=0.9, **st)
    ax.axhline(1.0, color="gray", linewidth=0.6, alpha=0.5)
    ax.set(title="average PageRank by crawl time", xlabel="% of the crawl", ylabel="PageRank × pages (1 = average)")
    ax.grid(alpha=0.3)


def draw_top_share(ax, evaluations: dict[str, Evaluation]) -> None:
    """The share of the top-1% PageRank pages fetched after 10/25/50/100% of the crawl."""
    for i, (name, ev) in enumerate(evaluations.items()):
        if ev.top_share_at:
            shares = sorted(ev.top_share_at.items())
            ax.plot([0] + [s * 100 for s, _ in shares], [0] + [v for _, v in shares], label=name,
                    markersize=5, linewidth=1.6, alpha=0.9, **_style(i))
    ax.set(title="top-1% PageRank pages fetched", xlabel="% of the crawl", ylabel="share", ylim=(0, 1.02))
    ax.grid(alpha=0.3)


def figure(evaluations: dict[str, Evaluation], title: str | None = None):
    """A matplotlib Figure: harvest rate and topic recall (if a topic was evaluated), average
    PageRank by crawl time and the top-1% share (if the labels have PageRank); one line per crawl,
    one legend for all panels below them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    draw = []
    if any(ev.harvest for ev in evaluations.values()):
        draw += [draw_harvest, draw_recall]
    if any(ev.avg_pagerank for ev in evaluations.values()):
        draw += [draw_top_share, draw_avg_pagerank]
    panels = max(1, len(draw))
    rows, cols = (panels + 1) // 2, min(2, panels)
    legend_rows = (len(evaluations) + 3) // 4
    fig = Figure(figsize=(6 * cols, 4.0 * rows + 0.3 * legend_rows + (0.4 if title else 0)))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, k + 1) for k in range(panels)]
    for fn, ax in zip(draw, axes):
        fn(ax, evaluations)
    if title:
        fig.suptitle(title)
    if legend_rows:
        handles, names = {}, []
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in handles:
                    handles[lab] = h
                    names.append(lab)
        fig.legend([handles[n] for n in names], names, loc="lower center", ncol=min(4, len(names)),
                   frameon=False, fontsize="medium")
        fig.tight_layout(rect=(0, 0.3 * legend_rows / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    return fig


def plot(evaluations: dict[str, Evaluation], path: Path | str, title: str | None = None) -> None:
    """Harvest rate, topic recall and the importance curves, one line per crawl (PNG; a palette
    PNG of at most 256 colours, a third of the size of the RGBA one)."""
    import io

    buf = io.BytesIO()
    figure(evaluations, title).savefig(buf, format="png", dpi=100)
    try:
        from PIL import Image
    except ImportError:   # matplotlib depends on Pillow; just in case
        Path(path).write_bytes(buf.getvalue())
        return
    buf.seek(0)
    with Image.open(buf) as im:
        im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, format="PNG",
                                                                                      optimize=True)
