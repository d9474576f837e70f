"""``skitter rank`` and ``skitter eval-crawl`` (registered in cli.py with ``cli.add_command``)."""

from __future__ import annotations

import json
from pathlib import Path

import click


def emit_evaluations(directories, evaluate, report, plot, plot_path: str | None, as_json: bool) -> None:
    """What the eval commands share: evaluate each crawl directory (named by its folder, or its
    whole path when two folders share a name), print the reports or JSON, draw the plot."""
    results = {}
    for d in directories:
        name = Path(d).name or d
        results[d if name in results else name] = evaluate(Path(d))
    if as_json:
        click.echo(json.dumps({k: v.to_dict() for k, v in results.items()}, indent=2))
    else:
        click.echo("\n\n".join(report(k, v) for k, v in results.items()))
    if plot_path:
        plot(results, plot_path)
        click.echo(f"plot written to {plot_path}", err=True)


@click.command()
@click.argument("directory", type=click.Path())
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1_000_000_000), help="how many top pages to print")
@click.option("--by", "order", type=click.Choice(["pagerank", "authority", "hub"]), default="pagerank",
              show_default=True, help="order the printed pages by this score")
@click.option("--weighted", is_flag=True,
              help="weigh links by seed 004's attributes (visibility × position / distance)")
@click.option("--json", "as_json", is_flag=True, help="print the top pages as JSON lines")
def rank(directory: str, limit: int, order: str, weighted: bool, as_json: bool) -> None:
    """Compute PageRank and HITS over a crawl's link graph, store them, print the top pages."""
    from .rank import rank_crawl, top_pages

    info = rank_crawl(Path(directory), weighted=weighted)
    rows = top_pages(Path(directory), by=order, limit=limit)
    if info["index"]:
        click.echo(f"note: {info['index']}", err=True)
    if as_json:
        for r in rows:
            click.echo(json.dumps(r, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.table import Table

    from .terminal import text

    t = Table(title=f"top {len(rows)} of {info['nodes']} pages by {order} ({info['edges']} links"
                    f"{', weighted' if weighted else ''}; {info['rank_seconds']:.2f} s)")
    t.add_column("#", justify="right")
    t.add_column("PageRank", justify="right")
    t.add_column("authority", justify="right")
    t.add_column("hub", justify="right")
    t.add_column("url", overflow="fold")
    t.add_column("title", max_width=32, overflow="ellipsis", no_wrap=True)
    for i, r in enumerate(rows, 1):
        t.add_row(str(i), _num(r["pagerank"]), _num(r["authority"]), _num(r["hub"]), text(r["url"]), text(r["title"] or ""))
    Console(width=max(120, Console().width)).print(t)


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.5f}"


@click.command("eval-crawl")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--labels", "labels_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="ground truth: JSON lines {url, topic, pagerank} (python -m skitter.demo.labels)")
@click.option("--topic", default=None, help="the labelled topic to evaluate (default: the topic name among the "
              "crawl's --topic words)")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="write the curves to this PNG file")
@click.option("--json", "as_json", is_flag=True, help="print the metrics as JSON")
def eval_crawl(directories: tuple[str, ...], labels_path: str, topic: str | None, plot_path: str | None,
               as_json: bool) -> None:
    """Harvest rate, topic recall and PageRank capture of crawls (DIR...) against labels."""
    from .eval.crawl import report
    from .eval.files import evaluate_crawl, load_labels_for
    from .eval.plots import plot

    labels = load_labels_for(labels_path, topic)
    emit_evaluations(directories, lambda d: evaluate_crawl(d, labels, topic), report, plot, plot_path, as_json)
