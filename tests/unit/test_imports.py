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
    assert got == {"numpy", "pycurl"}


def test_a_worker_process_imports_no_event_loop() -> None:
    got = imported("import skitter.procpool_child, skitter.analyse, skitter.parse, skitter.dedup\n"
                   "skitter.dedup.main_text('<p>x</p>')",
                   ["asyncio", "ssl", "aiohttp", "pycurl", "sqlite3", "rich", "resiliparse",
                    "selectolax"])
    assert got == {"selectolax"}   # main text comes from the parser's own tree, not a second parse
