"""The evaluation's plots (matplotlib's object API, a Figure per call, no pyplot: safe in the web UI's
worker threads): the panels of ``skitter eval-crawl --plot`` and their single-panel PNGs for the
web UI's crawl page."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .crawl import Evaluation

PANEL = (6.4, 3.6)   # one panel, as the web UI shows it


def png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} yet", ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])

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
    if not draw:   # labels with no page of the crawl's topic and no PageRank: an empty panel says so
        axes[0].text(0.5, 0.5, "nothing to plot: no labelled page of the topic, no PageRank in the labels",
                     ha="center", va="center", fontsize="small", wrap=True)
        axes[0].set_axis_off()
    if title:
        fig.suptitle(title)
    handles, names = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                names.append(lab)
    if legend_rows and names:
        fig.legend([handles[n] for n in names], names, loc="lower center", ncol=min(4, len(names)),
                   frameon=False, fontsize="medium")
        fig.tight_layout(rect=(0, 0.3 * legend_rows / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    return fig


def plot(evaluations: dict[str, Evaluation], path: Path | str, title: str | None = None) -> None:
    """Harvest rate, topic recall and the importance curves, one line per crawl (PNG; a palette
    PNG of at most 256 colours, a third of the size of the RGBA one)."""
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


# -- the crawl's evaluation (``skitter serve DIR --labels FILE``) --------------------------------
# Each takes the crawl's Evaluation, one panel of ``figure``.

def _eval_png(ev, draw, what: str, has):
    fig = Figure(figsize=PANEL)
    ax = fig.add_subplot()
    if not has(ev):
        draw(ax, {})
        empty(ax, what)
    else:
        draw(ax, {"this crawl": ev})
    return ax, fig


def eval_harvest(ev) -> bytes:
    ax, fig = _eval_png(ev, draw_harvest, "fetches", lambda e: bool(e.harvest))
    if ev.harvest and ev.pages:
        ax.axhline(ev.relevant_total / ev.pages, color="gray", linestyle=":", linewidth=1,
                   label="topic's share of the labelled pages")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_title(f"harvest rate: topic {ev.topic!r}")
    return png(fig)


def eval_recall(ev) -> bytes:
    ax, fig = _eval_png(ev, draw_recall, "fetches", lambda e: bool(e.recall_curve))
    ax.set_title(f"topic recall: topic {ev.topic!r} (budgets marked)")
    return png(fig)


def eval_top_share(ev) -> bytes:
    ax, fig = _eval_png(ev, draw_top_share, "fetches", lambda e: bool(e.top_share_at))
    ax.set_title(f"top-1% PageRank pages ({ev.top_k}) fetched")
    return png(fig)


def eval_avg_pagerank(ev) -> bytes:
    ax, fig = _eval_png(ev, draw_avg_pagerank, "fetches", lambda e: bool(e.avg_pagerank))
    return png(fig)


# name -> (function, needs a topic)
EVAL_PLOTS = {"eval-harvest": (eval_harvest, True), "eval-recall": (eval_recall, True),
              "eval-top": (eval_top_share, False), "eval-pagerank": (eval_avg_pagerank, False)}
