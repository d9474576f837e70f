"""The command line (DESIGN.md's contract). The only place that calls ``asyncio.run``.

Bad input ends in one line on stderr (``skitter: error: ...``) and exit status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import __version__
from .config import SETTINGS, CrawlConfig
from .errors import SkitterError, UsageError


def nonempty_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option's path that is not empty ("" named the working directory: a crawl went there)."""
    if value is not None and not value.strip():
        raise click.BadParameter("an empty path")
    return value


def _run(coro):
    try:
        import uvloop  # noqa: PLC0415

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(coro)


def _settings_options(func):
    """One click option per entry of the settings registry (config.SETTINGS)."""
    for s in reversed(SETTINGS):
        flag = "--" + s.name.replace("_", "-")
        if s.type is bool:
            decl = f"{flag}/--no-{flag[2:]}" if s.default else flag
            # is_flag: click 8.2+ no longer infers it from a False default (--allow-private wanted a value)
            func = click.option(decl, s.name, is_flag=True, default=s.default, show_default=True,
                                help=s.help)(func)
        elif s.choices:
            func = click.option(flag, s.name, type=click.Choice(s.choices), default=s.default,
                                show_default=True, help=s.help)(func)
        else:
            func = click.option(flag, s.name, type=s.type, default=s.default, show_default=True,
                                help=s.help)(func)
    return func


