"""Nothing hangs: a stalled crawl says what it waits for, a blocked loop is reported with where it is
stuck, and SIGTERM / Ctrl-C stop a crawl within seconds whatever its loop is doing (issue 17)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sites import StaticSite, hub_site, wait_for_progress
from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.store.db import CrawlDB
from skitter.watchdog import read_status

pytestmark = pytest.mark.slow

SKITTER = [sys.executable, "-m", "skitter"]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def stop_and_time(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[float, str]:
    t0 = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=timeout)
    return time.monotonic() - t0, err


def test_a_crawl_held_by_a_long_crawl_delay_says_so(tmp_path):
    """Every URL left is on a host with Crawl-delay: 60. The crawl is right to wait, and says why:
    in DIR/crawl.log, DIR/watchdog.json and `skitter stats`, within --stall-after seconds."""
    root = hub_site(tmp_path / "site", 5)
    out = tmp_path / "c"
    with StaticSite(root, robots_txt="User-agent: *\nCrawl-delay: 60\n") as site:
        proc = subprocess.Popen([*SKITTER, "crawl", site.base + "/", "-o", str(out), "--delay", "0",
                                 "--max-crawl-delay", "60", "--stall-after", "1", "--quiet"],
                                stderr=subprocess.PIPE, text=True)
        try:
            status = wait_for(lambda: read_status(out), 20, "the watchdog's report")
            assert status["kind"] == "stalled"
            msg = status["message"]
            assert "held by politeness" in msg and "Crawl-delay 60 s" in msg and "127.0.0.1" in msg, msg
            assert "URLs queued" in msg and "next_ready" in msg, msg
            stats = subprocess.run([*SKITTER, "stats", str(out)], capture_output=True, text=True, timeout=60)
            assert "watchdog" in stats.stdout and "stalled" in stats.stdout, stats.stdout
            assert "held by politeness" in (out / "crawl.log").read_text()
            took, err = stop_and_time(proc)
        finally:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert took < 5, f"SIGTERM took {took:.1f} s"
    assert "watchdog: no request started or finished" in err   # the warning reaches stderr too


def test_sigterm_stops_a_crawl_within_seconds_while_the_frontier_is_busiest(tmp_path):
    """128 fetch tasks, 8 per host, thousands of URLs queued, the user's default adaptive delay: the
    first SIGTERM ends the process cleanly within a few seconds, and the same command resumes."""
    out = tmp_path / "c"
    with DemoServer(DemoConfig(hosts=8, pages=3000, seed=5, crawl_delay=0)) as srv:
        cmd = [*SKITTER, "crawl", *srv.web.seeds(), "-o", str(out), "--delay", "0", "--per-host", "8",
               "--concurrency", "128", "--quiet"]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_progress(out, proc, 400, timeout=60)
            db = CrawlDB(out, readonly=True)
            queued = db.conn.execute("SELECT count(*) FROM urls WHERE state != 2").fetchone()[0]
            db.conn.close()
            assert queued > 500, "the frontier should be busy when the signal arrives"
            took, err = stop_and_time(proc)
        finally:
            proc.kill()
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert took < 5, f"SIGTERM took {took:.1f} s"
        db = CrawlDB(out, readonly=True)
        assert db.get_meta("state") == "stopped"
        db.conn.close()
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
    db = CrawlDB(out, readonly=True)
    assert db.get_meta("state") == "finished"
    db.conn.close()


SCRIPT = textwrap.dedent("""
    import asyncio, json, os, signal, sys, threading, time
    from pathlib import Path
    from skitter.watchdog import Watchdog

    mode, directory = sys.argv[1], Path(sys.argv[2])
    stopped = []

    def stuck_here(seconds):
        time.sleep(seconds)

    def spin_forever():
        n = 0
        while True:
            n += 1

    async def main():
        wd = Watchdog(directory, describe=lambda: "nothing", has_work=lambda: False,
                      on_stop=lambda: stopped.append(1), block_after=1.0, beat_every=0.1,
                      force_after=1.0, exit_after=10.0)
        wd.start()
        beat = asyncio.ensure_future(wd.run())
        await asyncio.sleep(0.3)
        try:
            if mode == "block":
                stuck_here(2.5)
                await asyncio.sleep(0.5)   # the heartbeat runs again: "resumed"
            else:
                threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
                spin_forever()
        finally:
            beat.cancel()
            wd.close()

    try:
        asyncio.run(main())
        print("returned")
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
""")


def test_a_blocked_event_loop_is_reported_with_where_it_is_stuck(tmp_path):
    res = subprocess.run([sys.executable, "-c", SCRIPT, "block", str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and "returned" in res.stdout, res.stderr
    assert "the event loop has not run for" in res.stderr and "stuck_here" in res.stderr, res.stderr
    assert json.loads((tmp_path / "watchdog.json").read_text())["kind"] == "resumed"


def test_sigterm_interrupts_a_loop_that_never_yields(tmp_path):
    """A synchronous loop that never returns to the event loop (issue 17's frontier spin): the
    signal's clean stop cannot run, so the watchdog interrupts the main thread where it is."""
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-c", SCRIPT, "spin", str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    took = time.monotonic() - t0
    assert res.returncode == 130 and "interrupted" in res.stdout, (res.returncode, res.stdout, res.stderr)
    assert "has not taken the stop signal" in res.stderr and "spin_forever" in res.stderr, res.stderr
    assert took < 10, f"took {took:.1f} s"


def test_a_crawl_whose_end_waits_says_for_what(tmp_path):
    """Every URL fetched, but the live index's step cannot write: another program holds index.db's
    write lock (SQLite waits up to 30 s for it). The crawl's end waits for that step, and says so
    within --stall-after seconds, naming it; the lock released, the crawl ends with its index."""
    import sqlite3

    root = hub_site(tmp_path / "site", 3, "lighthouse keeper {i}")
    out = tmp_path / "c"
    out.mkdir()
    holder = sqlite3.connect(out / "index.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with StaticSite(root) as site:
            proc = subprocess.Popen([*SKITTER, "crawl", site.base + "/", "-o", str(out), "--delay", "0",
                                     "--stall-after", "1", "--quiet"], stderr=subprocess.PIPE, text=True)
            try:
                status = wait_for(lambda: read_status(out), 25, "the watchdog's report")
                msg = status["message"]
                assert status["kind"] == "stalled", msg
                assert "0 URLs queued, 0 in flight" in msg, msg
                assert "the crawl is ending and waits for the live index's last step (in _step)" in msg, msg
                holder.rollback()
                holder.close()
                _, err = proc.communicate(timeout=60)
            finally:
                proc.kill()
    finally:
        holder.close()
    assert proc.returncode == 0 and "Traceback" not in err, err
    res = subprocess.run([*SKITTER, "search", str(out), "lighthouse"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("3 results"), res.stdout + res.stderr
