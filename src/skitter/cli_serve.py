"""``skitter serve DIR``: the web UI (search, advanced search, crawl statistics and plots).
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
def serve(directory: str, host: str, port: int) -> None:
    """Serve a web UI to search the crawl in DIRECTORY and follow its statistics."""
    d = Path(directory)
    if not (d / DB_NAME).exists():
        raise CrawlDirError(f"{d} is not a crawl directory (no {DB_NAME})")
    from .web.app import serve as run

    click.echo(f"skitter: serving {d} on http://{host}:{port}/ (Ctrl-C to stop)", err=True)
    run(d, host=host, port=port)
