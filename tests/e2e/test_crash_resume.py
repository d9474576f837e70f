"""kill -9 at random moments, resume with the same command, and compare with an uninterrupted crawl."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import warcio.archiveiterator

from sites import StaticSite, hub_site, wait_for_progress
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig

pytestmark = pytest.mark.slow

COMMIT_INTERVAL = 1.0  # skitter.loop.Crawler.commit_interval


def crawl_cmd(seeds, directory: Path) -> list[str]:
    return [sys.executable, "-m", "skitter", "crawl", *seeds, "-o", str(directory), "--delay", "0",
            "--adaptive-delay", "0", "--per-host", "2", "--concurrency", "8", "--max-crawl-delay", "0",
            "--quiet"]


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def records(directory: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "skitter", "export", str(directory), "--format", "jsonl"],
                         capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def outcome(recs: list[dict]) -> dict[str, tuple]:
    return {r["url"]: (r["status"], r["content_hash"], r["duplicate_of"] is not None, r["error"]) for r in recs}


def test_kill_9_resume_equals_uninterrupted(tmp_path):
    rng = random.Random(2026)
    log = tmp_path / "access.jsonl"
    # 40 ms a response: the crawl takes about 10 s, time for three kills, each after the next
    # commit (every second) has stored more records
    with DemoServer(DemoConfig(hosts=4, pages=500, seed=11), latency_ms=40, access_log=log) as srv:
        seeds = srv.web.seeds()
        ref_dir = tmp_path / "reference"
        subprocess.run(crawl_cmd(seeds, ref_dir), check=True, timeout=180, capture_output=True)
        reference = records(ref_dir)

        log.write_text("")
        crash_dir = tmp_path / "crashed"
        kills: list[float] = []
        orphans: set[int] = set()
        for _ in range(4):
            proc = subprocess.Popen(crawl_cmd(seeds, crash_dir), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            wait_for_progress(crash_dir, proc)  # kill mid-crawl, whatever the machine's load
            time.sleep(rng.uniform(0.0, 0.8))
            if proc.poll() is not None:
                break
            kills.append(time.time())
            children = _children(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            orphans.update(children)
        final = subprocess.run(crawl_cmd(seeds, crash_dir), capture_output=True, text=True, timeout=180)
        assert final.returncode == 0, final.stderr
        assert len(kills) >= 2, "the crawl finished before it could be killed twice: make the web bigger"

        resumed = records(crash_dir)
    # The analysis processes of a killed crawl end themselves (no orphan survives a kill -9).
    assert orphans, "the crawl had analysis processes"
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(p) for p in orphans):
        time.sleep(0.1)
    assert not [p for p in orphans if _alive(p)]
    # Same pages, same outcomes (which copy of a duplicate pair is the original may differ).
    assert outcome(resumed).keys() == outcome(reference).keys()
    ref, got = outcome(reference), outcome(resumed)
    differ = [u for u in ref if ref[u][:2] != got[u][:2] or ref[u][3] != got[u][3]]
    assert differ == []
    orders = sorted(r["fetch_order"] for r in resumed if r["fetch_order"] is not None)
    assert orders == list(range(1, len(orders) + 1))

    # No URL fetched again, except those in flight (or not yet committed) at a kill.
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    first_seen: dict[tuple, dict] = {}
    for e in sorted(entries, key=lambda e: e["t0"]):
        key = (e["host"], e["path"])
        if key in first_seen:
            first = first_seen[key]
            # (a request sent just before the kill may reach the server just after it)
            assert any(first["t0"] <= k + 0.05 and first["t1"] >= k - COMMIT_INTERVAL - 0.3 for k in kills) \
                or e["path"] == "/robots.txt", f"{key} fetched twice, first at {first['t0']:.3f}"
        else:
            first_seen[key] = e
    again = sum(1 for n in Counter((e["host"], e["path"]) for e in entries).values() if n > 1)
    print(f"kills: {len(kills)}, URLs fetched again after a kill: {again}")

    # Every WARC file readable to the end, and every stored record's WARC pointer valid.
    warc_files = sorted((crash_dir / "warc").glob("*.warc.gz"))
    assert warc_files
    for path in warc_files:
        with open(path, "rb") as fh:
            for rec in warcio.archiveiterator.ArchiveIterator(fh):
                rec.content_stream().read()
    import sqlite3

    conn = sqlite3.connect(crash_dir / "crawl.db")
    rows = conn.execute("SELECT url, warc_file, warc_offset FROM fetches WHERE warc_file IS NOT NULL").fetchall()
    assert len(rows) == sum(1 for r in resumed if r["status"] is not None)
    for url, name, offset in rng.sample(rows, min(50, len(rows))):
        with open(crash_dir / "warc" / name, "rb") as fh:
            fh.seek(offset)
            it = warcio.archiveiterator.ArchiveIterator(fh)
            rec = next(iter(it))
            assert rec.rec_headers.get_header("WARC-Target-URI") == url


def test_a_crawl_killed_and_resumed_at_once_keeps_the_hosts_crawl_delay(tmp_path):
    """kill -9 and the same command again at once: the resumed crawl's first request to the host
    (robots.txt, read again) comes a Crawl-delay after the killed crawl's last, not as soon as the
    new process is up (a request under way at the kill was never recorded: each host waits a gap)."""
    delay = 2.0
    root = hub_site(tmp_path / "site", 10)
    with StaticSite(root, robots_txt=f"User-agent: *\nCrawl-delay: {delay:g}\n") as site:
        cmd = [sys.executable, "-m", "skitter", "crawl", site.base + "/", "-o", str(tmp_path / "c"),
               "--delay", "0.1", "--adaptive-delay", "0", "--quiet"]

        def pages() -> int:
            return sum(1 for hit in list(site.log) if hit.path != "/robots.txt")

        for _ in range(2):   # killed after its first page, resumed at once (and killed again)
            before = pages()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while time.time() < deadline and proc.poll() is None and pages() == before:
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        hits = sorted(site.log, key=lambda h: h.t0)
    # ("/" again when the kill came before its commit: it was never recorded)
    assert [h.path for h in hits][:3] == ["/robots.txt", "/", "/robots.txt"] and len(hits) == 4, hits
    gaps = [round(b.t0 - a.t0, 3) for a, b in zip(hits, hits[1:])]
    assert min(gaps) >= delay - 0.05, f"requests closer than the Crawl-delay of {delay:g} s: {gaps}"


class _Unavailable(StaticSite):
    """A hub site whose first page answers 503 with a Retry-After."""

    def __init__(self, root: Path, retry_after: int) -> None:
        super().__init__(root)
        self.retry_after = retry_after

    async def respond(self, request):
        from aiohttp import web

        if request.path == "/p0.html":
            return web.Response(status=503, text="busy", headers={"Retry-After": str(self.retry_after)})
        return await super().respond(request)


def test_a_crawl_killed_and_resumed_at_once_keeps_a_retry_after(tmp_path):
    """A 503 asked the host to wait 4 s; the crawl, killed just after it stored that answer and run
    again at once, sends nothing to the host before the 4 s are over (robots.txt included)."""
    wait = 4.0
    with _Unavailable(hub_site(tmp_path / "site", 3), int(wait)) as site:
        cmd = [sys.executable, "-m", "skitter", "crawl", site.base + "/", "-o", str(tmp_path / "c"),
               "--delay", "0.1", "--adaptive-delay", "0", "--quiet"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and not any(h.status == 503 for h in list(site.log)):
            time.sleep(0.02)
        time.sleep(COMMIT_INTERVAL + 0.5)   # the 503 committed
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        asked = next(h for h in site.log if h.status == 503)
        resumed = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and resumed.poll() is None and not [h for h in list(site.log) if h.t0 > asked.t1]:
            time.sleep(0.02)
        resumed.kill()
        resumed.wait(timeout=10)
        after = [h for h in site.log if h.t0 > asked.t1]
    assert after, "the resumed crawl sent nothing"
    assert after[0].t0 - asked.t1 >= wait - 0.05, (after[0], round(after[0].t0 - asked.t1, 3))


def test_a_crawl_directory_keyed_by_fp_resumes_after_kill_9(tmp_path):
    """Crawl directories made before stop 14 keep ``urls``, ``fetches`` and ``pages`` keyed by fp
    (skitter.store.db, "Row order"): a crawl in one, killed and resumed, ends as a crawl in a new
    directory does, with the old layout kept."""
    import sqlite3

    from skitter.store.db import SCHEMA

    # such a directory has no form tables (--forms came later: the first writable open adds them)
    before_forms = SCHEMA.partition("CREATE TABLE IF NOT EXISTS forms ")[0]
    old_schema = before_forms.replace("id INTEGER PRIMARY KEY,\n    fp INTEGER NOT NULL UNIQUE,", "fp INTEGER PRIMARY KEY,")
    assert old_schema.count("fp INTEGER PRIMARY KEY,") == 3 and "form_urls" not in old_schema
    with DemoServer(DemoConfig(hosts=3, pages=300, seed=4), latency_ms=10) as srv:
        seeds = srv.web.seeds()
        subprocess.run(crawl_cmd(seeds, tmp_path / "new"), check=True, timeout=180, capture_output=True)
        old_dir = tmp_path / "old"
        old_dir.mkdir()
        conn = sqlite3.connect(old_dir / "crawl.db")
        conn.executescript(old_schema)
        conn.close()
        proc = subprocess.Popen(crawl_cmd(seeds, old_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_progress(old_dir, proc)
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        final = subprocess.run(crawl_cmd(seeds, old_dir), capture_output=True, text=True, timeout=180)
        assert final.returncode == 0, final.stderr
        assert killed, "the crawl finished before it could be killed: make the web bigger"
    new, old = outcome(records(tmp_path / "new")), outcome(records(old_dir))
    assert old.keys() == new.keys() and len(new) > 300
    assert [u for u in new if new[u][:2] != old[u][:2] or new[u][3] != old[u][3]] == []
    conn = sqlite3.connect(old_dir / "crawl.db")
    for table in ("urls", "fetches", "pages"):
        assert "id" not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}, table
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] > 250
    conn.close()


def test_one_crawl_at_a_time_in_a_directory_and_stats_tells_running_from_interrupted(tmp_path):
    """A second crawl in a directory being crawled stops at once with one line naming the first
    (it would hand the first one's URLs in flight back to the queue and write the same WARC
    series); ``skitter stats`` says "running" while a process holds the directory and
    "interrupted" after a kill -9, whose lock the kernel dropped: the same command resumes."""
    with DemoServer(DemoConfig(hosts=2, pages=200, seed=5), latency_ms=300) as web:   # 4 in flight: 13 pages/s
        d = tmp_path / "c"
        cmd = [*crawl_cmd(web.web.seeds(), d), "--max-pages", "80"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            wait_for_progress(d, first, pages=5)
            assert first.poll() is None
            second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            lines = second.stderr.strip().splitlines()
            assert second.returncode == 2 and len(lines) == 1, second.stderr
            assert f"is being crawled by skitter process {first.pid}" in lines[0]
            st = subprocess.run([sys.executable, "-m", "skitter", "stats", str(d), "--json"],
                                capture_output=True, text=True, timeout=60, check=True)
            assert json.loads(st.stdout)["crawling_pid"] == first.pid
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
        st = subprocess.run([sys.executable, "-m", "skitter", "stats", str(d)], capture_output=True, text=True,
                            timeout=60, check=True)
        assert "interrupted" in st.stdout and "run the same command to resume" in st.stdout
        st = subprocess.run([sys.executable, "-m", "skitter", "stats", str(d), "--json"],
                            capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(st.stdout)["state"] == "interrupted"   # the JSON says what the text says
        resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        st = subprocess.run([sys.executable, "-m", "skitter", "stats", str(d), "--json"],
                            capture_output=True, text=True, timeout=60, check=True)
        s = json.loads(st.stdout)
        assert s["state"] == "stopped" and s["fetched"] == 80 and s["crawling_pid"] is None   # the budget met
