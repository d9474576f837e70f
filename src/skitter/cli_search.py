"""`skitter search`, `skitter index` and `skitter eval` (registered in cli.py with add_command).

Bad input (a malformed query, a directory that is no crawl, a crawl without an index, unreadable
query/qrels files) raises a UsageError subclass: cli.main prints one ``skitter: error:`` line (a
query error adds the query and a caret line under the column) and exits with status 2.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from .search.engine import DEFAULT_PAGERANK_WEIGHT

_PR_HELP = ("weight λ of PageRank in the score: (1-λ)·bm25/max + λ·pagerank (log-normalised); "
            "0 ranks by text alone")


class _QueryCommand(click.Command):
    """A query may start with ``-`` (NOT: ``-comet nebula``): such an argument is the query, not an
    option click does not know (``-c``). Only the command's own short options (``-n 5``, ``-p2``,
    ``-h``) stay options; a leading space (the query parser skips it) keeps click from reading
    the rest as any."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, [f" {a}" if a[:1] == "-" and a[:2] != "--" and not _SHORT.fullmatch(a)
                                        else a for a in args])


_SHORT = re.compile(r"-[np]\d*|-h")


@click.command("search", cls=_QueryCommand)
@click.argument("directory", type=click.Path())
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 10_000),
              help="results per page")
@click.option("--page", "-p", default=1, show_default=True, type=click.IntRange(1, 1_000_000), help="page of results")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per hit (JSON lines)")
@click.option("--pagerank-weight", default=DEFAULT_PAGERANK_WEIGHT, show_default=True,
              type=click.FloatRange(0.0, 1.0), help=_PR_HELP)
@click.option("--no-collapse", is_flag=True, help="show every near duplicate, not one per family")
def search_cmd(directory: str, query: tuple[str, ...], limit: int, page: int, as_json: bool,
               pagerank_weight: float, no_collapse: bool) -> None:
    """Search a crawl: QUERY uses AND OR NOT XOR NEAR/k "phrases" ( ) site: title: after: before:
    (see docs/search.md); bare words find pages with any of them, those with all first."""
    from .index.indexer import Indexer
    from .search.engine import Searcher

    text = " ".join(query)
    with Searcher(Path(directory), pagerank_weight=pagerank_weight) as searcher:
        res = searcher.search(text, limit=limit, page=page, collapse=not no_collapse)
    _index_note(Indexer(Path(directory)).status(), directory)
    if res.suggestion:
        click.echo(f"did you mean: {res.suggestion}", err=True)
    if as_json:
        for h in res.hits:
            click.echo(json.dumps(h.as_dict(), ensure_ascii=False))
        return
    _print_results(res)


def _index_note(status: dict, directory: str) -> None:
    from .index.indexer import lag_note

    note = lag_note(status, directory)
    if note is not None:
        click.echo(f"note: {note}", err=True)


def _print_results(res) -> None:
    from rich.console import Console

    from .terminal import markup as escape

    console = Console(highlight=False, soft_wrap=False)
    if not res.hits:
        console.print(f"no results for [bold]{escape(res.query)}[/bold]"
                      + (f" on page {res.page}" if res.page > 1 and res.total else ""))
        return
    first = (res.page - 1) * (res.limit or 0) + 1
    console.print(f"[dim]{res.total:,} result{'' if res.total == 1 else 's'}"
                  + (" (pages with every word first)" if res.bare else "")
                  + f", {first}–{first + len(res.hits) - 1} shown, {res.elapsed_ms:.0f} ms[/dim]\n")
    for h in res.hits:
        mark = "" if h.all_words in (None, True) else " [dim](some of the words)[/dim]"
        dups = f" [dim](+{h.duplicates} near duplicate{'s' if h.duplicates > 1 else ''})[/dim]" if h.duplicates else ""
        console.print(f"[bold]{h.rank}. {escape(h.title)}[/bold]  [dim]{h.score:.3f}[/dim]{mark}{dups}")
        console.print(f"   [green]{escape(h.url)}[/green]")
        if h.snippet:
            parts = h.snippet.split("**")
            line = "".join(f"[bold yellow]{escape(p)}[/bold yellow]" if i % 2 else escape(p)
                           for i, p in enumerate(parts))
            console.print("   " + line)
        console.print()
    if res.pages > res.page:
        console.print(f"[dim]page {res.page} of {res.pages}: --page {res.page + 1} for more[/dim]")


