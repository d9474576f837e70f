"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys

import pytest

from sites import one_error_line, skitter


@pytest.mark.parametrize("seed", ["not a url", "ftp://example.com/", "http://", "javascript:alert(1)",
                                  "http://exa mple.com/", "http://a..b/", f"http://{'a' * 70}.example/",
                                  f"http://example.com/{'x' * 5000}"])
def test_bad_seed(tmp_path, seed):
    line = one_error_line(skitter("crawl", seed, "-o", str(tmp_path / "c"), "--quiet"))
    assert line.startswith("skitter: error:") and "seed" in line
    assert len(line) < 600   # a 5,000-character URL is not printed whole


def test_unwritable_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(blocker / "sub"), "--quiet"))
    assert "crawl directory" in line


def test_corrupt_crawl_directory(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "crawl.db").write_bytes(b"this is not a database" * 100)
    for args in (("crawl", "http://127.0.0.1:9/", "-o", str(d), "--quiet"), ("stats", str(d)),
                 ("export", str(d), "--format", "jsonl")):
        line = one_error_line(skitter(*args))
        assert "corrupt" in line or "not a crawl" in line or "database" in line


def test_not_a_crawl_directory(tmp_path):
    line = one_error_line(skitter("stats", str(tmp_path)))
    assert "not a crawl directory" in line


def test_unreachable_host_is_recorded_not_fatal(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connection refused
    d = tmp_path / "c"
    res = skitter("crawl", f"http://127.0.0.1:{port}/", "-o", str(d), "--quiet", "--retries", "0",
                  "--delay", "0")
    assert res.returncode == 0, res.stderr
    out = skitter("export", str(d), "--format", "jsonl")
    recs = [json.loads(l) for l in out.stdout.splitlines()]
    assert recs and all(r["status"] is None for r in recs)
    assert any((r["error"] or "").startswith(("connect", "robots")) for r in recs)
    # said in one line, --quiet or not (and kept in crawl.log)
    line = f"skitter: WARNING: seed http://127.0.0.1:{port}/ was not fetched: robots: robots.txt unreachable"
    assert res.stderr.startswith(line) and "connection refused" in res.stderr, res.stderr
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert line.split("WARNING: ")[1] in (d / "crawl.log").read_text()


def test_bad_export_format(tmp_path):
    res = skitter("export", str(tmp_path), "--format", "xml")
    assert res.returncode != 0 and "Traceback" not in res.stderr


@pytest.mark.parametrize("flag,value", [("--per-host", "0"), ("--concurrency", "0"), ("--delay", "-1"),
                                        ("--max-depth", "-2"), ("--host-window", "0"),
                                        ("--near-dup-window", "5")])
def test_setting_out_of_range(tmp_path, flag, value):
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"), flag, value,
                                  "--quiet"))
    assert flag in line and "at least" in line
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("args,words", [
    (("--delay", "nan"), "--delay must be a finite number"),
    (("--index-interval", "nan"), "--index-interval must be a finite number"),
    (("--total-timeout", "inf"), "--total-timeout must be a finite number"),
    (("--concurrency", "99999999999999999999"), "--concurrency must be at most 10,000"),
    (("--max-body", "99999999999999999999"), "--max-body must be at most"),
    (("--near-dup-window", "99999999999999999999"), "--near-dup-window must be at most"),
    (("--resolve", "example.test:notanip"), "--resolve wants HOST:IP"),
    (("--topic-file", "/nonexistent/topic.txt"), "cannot read --topic-file"),   # (with bfs it was ignored)
    (("--strategy", "cosine", "--topic", "bees", "--min-similarity", "2"), "--min-similarity must be at most 1"),
])
def test_a_number_that_would_break_the_crawl_is_refused(tmp_path, args, words):
    """Hold-out checks of bad input: nan crawled with no delay at all, inf and numbers beyond 64
    bits overflowed curl or SQLite (and were reported as the host's fault), a huge --concurrency
    made tasks until memory ran out."""
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"), *args, "--quiet"))
    assert words in line, line
    assert not (tmp_path / "c").exists()


