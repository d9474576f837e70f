"""``skitter serve DIR [--labels FILE [--topic NAME]]``: the web UI (search, advanced search, crawl
statistics and plots; with labels, the crawl's evaluation as ``skitter eval-crawl``).
cli.py registers it with ``cli.add_command(serve)``."""

from __future__ import annotations

from pathlib import Path

import click

from .errors import CrawlDirError
from .store.db import DB_NAME


@click.command()
@click.argument("directory", type=click.Path(), required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="port to listen on")
@click.option("--labels", "labels_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="ground truth as for skitter eval-crawl (JSON lines {url, topic, pagerank}): the crawl page "
                   "then shows the crawl's evaluation")
@click.option("--topic", default=None, help="the labelled topic to evaluate (default: the topic name among the "
              "crawl's --topic words)")
@click.option("--redis", "redis_url", default=None, metavar="URL",
              help="a distributed crawl's Redis: the crawl page shows its cluster (a worker's directory names its "
                   "own, without the password)")
@click.option("--crawl-id", default="crawl", show_default=True, help="with --redis: which crawl on that Redis")
def serve(directory: str | None, host: str, port: int, labels_path: str | None, topic: str | None,
          redis_url: str | None, crawl_id: str) -> None:
    """Serve a web UI to search the crawl in DIRECTORY and follow its statistics (and, for a
    distributed crawl, its cluster's)."""
    from .errors import UsageError

    if directory is None and redis_url is None:
        raise UsageError("serve wants a crawl directory or --redis URL")
    d = None if directory is None else Path(directory)
    if d is not None and not (d / DB_NAME).exists():
        raise CrawlDirError(f"{d} is not a crawl directory (no {DB_NAME})")
    redis = None
    if redis_url is not None:
        from .distributed.frontier import CrawlKeys
        from .distributed.redis_url import parse_redis_url

        parse_redis_url(redis_url)   # a malformed URL: one line, exit 2
        try:
            CrawlKeys(crawl_id)
        except ValueError as exc:
            raise UsageError(f"--crawl-id: {exc}") from None
        redis = (redis_url, crawl_id)
    labels = None
    if labels_path is not None and d is None:
        raise UsageError("--labels evaluates a crawl directory: give DIR")
    if labels_path is not None:
        from .eval.files import load_labels_for

        labels = load_labels_for(labels_path, topic)
    elif topic is not None:
        raise UsageError("--topic needs --labels")
    from .web.app import listen, serve as run

    sock = listen(host, port)   # a port in use or an address not ours: one line, before "serving"
    what = d if d is not None else f"the cluster of crawl {crawl_id}"
    port = sock.getsockname()[1]   # --port 0: the one the system gave
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"skitter: serving {what} on http://{shown}:{port}/ (Ctrl-C to stop)", err=True)
    run(d, host=host, port=port, labels=labels, topic=topic, redis=redis, sock=sock)