@click.command("index")
@click.argument("directory", type=click.Path())
@click.option("--update", "incremental", is_flag=True,
              help="index only what the crawl stored since the last update (default: rebuild)")
@click.option("--quiet", "-q", is_flag=True, help="no progress and no summary")
def index_cmd(directory: str, incremental: bool, quiet: bool) -> None:
    """Build the full-text index of a crawl (DIR/index.db), from scratch or incrementally."""
    from .index.indexer import Indexer, index_path

    indexer = Indexer(Path(directory))
    tty = sys.stderr.isatty() and not quiet

    def progress(s) -> None:
        if tty:
            click.echo(f"\rindexed {s.indexed} pages ({s.rate:.0f} pages/s)", err=True, nl=False)

    stats = indexer.update(progress=progress, pipelined=True) if incremental else indexer.rebuild(progress=progress)
    if tty:
        click.echo("", err=True)
    if stats.damaged:
        click.echo(f"skitter: WARNING: {stats.damaged}", err=True)
    if not quiet:
        size = sum(p.stat().st_size for p in index_path(directory).parent.glob("index.db*"))
        click.echo(f"{'updated' if incremental else 'built'} the index of {directory}: "
                   f"{stats.indexed} pages indexed in {stats.seconds:.1f} s ({stats.rate:.0f} pages/s), "
                   f"{stats.docs} in the index, {stats.skipped} fetches left out (not HTML, noindex, "
                   f"duplicate), {stats.anchors_refreshed} anchor texts refreshed; "
                   f"index.db {size / 1e6:.1f} MB")


@click.command("eval")
@click.argument("directory", type=click.Path())
@click.option("--queries", "queries_file", required=True, type=click.Path(),
              help="queries, one a line: id<TAB>query text")
@click.option("--qrels", "qrels_file", required=True, type=click.Path(),
              help="TREC qrels: qid 0 docid(URL) rel")
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(1, 1_000_000_000),
              help="results retrieved per query")
@click.option("--pagerank-weight", default=DEFAULT_PAGERANK_WEIGHT, show_default=True,
              type=click.FloatRange(0.0, 1.0), help=_PR_HELP)
@click.option("--collapse", is_flag=True,
              help="rank one page per near-duplicate family, as `skitter search` shows them")
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
def eval_cmd(directory: str, queries_file: str, qrels_file: str, limit: int, pagerank_weight: float,
             collapse: bool, as_json: bool) -> None:
    """Evaluate search on judged queries: precision, recall, P@10, MAP, nDCG@10."""
    from .search.engine import Searcher
    from .eval.files import read_qrels, read_queries
    from .eval.search import METRICS, evaluate

    queries = read_queries(queries_file)
    qrels = read_qrels(qrels_file)
    with Searcher(Path(directory), pagerank_weight=pagerank_weight) as searcher:
        rows, mean, unjudged = evaluate(searcher, queries, qrels, limit=limit, collapse=collapse)
    if unjudged:
        click.echo(f"note: {len(unjudged)} queries have no judgments and are left out: "
                   + ", ".join(unjudged[:5]) + (" …" if len(unjudged) > 5 else ""), err=True)
    if as_json:
        click.echo(json.dumps({"queries": [{"id": r.qid, "query": r.query, **r.values} for r in rows],
                               "mean": mean, "limit": limit, "pagerank_weight": pagerank_weight,
                               "collapse": collapse},
                              indent=1))
        return
    names = {"AP": "MAP"}
    width = max([len(r.qid) for r in rows] + [4])
    head = f"{'query':<{width}}  " + "  ".join(f"{m:>9}" for m in METRICS) + "  retrieved  relevant"
    click.echo(head)
    for r in rows:
        click.echo(f"{r.qid:<{width}}  " + "  ".join(f"{r.values[m]:>9.4f}" for m in METRICS)
                   + f"  {int(r.values['retrieved']):>9}  {int(r.values['relevant']):>8}")
    click.echo(f"{'mean':<{width}}  " + "  ".join(f"{mean[m]:>9.4f}" for m in METRICS))
    click.echo("(mean of AP = " + names["AP"] + f" {mean['AP']:.4f} over {len(rows)} queries)")


COMMANDS = (search_cmd, index_cmd, eval_cmd)