def test_a_topic_no_strategy_reads_is_noted(tmp_path):
    """--topic under bfs, and --form-words without --forms, were ignored without a word (hold-out tests)."""
    from sites import StaticSite

    (tmp_path / "index.html").write_text("<html><title>x</title><body>x</body></html>")
    with StaticSite(tmp_path) as site:
        res = skitter("crawl", f"{site.base}/", "-o", str(tmp_path / "c"), "--topic", "bees", "--quiet")
        assert res.returncode == 0, res.stderr
        assert res.stderr.startswith("note: --strategy bfs does not read the topic"), res.stderr
        res = skitter("crawl", f"{site.base}/", "-o", str(tmp_path / "d"), "--topic", "bees", "--strategy",
                      "shark", "--quiet")
        assert res.returncode == 0 and "note:" not in res.stderr, res.stderr
        (tmp_path / "words.txt").write_text("bees hive\n")
        res = skitter("crawl", f"{site.base}/", "-o", str(tmp_path / "e"), "--form-words", str(tmp_path / "words.txt"),
                      "--quiet")
        assert res.returncode == 0 and res.stderr.startswith("note: --form-words is read by --forms only"), res.stderr


@pytest.mark.parametrize("pages,hosts", [("20", "1"), ("100", "60")])
def test_demo_web_that_cannot_be_generated(tmp_path, pages, hosts):
    line = one_error_line(skitter("demo", "--pages", pages, "--hosts", hosts, "-o", str(tmp_path / "d")))
    assert line.startswith("skitter: error: --pages/--hosts:")
    assert not (tmp_path / "d").exists()
    res = subprocess.run([sys.executable, "-m", "skitter.demo.server", "--pages", pages, "--hosts", hosts],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("python -m skitter.demo.server: error:")


def test_serve_without_a_directory_or_redis_and_export_of_several(tmp_path):
    assert "serve wants a crawl directory or --redis URL" in one_error_line(skitter("serve"))
    line = one_error_line(skitter("export", str(tmp_path), str(tmp_path / "b"), "--format", "jsonl"))
    assert "not a crawl directory" in line


def test_demo_changing_with_a_bad_duration(tmp_path):
    line = one_error_line(skitter("demo", "--changing", "--for", "soon", "-o", str(tmp_path / "d")))
    assert line.startswith("skitter: error: --for wants")
    assert not (tmp_path / "d").exists()


def test_serve_on_a_port_in_use_or_an_address_not_ours_is_one_line(tmp_path):
    """It said "serving ... on" first, then uvicorn's own ERROR line, exit status 3."""
    from skitter.store.db import CrawlDB

    CrawlDB(tmp_path).close()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        line = one_error_line(skitter("serve", str(tmp_path), "--port", str(port), timeout=60))
    assert line.startswith("skitter: error: cannot listen on 127.0.0.1:") and "in use" in line
    line = one_error_line(skitter("serve", str(tmp_path), "--host", "name.invalid", timeout=60))
    assert "cannot listen on name.invalid" in line


def _small_crawl(tmp_path):
    """A two-page site crawled into ``tmp_path/c``; the site's directory and the crawl's."""
    from sites import StaticSite

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><body><a href='a.html'>a</a></body></html>")
    (site / "a.html").write_text("<html><body>a</body></html>")
    out = tmp_path / "c"
    with StaticSite(site) as srv:
        res = skitter("crawl", srv.base + "/", "-o", str(out), "--delay", "0", "--quiet", "--allow-private")
        assert res.returncode == 0, res.stderr
    return srv.base, out


def test_a_warc_export_without_its_file_or_a_warc_file_is_one_line(tmp_path):
    _, out = _small_crawl(tmp_path)
    res = skitter("export", str(out), "--format", "warc")
    assert res.returncode == 2 and one_error_line(res) == "skitter: error: --format warc needs -o FILE"
    for f in (out / "warc").iterdir():
        f.unlink()
    res = skitter("export", str(out), "--format", "warc", "-o", str(tmp_path / "x.warc.gz"))
    assert res.returncode == 2 and "a WARC file of the crawl is missing" in one_error_line(res)
    assert not list(tmp_path.glob("x.warc.gz*"))


def test_a_crawl_does_not_resume_on_a_damaged_warc_file(tmp_path):
    """A WARC file overwritten with other bytes was cut back to its committed length and crawled
    on, the damage showing only at the next WARC export (a hold-out check); now the resume stops,
    as it does for a missing one, and the file is left as it is."""
    import os

    base, out = _small_crawl(tmp_path)
    (warc,) = (out / "warc").iterdir()
    size = warc.stat().st_size
    warc.write_bytes(os.urandom(size))
    res = skitter("crawl", base + "/", "-o", str(out), "--quiet", "--allow-private")
    line = one_error_line(res)
    assert "is damaged" in line and warc.name in line
    assert warc.stat().st_size == size and [p.name for p in (out / "warc").iterdir()] == [warc.name]
    assert json.loads(skitter("stats", str(out), "--json").stdout)["state"] == "finished"   # untouched


@pytest.mark.parametrize("name, value", [("SKITTER_REDIS_TIMING", "abc"), ("SKITTER_REDIS_TIMING", "1,2"),
                                         ("SKITTER_REDIS_TIMING", "1,0,3"),
                                         ("SKITTER_REDIS_COMMAND_TIMEOUT", "fast"),
                                         ("SKITTER_REDIS_COMMAND_TIMEOUT", "-1")])
def test_a_bad_redis_timing_in_the_environment(tmp_path, monkeypatch, redis_server, name, value):
    monkeypatch.setenv(name, value)
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "--redis", redis_server.url,
                                  "-o", str(tmp_path / "c"), "--quiet"))
    assert line.startswith(f"skitter: error: {name}=") and "seconds above 0" in line