class _LazyGroup(click.Group):
    """A group whose other commands are imported when one of them runs, or for ``--help`` (click's
    "lazily loading subcommands"): ``skitter crawl`` does not import the search engine, the web
    UI, the evaluations or the distributed worker. Measured on the benchmark crawl: 2.7 MB less of
    the crawl process's memory (issue #18)."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy   # command name -> "module:attribute"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attr = self.lazy[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module, __package__), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


_LAZY = {"search": ".cli_search:search_cmd", "index": ".cli_search:index_cmd", "eval": ".cli_search:eval_cmd",
         "rank": ".cli_rank:rank", "eval-crawl": ".cli_rank:eval_crawl", "eval-forms": ".cli_forms:eval_forms",
         "eval-fresh": ".cli_fresh:eval_fresh", "serve": ".cli_serve:serve", "worker": ".cli_distributed:worker"}


@click.group(cls=_LazyGroup, lazy=_LAZY, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skitter")
def cli() -> None:
    """skitter: a polite, fast, crash-safe web crawler and search engine."""


@cli.command()
@click.argument("seeds", nargs=-1, required=True)
@click.option("-o", "--output", "output", default="crawl", show_default=True, type=click.Path(), callback=nonempty_path,
              help="crawl directory (created; an unfinished crawl in it is resumed)")
@_settings_options
@click.option("--resolve", "resolve", multiple=True, metavar="HOST:IP",
              help="resolve HOST to IP instead of asking DNS (like curl --resolve); repeatable")
@click.option("--quiet", "-q", is_flag=True, help="no progress display and no summary")
@click.option("--redis", "redis_url", default=None, metavar="URL",
              help="a distributed crawl on this Redis (redis://, rediss://): create it and work on it as one worker")
@click.option("--crawl-id", default="crawl", show_default=True, help="with --redis: which crawl on that Redis")
def crawl(seeds: tuple[str, ...], output: str, resolve: tuple[str, ...], quiet: bool, redis_url: str | None,
          crawl_id: str, **settings) -> None:
    """Crawl from SEED_URL... into a crawl directory."""
    import ipaddress

    pairs = []
    for item in resolve:
        host, sep, ip = item.partition(":")   # (an IPv6 address has colons, a host name none)
        ip = ip.strip("[]")
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            sep = ""
        if not sep or not host:
            raise UsageError(f"--resolve wants HOST:IP (an IPv4 or IPv6 address), got {item!r}")
        pairs.append((host.lower(), ip))
    config = CrawlConfig(**settings, seeds=tuple(seeds), resolve=tuple(pairs)).validate()
    if config.topic_file and not Path(config.topic_file).exists():
        # (the focused strategies read it; with another one a typo went unnoticed. Checked here, not
        # in validate(): a recrawl of a crawl whose file has gone since must not fail on it)
        raise UsageError(f"cannot read --topic-file {config.topic_file}: no such file or directory")
    from .strategies import FOCUSED

    if (config.topic or config.topic_file) and config.strategy not in FOCUSED and not config.forms:
        click.echo(f"note: --strategy {config.strategy} does not read the topic (the focused strategies "
                   f"{', '.join(FOCUSED)} and --forms do)", err=True)
    if config.form_words and not config.forms:
        click.echo("note: --form-words is read by --forms only", err=True)
    if redis_url:
        from .cli_distributed import run_distributed

        summary = run_distributed(Path(output), redis_url, crawl_id, config, quiet=quiet)
    else:
        summary = run_crawl(Path(output), config, quiet=quiet)
    if summary.get("interrupted"):
        sys.exit(130)


def run_crawl(directory: Path, config: CrawlConfig, *, quiet: bool = False, title: str = "crawling",
              until: float | None = None) -> dict:
    from .api import build_crawler
    from .stats import load_summary, render

    crawler = build_crawler(directory, config, until=until)
    if quiet:   # rich is not even imported (7 MB of the crawl process's memory)
        _run(crawler.run())
    else:
        from rich.console import Console
        from rich.live import Live

        with Live(console=Console(stderr=True), refresh_per_second=4, transient=True) as live:
            crawler.on_progress = lambda c: live.update(_progress(c, title))
            _run(crawler.run())
    interrupted = crawler.interrupted
    del crawler   # its near-duplicate index and frontier: the summary's reads must not add to them
    if config.index_interval >= 0:
        from .crawllog import crawl_log
        from .index.live import finish_index

        # what the live indexer had not reached (docs/search.md), also after Ctrl-C: it is seconds;
        # its warnings (a damaged index made again) go where the crawl's went
        with crawl_log(directory):
            finish_index(directory)
    summary = load_summary(directory)
    summary["interrupted"] = interrupted
    if not quiet:
        from rich.console import Console

        Console().print(render(summary))
    _say_seeds_not_fetched(directory)
    if interrupted:
        click.echo(f"interrupted: run the same command to resume the crawl in {directory}", err=True)
    return summary


SEEDS_SAID = 5   # seeds not fetched named one a line at the end of a crawl; the rest counted


def _say_seeds_not_fetched(directory: Path) -> None:
    """A warning line (stderr and crawl.log, --quiet or not) for each seed that got no response:
    its host unreachable, robots.txt unreachable or disallowing it, a bad address. The crawl goes
    on and exits 0 (its other seeds may have done well), but a user whose one seed was a typo or a
    host that is down should not have to read the export to find out."""
    import json
    import logging

    from .crawllog import crawl_log
    from .store.db import DB_NAME, connect

    conn = connect(directory / DB_NAME, readonly=True)
    try:   # the seeds as the crawl stored them (canonical); a recrawl's sitemaps and revisits have depth 0 too
        stored = conn.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
        seeds = set(json.loads(stored[0]).get("seeds", ())) if stored else set()
        rows = [(url, error) for url, error in conn.execute(
            "SELECT url, error FROM fetches WHERE depth = 0 AND status IS NULL AND error IS NOT NULL"
            " ORDER BY rowid") if url in seeds]
    finally:
        conn.close()
    if not rows:
        return
    log = logging.getLogger("skitter.crawl")
    with crawl_log(directory):
        for url, error in rows[:SEEDS_SAID]:
            log.warning("seed %s was not fetched: %s", url, error)
        if len(rows) > SEEDS_SAID:
            log.warning("%d more seeds were not fetched (`skitter export %s` says why)", len(rows) - SEEDS_SAID,
                        directory)


class _Figures:
    """Progress lines: a bold head and figures, laid out to the terminal's width, each figure
    whole (a grid of eight columns squeezed at 80 columns blanked some of them)."""

    def __init__(self, rows: list[tuple[str, list[str]]]) -> None:
        self.rows = rows

    def __rich_console__(self, console, options):
        from rich.text import Text

        width = max(20, options.max_width)
        for head, parts in self.rows:
            line = Text(head, style="bold")
            for part in parts:
                if line.cell_len + 2 + len(part) > width and line.plain.strip():
                    yield line
                    line = Text("  ")
                else:
                    line.append("  ")
                line.append(part)
            yield line


def _progress(crawler, title: str) -> _Figures:
    s = crawler.stats
    elapsed = time.monotonic() - s.started
    rows = [(title, [f"{crawler.fetched_total} fetched", f"{s.rate():.1f} pages/s",
                     f"queue {crawler.frontier.queued}", f"in flight {crawler.frontier.in_flight}",
                     f"active hosts {crawler.frontier.active_hosts}", f"errors {s.errors}", f"{elapsed:.0f} s"])]
    r = crawler.recrawl
    if r is not None:
        c = r.counters
        fresh = (r.last_plan or {}).get("freshness")
        rows.append(("revisiting", [f"{r.members} pages", f"{c.visits} revisits", f"{c.changes} changed",
                                    f"{c.not_modified} answered 304", f"{c.gone} gone, {c.back} back",
                                    "freshness " + ("-" if fresh is None else f"{fresh:.2f}")]))
    return _Figures(rows)


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, option: str = "--for") -> float:
    """``--for``: seconds, or a number with s, m or h (``90``, ``45s``, ``10m``, ``6h``, ``1.5h``)."""
    value = text.strip().lower()
    unit = _DURATION_UNITS.get(value[-1:], None)
    number = value[:-1] if unit is not None else value
    try:
        seconds = float(number) * (unit or 1.0)
    except ValueError:
        raise UsageError(f"{option} wants seconds or a number with s, m or h (6h, 30m, 90s), got {text!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"{option} must be a positive duration, got {text!r}")
    return seconds


def stored_config(directory: Path) -> CrawlConfig:
    """The settings of the crawl in ``directory`` as it stored them (skitter.store.crawlstore)."""
    from dataclasses import fields

    from .store.db import CrawlDB

    db = CrawlDB(directory, readonly=True)
    try:
        stored = db.config()
    finally:
        db.conn.close()
    if not isinstance(stored, dict) or not stored.get("seeds"):
        raise UsageError(f"{directory} holds no crawl to revisit (run skitter crawl first)")
    names = {f.name for f in fields(CrawlConfig)}
    values = {k: v for k, v in stored.items() if k in names}
    values["seeds"] = tuple(values["seeds"])
    values["resolve"] = tuple(tuple(p) for p in values.get("resolve", ()))
    for k, v in list(values.items()):
        if isinstance(v, list):
            values[k] = tuple(v)
    return CrawlConfig(**values)


@cli.command()
@click.argument("directory", type=click.Path())
@click.option("--rate", "rate", type=float, default=None,
              help="revisits a second over the whole collection (the budget: above 0, at most 1000000; each "
                   "host's politeness applies on top)  [default: 1.0, or the crawl's own]")
@click.option("--for", "duration", default=None, metavar="DURATION",
              help="stop after this long: seconds, or a number with s, m or h (6h)  [default: until Ctrl-C]")
@click.option("--collection", "collection", type=int, default=None,
              help="keep at most this many pages (a crawl that stored more loses its least important ones "
                   "at the first planning pass); a more important URL found outside replaces the least "
                   "important page inside  [default: 0, every page found]")
@click.option("--policy", "policy", type=click.Choice(["optimal", "age-optimal", "uniform", "proportional"]),
              default=None, help="how revisits are spread  [default: optimal]")
@click.option("--importance", "importance", type=click.Choice(["pagerank", "backlinks", "none"]), default=None,
              help="what makes a page important (revisited more often)  [default: pagerank]")
@click.option("--quiet", "-q", is_flag=True, help="no progress display and no summary")
def recrawl(directory: str, rate: float | None, duration: str | None, collection: int | None, policy: str | None,
            importance: str | None, quiet: bool) -> None:
    """Keep the crawl in DIRECTORY fresh: revisit its pages (docs/recrawl.md) until Ctrl-C or --for."""
    seconds = parse_duration(duration) if duration is not None else None
    directory_path = Path(directory)
    config = stored_config(directory_path)
    changes: dict[str, Any] = {"recrawl": True}
    for name, value in (("rate", rate), ("collection", collection), ("policy", policy),
                        ("importance", importance)):
        if value is not None:
            changes[name] = value
    config = config.with_(**changes).validate()
    until = time.time() + seconds if seconds is not None else None
    summary = run_crawl(directory_path, config, quiet=quiet, title="recrawling", until=until)
    if summary.get("interrupted"):
        sys.exit(130)


@cli.command()
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "warc"]), default="jsonl", show_default=True)
@click.option("-o", "--output", "output", type=click.Path(), callback=nonempty_path, default=None, help="file to write (default stdout)")
def export(directories: tuple[str, ...], fmt: str, output: str | None) -> None:
    """Export the crawl records (JSONL, CSV) or its HTTP responses (one WARC file). Several
    directories (a distributed crawl's workers') are exported as one: each URL once, the latest
    fetch winning, as skitter merge does."""
    from .store.export import export as do_export

    n = do_export([Path(d) for d in directories], fmt, Path(output) if output else None)
    if output:
        click.echo(f"{n} records written to {output}", err=True)


@cli.command()
@click.argument("directory", type=click.Path(), required=False)
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--redis", "redis_url", default=None, metavar="URL", help="the cluster of a distributed crawl instead")
@click.option("--crawl-id", default="crawl", show_default=True, help="with --redis: which crawl on that Redis")
def stats(directory: str | None, as_json: bool, redis_url: str | None, crawl_id: str) -> None:
    """Print the summary of a crawl (DIR), or of a distributed crawl's cluster (--redis)."""
    if redis_url:
        from .cli_distributed import print_cluster_stats

        print_cluster_stats(redis_url, crawl_id, as_json)
        return
    if directory is None:
        raise UsageError("stats wants a crawl directory or --redis URL")
    from rich.console import Console

    from .stats import load_summary, render

    s = load_summary(Path(directory))
    if as_json:
        import json

        click.echo(json.dumps(s, indent=2))
    else:
        Console().print(render(s))


