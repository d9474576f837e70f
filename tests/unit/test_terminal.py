"""Text from the web on the terminal (skitter.terminal): escape sequences, other control characters,
bidirectional overrides and rich markup in a crawled title, snippet, URL or seed are shown as
text, and do nothing to the user's terminal. A hold-out test found ``skitter search`` printing a
page title's ``ESC[2J`` (clear the screen) as it was, and a title holding ``[/b]`` would have made
``skitter rank`` fail on rich's markup."""

from __future__ import annotations

import re

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from skitter.cli_rank import rank
from skitter.cli_search import _print_results
from skitter.search.engine import Hit, Results
from skitter.stats import render, summary
from skitter.store.db import CrawlDB
from skitter.terminal import markup, printable

HOSTILE = "a [/b] [bold]x \x1b[31mred\x1b]0;pwned\x07 \x1b[2J\u202eevil\u202c\x9b1m end"
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_printable_keeps_the_length_and_drops_every_control(s):
    p = printable(s)
    assert len(p) == len(s) and not CONTROL.search(p) and printable(p) == p
    assert [c for c in s if not CONTROL.match(c)] == [c for c, d in zip(p, s) if c == d and not CONTROL.match(d)]


def test_markup_shows_brackets_as_text():
    console = Console(record=True, width=200)
    console.print(markup(HOSTILE))
    out = console.export_text()
    assert "[/b] [bold]x" in out and "\x1b" not in out and "\u202e" not in out and "end" in out


def test_search_results_print_hostile_titles_snippets_and_urls_as_text(capsys):
    hit = Hit(rank=1, url="http://x.test/a[/b]\x1b[2J", title=HOSTILE, score=1.0, snippet=f"x **{HOSTILE}** y",
              snippet_html="", title_html="", bm25=1.0, pagerank=None, date=None, host="x.test", all_words=True)
    _print_results(Results(query=HOSTILE, hits=[hit], total=1, matched=1, page=1, limit=10))
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert out.count("[/b] [bold]x") == 2 and "a[/b]" in out


def test_rank_prints_a_hostile_title_as_text(tmp_path):
    from test_rank import U, small_crawl

    small_crawl(tmp_path)
    db = CrawlDB(tmp_path)
    db.conn.execute("UPDATE fetches SET title = ? WHERE url = ?", ("[/b]\x1b[2J\x1b]0;pwned\x07", U[2]))
    db.conn.commit()
    db.close()
    out = CliRunner().invoke(rank, [str(tmp_path), "--limit", "3"])
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "[/b]" in out.output


def test_stats_prints_a_seed_with_brackets_as_text(tmp_path):
    db = CrawlDB(tmp_path)
    db.set_meta("config", {"seeds": ["http://x.test/[/b]\x1b[2J"]})
    db.commit()
    s = summary(db)
    db.close()
    console = Console(record=True, width=200)
    console.print(render(s))
    out = console.export_text()
    assert "http://x.test/[/b]" in out and "\x1b" not in out


def test_the_progress_lines_keep_every_figure_whole_on_a_narrow_terminal():
    """At 80 columns the eight-column grid blanked "in flight" and "active hosts" and moved a
    stray figure to a line of its own (a hold-out tester's terminal): each figure now wraps whole."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from skitter.cli import _progress

    stats = SimpleNamespace(started=0.0, errors=12, rate=lambda: 123.4)
    frontier = SimpleNamespace(queued=123456, in_flight=64, active_hosts=32)
    counters = SimpleNamespace(visits=9876, changes=321, not_modified=55, gone=3, back=1)
    recrawl = SimpleNamespace(counters=counters, members=20000, last_plan={"freshness": 0.875})
    crawler = SimpleNamespace(stats=stats, frontier=frontier, fetched_total=45678, recrawl=recrawl)
    figures = ["45678 fetched", "123.4 pages/s", "queue 123456", "in flight 64", "active hosts 32", "errors 12",
               "20000 pages", "9876 revisits", "321 changed", "55 answered 304", "3 gone, 1 back", "freshness 0.88"]
    for width in (200, 80, 40):
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(_progress(crawler, "skitter crawl"))
        lines = out.getvalue().splitlines()
        assert all(len(line) <= width for line in lines)
        for figure in figures:
            assert any(figure in line for line in lines), (width, figure, lines)
