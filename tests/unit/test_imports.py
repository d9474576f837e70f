"""What each process imports: libraries a process never uses cost it memory (docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys


def imported(code: str, names: list[str]) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(n for n in {names!r} if n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(out.stdout.split())


def test_the_crawl_process_leaves_parsing_libraries_and_rich_to_others() -> None:
    # `skitter crawl --quiet`: the loop, its strategies and the summary; parsing is the analysis processes';
    # fetching is curl's (aiohttp, the demo server's, is 26 MB of imports the crawl never uses)
    got = imported("import skitter.cli, skitter.api, skitter.fetch, skitter.loop, skitter.stats, skitter.strategies",
                   ["selectolax", "resiliparse", "rich", "numpy", "aiohttp", "pycurl"])
    assert got == {"pycurl"}


def test_a_whole_crawl_with_the_defaults_runs_without_numpy(tmp_path) -> None:
    """NumPy is about 15 MB of a process: the crawl process's near-duplicate index is array
    buffers and compiled loops (skitter.neardup), and nothing else on the default path loads it,
    from the first seed to the summary (issue #18)."""
    import sqlite3

    from skitter.compiled import speedups
    from skitter.demo.server import DemoServer
    from skitter.demo.web import DemoConfig

    with DemoServer(DemoConfig(hosts=2, pages=150, seed=3, crawl_delay=0)) as srv:
        args = [*srv.web.seeds(), "-o", str(tmp_path / "c"), "--delay", "0", "--quiet"]
        code = ("import sys\nfrom skitter.cli import cli\n"
                f"try:\n    cli({['crawl', *args]!r})\nexcept SystemExit as e:\n    assert not e.code, e.code\n")
        got = imported(code, ["numpy", "skitter.dedup"])
    if speedups() is not None:      # (the Python fallbacks of the compiled loops are NumPy's)
        assert got == set()
    with sqlite3.connect(tmp_path / "c" / "crawl.db") as db:
        pages = db.execute("SELECT count(*) FROM pages").fetchone()[0]
        sketches = db.execute("SELECT count(*) FROM near_sketches").fetchone()[0]
    assert pages > 100 and sketches > 100          # it crawled, and the near-duplicate test ran


def test_a_worker_process_imports_no_event_loop() -> None:
    got = imported("import skitter.procpool_child, skitter.analyse, skitter.parse, skitter.dedup\n"
                   "skitter.dedup.main_text('<p>x</p>')",
                   ["asyncio", "ssl", "aiohttp", "pycurl", "sqlite3", "rich", "resiliparse",
                    "selectolax"])
    assert got == {"selectolax"}   # main text comes from the parser's own tree, not a second parse


def test_the_analysis_of_a_page_imports_no_numpy() -> None:
    """NumPy is 10 MB of a process: the worker's near-duplicate fingerprints come from
    skitter.winnow (the compiled loops over array buffers), for pages in any script (issue #18)."""
    from skitter.compiled import speedups

    code = """if True:
        from skitter.analyse import analyse
        from skitter.models import FetchResult
        body = ("<title>T</title><p>" + "Caf\u00e9 words, \u65e5\u672c and more text. " * 300
                + "<a href=/x>x</a>").encode()
        r = FetchResult(url="http://a.test/", status=200, body=body, raw_body=body,
                        headers=[("content-type", "text/html; charset=utf-8")])
        a = analyse(r, "http://a.test/", "skitter", near_dup_probe=129, main_hash=True)
        assert a.page is not None and len(a.fingerprints) > 0, a
    """
    # nor fastwarc: the worker encodes its WARC records itself (skitter.store.warc.encode_pair)
    got = imported(code, ["numpy", "skitter.dedup", "asyncio", "sqlite3", "fastwarc"])
    # without the compiled module the worker computes them with the NumPy reference
    if speedups() is not None:      # (the Python fallbacks of the compiled loops are NumPy's)
        assert got == set()


def test_the_live_index_process_needs_no_url_parser_no_openssl_and_no_numpy() -> None:
    # skitter.index.step is all the index process imports; the analyzer id is computed on open
    # nor email.utils (1.4 MB): the Last-Modified dates are IMF-fixdates, read by skitter.httpdate
    got = imported("import skitter.index.step\nfrom skitter.index.indexer import _analyzer_id, _iso\n_analyzer_id()\n"
                   "assert _iso('Sun, 06 Nov 1994 08:49:37 GMT') == '1994-11-06T08:49:37'",
                   ["ada_url", "skitter.urls", "_hashlib", "_ssl", "numpy", "asyncio", "selectolax", "email.utils"])
    assert got == set()


def test_the_crawl_command_loads_no_search_index_or_focused_strategy() -> None:
    """``skitter crawl`` with the defaults (bfs, the live index in its own process): the search
    engine, the indexer and its stemmer, the focused strategies' text model and the recrawl are
    imported only by the commands and processes that use them (4.7 MB of the crawl process)."""
    code = ("from skitter.cli import cli\nimport click\n"
            "cli.get_command(click.Context(cli), 'crawl')\n"
            "import skitter.loop, skitter.api, skitter.index.live\n"
            "from skitter.strategies import make_scorer\nmake_scorer('bfs')\n")
    lazy = ["skitter.search", "skitter.cli_search", "skitter.cli_serve", "skitter.cli_distributed",
            "skitter.index.indexer", "Stemmer", "skitter.strategies.topic", "skitter.recrawl.revisit"]
    assert imported(code, lazy) == set()
    # and each is there when asked for
    assert imported(code + "from skitter.index import Indexer\nmake_scorer('cosine')\n"
                    "cli.get_command(click.Context(cli), 'search')\n", lazy) >= {
        "skitter.index.indexer", "Stemmer", "skitter.strategies.topic", "skitter.cli_search", "skitter.search"}


def test_every_command_resolves_under_its_own_name() -> None:
    """The commands other than crawl's are imported when used (skitter.cli._LazyGroup): each one
    listed in ``skitter --help`` loads, with the name it is listed under."""
    import click

    from skitter.cli import cli

    ctx = click.Context(cli)
    names = cli.list_commands(ctx)
    assert {"crawl", "recrawl", "worker", "merge", "search", "index", "serve", "export", "stats"} <= set(names)
    for name in names:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and cmd.name == name, name
    assert cli.get_command(ctx, "no-such-command") is None