def test_demo_never_empties_a_directory_that_is_not_a_demos(tmp_path):
    """`skitter demo` empties its directory first: only a new or empty one, or an earlier demo's.
    (-o / once removed /etc before it met /proc.)"""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    (mine / "crawl.db").write_bytes(b"")   # looks like a crawl, holds more
    line = one_error_line(skitter("demo", "--pages", "300", "--hosts", "3", "-o", str(mine)))
    assert "not a demo's crawl" in line and (mine / "thesis.tex").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    line = one_error_line(skitter("demo", "-o", str(tmp_path / "file")))
    assert "not a directory" in line and (tmp_path / "file").read_text() == "x"
    line = one_error_line(skitter("demo", "-o", "/"))
    assert "not a demo's crawl" in line
    res = skitter("demo", "--pages", "99999999999", "-o", str(tmp_path / "d"))
    assert res.returncode == 2 and "is not in the range" in res.stderr and not (tmp_path / "d").exists()


def test_an_empty_output_path_is_refused(tmp_path):
    res = skitter("crawl", "http://127.0.0.1:9/", "-o", "", "--quiet")
    assert res.returncode == 2 and "an empty path" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("agent", ["bot\r\nX-Evil: 1", "b\xf6t", " "])
def test_a_user_agent_that_is_not_one_line_of_ascii(tmp_path, agent):
    agent = agent.encode().decode("unicode_escape")
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"), "--quiet",
                                  "--user-agent", agent))
    assert "--user-agent must be printable ASCII on one line" in line


def test_damaged_crawl_directory_entries(tmp_path):
    """A crawl directory whose crawl.log is a directory, or whose warc is a file: one line, no
    worker process left to report on."""
    d = tmp_path / "c"
    (d / "crawl.log").mkdir(parents=True)
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(d), "--quiet", "--delay", "0"))
    assert "crawl.log is not a file" in line
    e = tmp_path / "e"
    e.mkdir()
    (e / "warc").write_text("x")
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(e), "--quiet", "--delay", "0"))
    assert "warc is not a directory" in line