# The demo web's bounds: generating it takes about 0.3 s for 20,000 pages (a larger number ran for
# minutes before printing anything), and one host is one loopback address
DEMO_MAX_PAGES = 200_000
DEMO_MAX_HOSTS = 250
# What a demo run leaves in its directory: `skitter demo` empties a directory that holds these
# alone (a demo run before), and refuses any other: it must never remove what -o names by mistake
_DEMO_FILES = frozenset({"crawl.db", "crawl.db-wal", "crawl.db-shm", "crawl.db-journal", "crawl.lock", "crawl.log",
                         "index.db", "index.db-wal", "index.db-shm", "index.db-journal", "warc", "queries.tsv",
                         "qrels.txt", "labels.jsonl", "hidden-records.txt", "changes.json", "changes.json.tmp",
                         "watchdog.json", "watchdog.json.tmp", ".write-test"})


def _empty_demo_dir(out: Path) -> None:
    """Empty ``out`` for a demo run: a new or empty directory, or one a demo run left (only
    :data:`_DEMO_FILES`, crawl.db among them); anything else is a UsageError, and nothing is removed."""
    import shutil

    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory (the demo writes a crawl directory there)")
    names = {p.name for p in out.iterdir()}
    if names and ("crawl.db" not in names or not names <= _DEMO_FILES):
        raise UsageError(f"-o {out}: the directory holds files that are not a demo's crawl, and the demo empties "
                         "its directory first: name a new or empty directory")
    for name in names:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


