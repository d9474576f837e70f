"""``skitter eval-fresh`` (registered in cli.py with ``cli.add_command``): a recrawl's freshness and
age against a ground-truth change log, beside the policies simulated with the true rates
(skitter.eval.fresh, issue #20)."""

from __future__ import annotations

import click


@click.command("eval-fresh")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--changes", "changes_path", required=True, type=click.Path(dir_okay=False),
              help="the ground-truth change log, JSON {url: [times]} (skitter demo --changing writes changes.json;"
                   " docs/recrawl.md)")
@click.option("--warmup", default="0", show_default=True, metavar="DURATION",
              help="leave out this long after the discovery crawl (seconds, or a number with s, m or h)")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="write the freshness and age bars to this PNG file")
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
def eval_fresh(directories: tuple[str, ...], changes_path: str, warmup: str, plot_path: str | None,
               as_json: bool) -> None:
    """Freshness and age a recrawl (DIR...) kept, against a change log and simulated policies."""
    from .cli import parse_duration
    from .cli_rank import emit_evaluations
    from .eval.fresh import evaluate_fresh, load_change_log, plot, report

    skip = 0.0 if warmup.strip() in ("0", "0s", "0m", "0h") else parse_duration(warmup, "--warmup")
    log = load_change_log(changes_path)
    emit_evaluations(directories, lambda d: evaluate_fresh(d, log, warmup=skip), report, plot, plot_path, as_json)
