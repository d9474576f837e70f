"""pages.text is stored deflated (skitter.store.text); the worker packs it and sends the plain text
back only to crawls whose strategy reads it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.analyse import analyse
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.errors import CrawlDirError
from skitter.models import FetchResult
from skitter.parse import parse_html
from skitter.store.text import pack_text, page_text
from skitter.strategies import make_scorer


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_pack_and_read_back(text: str) -> None:
    packed = pack_text(text)
    assert page_text(packed) == text
    assert zlib.decompress(packed).decode("utf-8", "surrogatepass") == text   # any zlib reads it


def test_older_rows_and_nulls_pass_through() -> None:
    assert page_text("stored as TEXT before") == "stored as TEXT before"
    assert page_text(None) is None


def test_a_blob_that_does_not_inflate_is_a_corrupt_crawl_directory() -> None:
    with pytest.raises(CrawlDirError, match="corrupt page text"):
        page_text(b"not a zlib stream")
    with pytest.raises(CrawlDirError, match="corrupt page text"):
        page_text(zlib.compress(b"\xff\xfe not UTF-8"))


def test_the_worker_sends_the_plain_text_only_when_the_strategy_reads_it() -> None:
    body = ("<html><body><p>" + "Words of the page, repeated to be worth deflating. " * 40 + "</p></body></html>").encode()
    result = FetchResult(url="http://a.test/", status=200, reason="OK",
                         headers=[("Content-Type", "text/html; charset=utf-8")], body=body, raw_body=body,
                         request_headers=[("Host", "a.test")], started=time.time())
    kept = analyse(result, "http://a.test/", "skitter", 0, True)
    dropped = analyse(result, "http://a.test/", "skitter", 0, False)
    assert kept.page.text.startswith("Words of the page") and dropped.page.text == ""
    assert page_text(kept.text) == page_text(dropped.text) == kept.page.text
    assert len(kept.text) < len(kept.page.text.encode()) / 4
    assert not make_scorer("bfs").reads_text and make_scorer("pdd").reads_text
    unpacked = analyse(result, "http://a.test/", "skitter", 0, False, False)   # the crawl process packs
    assert unpacked.text is None and unpacked.page.text == kept.page.text


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_the_stored_text_is_the_same_whichever_process_packs_it(tmp_path, workers) -> None:
    """With one worker process the crawl process packs the page text, with none it packs it
    in analyse, with two the workers do: crawl.db holds the same text each way."""
    with DemoServer(DemoConfig(hosts=2, pages=60, seed=5, crawl_delay=0)) as srv:
        res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(tmp_path / "c"),
                              "--delay", "0", "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet",
                              "--analysis-processes", workers, "--index-interval", "-1"],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
        rows = conn.execute("SELECT url, text FROM pages").fetchall()
        conn.close()
        assert len(rows) > 20
        for url, text in rows:
            assert isinstance(text, bytes)
            path = url.split("/", 3)[3]
            served = srv.web.respond(url.rsplit("/" + path, 1)[0], "/" + path)
            expected = parse_html(served.body, url, served.header("content-type")).text
            assert page_text(text) == expected, url


def test_only_sharksearch_gets_the_words_around_each_link(tmp_path) -> None:
    """The worker leaves ``Link.context`` empty unless the crawl's strategy reads it
    (``reads_link_context``: SharkSearch's anchor context), as the crawl loop passes it."""
    from skitter.config import CrawlConfig
    from skitter.api import build_crawler
    from skitter.strategies import STRATEGIES

    body = b"<html><body><p>Words before the link <a href='/x'>the anchor</a> and words after it.</p></body></html>"
    result = FetchResult(url="http://a.test/", status=200, reason="OK",
                         headers=[("Content-Type", "text/html; charset=utf-8")], body=body, raw_body=body,
                         request_headers=[("Host", "a.test")], started=time.time())
    assert analyse(result, "http://a.test/", "skitter").page.links[0].context == "Words before the link and words after it."
    for name in STRATEGIES:
        reads = make_scorer(name).reads_link_context
        assert reads == (name == "shark"), name
        link = analyse(result, "http://a.test/", "skitter", 0, True, True, reads).page.links[0]
        assert link.anchor == "the anchor" and (link.context != "") == reads, name
    for name, reads in (("bfs", False), ("shark", True)):   # what the crawl loop asks its workers for
        topic = {"topic": "words"} if name == "shark" else {}
        crawler = build_crawler(tmp_path / name, CrawlConfig(seeds=("http://a.test/",), strategy=name, **topic))
        try:
            assert crawler._analyse_options[4] is reads   # (analyse's link_context; forms, main_hash follow)
        finally:
            crawler.store.close()