@cli.command()
@click.option("-o", "--output", "output", default="demo-crawl", show_default=True, type=click.Path(), callback=nonempty_path,
              help="crawl directory for the demo (a new or empty directory, or an earlier demo's: emptied first)")
@click.option("--pages", default=3000, show_default=True, type=click.IntRange(1, DEMO_MAX_PAGES),
              help="pages in the generated demo web")
@click.option("--hosts", default=8, show_default=True, type=click.IntRange(1, DEMO_MAX_HOSTS),
              help="hosts in the generated demo web")
@click.option("--forms", "forms", is_flag=True, default=False,
              help="also serve the hidden site (3,000 records behind a search form, docs/forms.md) and crawl "
                   "with --forms; its ground truth goes to DIR/hidden-records.txt")
@click.option("--changing", "changing", is_flag=True, default=False,
              help="serve the changing demo web (a wall-clock minute is an hour of its life) and crawl it with "
                   "--recrawl for --for; its ground-truth change log goes to DIR/changes.json (docs/recrawl.md)")
@click.option("--for", "duration", default="60s", show_default=True, metavar="DURATION",
              help="with --changing: how long the crawl and its recrawl run (seconds, or a number with s, m or h)")
@click.option("--rate", "rate", default=10.0, show_default=True, help="with --changing: revisits a second")
def demo(output: str, pages: int, hosts: int, forms: bool, changing: bool, duration: str, rate: float) -> None:
    """Serve the bundled demo web on loopback, crawl it and print the summary."""
    from .demo.server import DemoServer, check_config, write_change_log
    from .demo.web import DemoConfig

    seconds = parse_duration(duration) if changing else None
    try:
        web_config = DemoConfig(pages=pages, hosts=hosts)
        check_config(web_config)
    except ValueError as exc:
        raise UsageError(f"--pages/--hosts: {exc}") from None
    out = Path(output)
    _empty_demo_dir(out)
    with DemoServer(web_config, hidden=forms, changing=changing, change_speed=60.0 if changing else None) as server:
        web = server.web
        assert web is not None   # set when the server has started
        click.echo(f"demo web: {len(server.base_urls)} hosts on loopback ({', '.join(server.base_urls[:2])}, …)",
                   err=True)
        seeds = list(web.seeds())
        if server.hidden_site is not None:
            click.echo(f"hidden site: {server.hidden_url} (records only behind its search form)", err=True)
            seeds += server.hidden_site.seeds()
        config = CrawlConfig(seeds=tuple(seeds), delay=0.0, adaptive_delay=0.0, per_host=4,
                             concurrency=32, max_crawl_delay=0.02, forms=forms)
        if seconds is not None:
            config = config.with_(recrawl=True, rate=rate).validate()
            started = time.time()
            run_crawl(out, config, title="crawling and recrawling the changing demo web", until=started + seconds)
            assert server.start_epoch is not None
            write_change_log(web, out / "changes.json", server.start_epoch, time.time())
        else:
            run_crawl(out, config, title="crawling the demo web")
        if server.hidden_site is not None:
            (out / "hidden-records.txt").write_text(
                "# the demo's hidden site: every record page (skitter eval-forms --truth)\n"
                + "".join(u + "\n" for u in server.hidden_site.record_urls()), encoding="utf-8")
        from .demo.qrels import write_demo_qrels

        write_demo_qrels(web, out / "queries.tsv", out / "qrels.txt")
        from .demo.labels import write_labels

        write_labels(web, out / "labels.jsonl")
    click.echo(f"crawl directory: {out}")
    click.echo(f"  skitter stats {out}")
    click.echo(f"  skitter search {out} 'telescope nebula'")
    click.echo(f"  skitter eval {out} --queries {out}/queries.tsv --qrels {out}/qrels.txt")
    click.echo(f"  skitter export {out} --format jsonl")
    click.echo(f"  skitter eval-crawl {out} --labels {out}/labels.jsonl --topic astronomy --plot curves.png")
    click.echo(f"  skitter serve {out}    (then open http://127.0.0.1:8000/ : search and crawl statistics)")
    click.echo(f"  skitter serve {out} --labels {out}/labels.jsonl --topic astronomy    (the crawl page adds"
               " its evaluation)")
    if forms:
        click.echo(f"  skitter eval-forms {out} --truth {out}/hidden-records.txt --plot forms-coverage.png")
    if changing:
        click.echo(f"  skitter eval-fresh {out} --changes {out}/changes.json --plot freshness.png")


