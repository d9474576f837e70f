"""``skitter serve DIR [--labels FILE [--topic NAME]]``: the web UI (search, advanced search, crawl
statistics and plots; with labels, the crawl's evaluation as ``skitter eval-crawl``).
cli.py registers it with ``cli.add_command(serve)``."""

from __future__ import annotations

from pathlib import Path

import click

from .errors import CrawlDirError
from .store.db import DB_NAME


@click.command()
@click.argument("directory", type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="port to listen on")
@click.option("--labels", "labels_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="ground truth as for skitter eval-crawl (JSON lines {url, topic, pagerank}): the crawl page "
                   "then shows the crawl's evaluation")
@click.option("--topic", default=None, help="the labelled topic to evaluate (default: the topic name among the "
              "crawl's --topic words)")
def serve(directory: str, host: str, port: int, labels_path: str | None, topic: str | None) -> None:
    """Serve a web UI to search the crawl in DIRECTORY and follow its statistics."""
    from .errors import UsageError

    d = Path(directory)
    if not (d / DB_NAME).exists():
        raise CrawlDirError(f"{d} is not a crawl directory (no {DB_NAME})")
    labels = None
    if labels_path is not None:
        from .eval.files import load_labels_for

        labels = load_labels_for(labels_path, topic)
    elif topic is not None:
        raise UsageError("--topic needs --labels")
    from .web.app import serve as run

    click.echo(f"skitter: serving {d} on http://{host}:{port}/ (Ctrl-C to stop)", err=True)
    run(d, host=host, port=port, labels=labels, topic=topic)