def test_a_warc_export_writes_through_a_link_and_refuses_what_is_not_a_file(tmp_path):
    _, finished_crawl = _small_crawl(tmp_path)
    target = tmp_path / "target.warc.gz"
    target.write_text("old")
    (tmp_path / "link.warc.gz").symlink_to(target)
    res = skitter("export", str(finished_crawl), "--format", "warc", "-o", str(tmp_path / "link.warc.gz"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "link.warc.gz").is_symlink() and target.read_bytes()[:2] == b"\x1f\x8b"
    os.mkfifo(tmp_path / "fifo")
    for out in (tmp_path / "fifo", tmp_path):
        line = one_error_line(skitter("export", str(finished_crawl), "--format", "warc", "-o", str(out)))
        assert "not a regular file" in line
    assert (tmp_path / "fifo").exists() and not (tmp_path / "fifo").is_file()
    line = one_error_line(skitter("export", str(finished_crawl), "--format", "jsonl", "-o",
                                  str(tmp_path / "nowhere" / "x.jsonl")))
    assert line == f"skitter: error: {tmp_path / 'nowhere' / 'x.jsonl'}: No such file or directory"


def test_merge_of_a_crawl_without_its_warc_files_or_with_an_empty_database(tmp_path):
    """merge said "19 URLs merged" (exit 0) without the WARC files the records point to; and made
    an empty crawl.db a crawl database."""
    import shutil

    _, out = _small_crawl(tmp_path)
    shutil.rmtree(out / "warc")
    line = one_error_line(skitter("merge", str(out), "-o", str(tmp_path / "m")))
    assert "a WARC file of" in line and "is missing" in line and not (tmp_path / "m").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "crawl.db").write_bytes(b"")
    line = one_error_line(skitter("merge", str(empty), "-o", str(tmp_path / "m")))
    assert "crawl.db is empty" in line and (empty / "crawl.db").stat().st_size == 0


def test_a_corrupt_stored_config_is_one_line(tmp_path):
    _, out = _small_crawl(tmp_path)
    conn = sqlite3.connect(out / "crawl.db")
    for value in ("{not json", '{"seeds": 5}'):
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'config'", (value,))
        for args in (("stats", str(out)), ("recrawl", str(out), "--for", "1s")):
            line = one_error_line(skitter(*args))
            assert line.startswith("skitter: error: crawl.db holds a corrupt meta value for 'config'"), line
    conn.close()


def test_serve_on_port_0_says_the_port_it_got(tmp_path):
    """`--port 0` asks the system for a free port: the "serving" line names it (it said :0)."""
    import re
    import time
    import urllib.request

    from skitter.store.db import CrawlDB

    CrawlDB(tmp_path).close()
    proc = subprocess.Popen([sys.executable, "-m", "skitter", "serve", str(tmp_path), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.search(r"on http://127\.0\.0\.1:(\d+)/", line)
        assert m and m.group(1) != "0", line
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/", timeout=5) as resp:
                    assert resp.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()


def test_eval_files_with_a_byte_order_mark_are_read_and_empty_labels_refused(tmp_path):
    """A labels file saved with a BOM (as Windows editors do) was "Unexpected UTF-8 BOM"; an empty
    one evaluated nothing and exited 0; eval-fresh on a crawl never recrawled blamed the fetches."""
    _, out = _small_crawl(tmp_path)
    (tmp_path / "labels.jsonl").write_text('\ufeff{"url": "http://127.0.0.1/", "topic": "bees"}\n', encoding="utf-8")
    res = skitter("eval-crawl", str(out), "--labels", str(tmp_path / "labels.jsonl"))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    (tmp_path / "empty.jsonl").write_text("\n")
    line = one_error_line(skitter("eval-crawl", str(out), "--labels", str(tmp_path / "empty.jsonl")))
    assert "holds no label records" in line
    (tmp_path / "changes.json").write_text('\ufeff{"http://127.0.0.1/": [1.0]}')
    line = one_error_line(skitter("eval-fresh", str(out), "--changes", str(tmp_path / "changes.json")))
    assert "holds no recrawl" in line