@cli.command("merge")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "output", required=True, type=click.Path(), callback=nonempty_path, help="the new crawl directory")
def merge_cmd(directories: tuple[str, ...], output: str) -> None:
    """One crawl directory from several (a distributed crawl's workers'): each URL once, the
    latest fetch winning, the link graph joined; then its search index."""
    from .index.live import finish_index
    from .merge import merge

    counts = merge([Path(d) for d in directories], Path(output))
    finish_index(Path(output))
    click.echo(f"{counts['urls']:,} URLs, {counts['pages']:,} pages, {counts['links']:,} links merged into {output}",
               err=True)



def _os_error(exc: OSError) -> str:
    """An OSError in words: "PATH: No such file or directory", not "[Errno 2] ..."."""
    if exc.strerror and exc.filename is not None:
        also = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{exc.filename}{also}: {exc.strerror}"
    return exc.strerror or str(exc)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="skitter", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("skitter: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UsageError as exc:
        click.echo(f"skitter: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except SkitterError as exc:
        click.echo(f"skitter: error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("skitter: interrupted; run the same command to resume", err=True)
        sys.exit(130)
    except OSError as exc:
        click.echo(f"skitter: error: {_os_error(exc)}", err=True)
        sys.exit(1)
    except sqlite3.DatabaseError as exc:  # found while reading: the integrity check runs on writes
        click.echo(f"skitter: error: corrupt crawl database: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # an internal error: one line unless SKITTER_DEBUG asks for the traceback
        if os.environ.get("SKITTER_DEBUG"):
            raise
        click.echo(f"skitter: internal error: {type(exc).__name__}: {exc} (set SKITTER_DEBUG=1 for details)",
                   err=True)
        sys.exit(1)
