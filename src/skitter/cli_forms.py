"""``skitter eval-forms`` (registered in cli.py with ``cli.add_command``): the form crawl's coverage
of a hidden site against its submissions (skitter.eval.forms, issue #22)."""

from __future__ import annotations


import click


@click.command("eval-forms")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--truth", "truth_path", required=True, type=click.Path(dir_okay=False),
              help="the hidden site's record URLs, one a line (skitter demo --forms writes hidden-records.txt)")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="write the coverage curves to this PNG file")
@click.option("--json", "as_json", is_flag=True, help="print the figures as JSON")
def eval_forms(directories: tuple[str, ...], truth_path: str, plot_path: str | None, as_json: bool) -> None:
    """Share of a hidden site's records that crawls (DIR...) reached, against their form submissions."""
    from .cli_rank import emit_evaluations
    from .eval.forms import form_coverage, load_truth, plot, report

    truth = load_truth(truth_path)
    emit_evaluations(directories, lambda d: form_coverage(d, truth), report, plot, plot_path, as_json)
