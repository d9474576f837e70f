"""``skitter eval-fresh`` through the command line, on a recrawl made in fake time (the real crawl
loop, store and recrawl part on the changing demo web served in-process) and the web's own change
log as ``skitter demo --changing`` writes it (docs/recrawl.md)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest

from skitter.demo.changing import ChangeConfig
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.recrawl.evaluate import run_fake_recrawl
from skitter.testing import EPOCH
from sites import one_error_line, skitter

CHANGE = ChangeConfig(speed=1.0, static_share=0.3, min_interval=60.0, max_interval=2 * 3600.0, new_per_hour=0.0)
HOURS = 2.0


@pytest.fixture(scope="module")
def recrawled(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A recrawl (optimal, PageRank importance) of 3 hours and its change log."""
    tmp = tmp_path_factory.mktemp("fresh")
    web = DemoWeb(DemoConfig(pages=60, hosts=2, changing=CHANGE), ["http://127.0.0.2:8000", "http://127.0.0.3:8000"],
                  start_epoch=EPOCH)
    out = tmp / "crawl"
    r = run_fake_recrawl(out, web, hours=HOURS, rate=0.02, importance="pagerank", warmup_hours=0)
    log = tmp / "changes.json"
    log.write_text(json.dumps(web.change_log_document(EPOCH, EPOCH + HOURS * 3600)))
    return out, log, r


def test_eval_fresh_scores_the_recrawl_and_the_simulated_policies(recrawled, tmp_path: Path) -> None:
    out, log, r = recrawled
    png = tmp_path / "fresh.png"
    res = skitter("eval-fresh", str(out), "--changes", str(log), "--json", "--plot", str(png))
    assert res.returncode == 0, res.stderr
    ev = json.loads(res.stdout)["crawl"]
    s = ev["scores"]
    assert set(s) == {"recrawl", "uniform (true rates)", "proportional (true rates)", "optimal (true rates)",
                      "age-optimal (true rates)"}
    assert ev["policy"] == "optimal" and ev["importance"] == "pagerank"
    # the log lists the web's pages; the traps' endless calendar and shop pages it does not (they
    # never change)
    assert 0 < ev["unlisted"] < ev["pages"] / 2
    # the same recrawl, the same ground truth: about what the in-process evaluation scored, whose
    # window starts when the last page had its first fetch (not 95 % of them) and ends at the run's
    # end (not the last fetch); the pages first fetched after the 95 % mark are left out
    assert ev["synced"] <= r["synced"] and ev["pages"] + ev["late"] == r["pages"] and ev["late"] >= 1
    assert s["recrawl"]["freshness"] == pytest.approx(r["scores"]["recrawl"]["freshness"], abs=0.03)
    assert s["recrawl"]["fetches"] > 100
    for row in s.values():
        assert 0 <= row["freshness"] <= 1 and 0 <= row["weighted_freshness"] <= 1 and row["age"] >= 0
        assert abs(row["fetches"] - s["recrawl"]["fetches"]) <= 1   # as many fetches, same span
    # with the true rates, the (weighted) freshness optimum beats uniform, and the age-optimal
    # policy has the least weighted age
    assert s["optimal (true rates)"]["weighted_freshness"] > s["uniform (true rates)"]["weighted_freshness"]
    assert s["age-optimal (true rates)"]["weighted_age"] <= min(v["weighted_age"] for v in s.values()) + 1e-6
    # PageRank weights are not all 1: the weighted figures are figures of their own
    assert s["optimal (true rates)"]["weighted_freshness"] != pytest.approx(s["optimal (true rates)"]["freshness"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    table = skitter("eval-fresh", str(out), "--changes", str(log), "--warmup", "30m")
    assert table.returncode == 0, table.stderr
    assert "| recrawl (optimal, own estimates) |" in table.stdout
    assert "| age-optimal (true rates) |" in table.stdout
    assert f"{(ev['end'] - ev['synced'] - 1800) / 60:.1f} min scored" in table.stdout   # --warmup 30m
    assert ev["start"] == ev["synced"]
    assert "not in the change log (never changed)" in table.stdout
    # the scored window's share of the recrawl's time, and a note when it is small
    assert ev["began"] < ev["synced"] and ev["scored_share"] == pytest.approx(
        (ev["end"] - ev["start"]) / (ev["end"] - ev["began"]))
    warm = (ev["end"] - ev["synced"] - 1800) / (ev["end"] - ev["began"])
    assert ("note: the scored window is" in table.stdout) == (warm < 0.25)
    from skitter.eval.fresh import FreshEval, report

    small = FreshEval(**{k: ev[k] for k in ("policy", "importance", "pages", "unlisted", "late", "start", "end",
                                             "synced", "scores")}, began=ev["start"] - 9 * (ev["end"] - ev["start"]))
    assert "note: the scored window is 10% of the recrawl's time" in report("crawl", small)
    assert "note:" not in report("crawl", FreshEval(**{**small.__dict__, "began": ev["start"]}))
    # an optimum that gains next to nothing over uniform (in plain freshness here) gets no share:
    # a ratio over 0.006 printed -3.9 or -7.0 (a hold-out web); the weighted one is still shown
    scores = {k: dict(v) for k, v in ev["scores"].items()}
    scores["optimal (true rates)"]["freshness"] = scores["uniform (true rates)"]["freshness"] + 0.006
    scores["optimal (true rates)"]["weighted_freshness"] = scores["uniform (true rates)"]["weighted_freshness"] + 0.2
    flat = FreshEval(**{**small.__dict__, "scores": scores})
    assert flat.gain_share() is None and flat.gain_share("weighted_freshness") is not None
    text = report("crawl", flat)
    assert " weighted of the true-rate optimum's gain" in text and "gains less than 0.02 over uniform in plain" in text
    # ages under 10 minutes in seconds (a hold-out recrawl's 8.9 s was printed "0.1" minutes, alike for all)
    quick = {k: {**v, "age": 8.9, "weighted_age": 9.4} for k, v in scores.items()}
    text = report("crawl", FreshEval(**{**small.__dict__, "scores": quick}))
    assert "| age (s) | weighted age (s) |" in text and "| 8.9 | 9.4 |" in text
    assert "| age (min) |" in report("crawl", small) or max(v["age"] for v in ev["scores"].values()) < 600


@pytest.mark.parametrize("new_per_hour", [0.0, 200.0])
def test_eval_fresh_scores_a_crawl_then_a_separate_recrawl(tmp_path: Path, new_per_hour: float) -> None:
    """The documented path ``skitter crawl``, then ``skitter recrawl``, on the changing web served
    over loopback: the plain crawl's fetches are the pages' first visits (``recrawl_pages.first_visit``;
    it writes no "first" row to recrawl_visits), so the discovery crawl ends when that crawl ended
    and the window scored is the recrawl's. (Before, a page's first visit was its first revisit:
    the 95 % mark fell near the recrawl's end, and pages not revisited yet were left out.) Also on
    a web that grows while it is recrawled: its new pages, found one by one, are left out without
    moving the window's start (a hold-out web that grew 12 % had 11 % of its recrawl scored)."""
    import sqlite3
    import time

    from skitter.demo.server import DemoServer

    out = tmp_path / "crawl"
    fast = ["--delay", "0", "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet"]
    with DemoServer(DemoConfig(hosts=2, pages=80, seed=5),
                    changing=ChangeConfig(speed=60.0, min_interval=60.0, new_per_hour=new_per_hour)) as srv:
        res = skitter("crawl", *srv.web.seeds(), "-o", str(out), *fast, timeout=180)
        assert res.returncode == 0, res.stderr
        crawled = time.time()
        res = skitter("recrawl", str(out), "--for", "8s", "--rate", "50", "--quiet", timeout=180)
        assert res.returncode == 0, res.stderr
        log = tmp_path / "changes.json"
        log.write_text(json.dumps(srv.web.change_log_document(srv.start_epoch, time.time())))
    conn = sqlite3.connect(out / "crawl.db")
    try:
        members = conn.execute("SELECT count(*) FROM recrawl_pages WHERE in_collection = 1").fetchone()[0]
        # (of the pages the plain crawl fetched: the new pages are not scored)
        revisits = conn.execute("SELECT count(*) FROM recrawl_visits v JOIN recrawl_pages p ON p.fp = v.fp"
                                " WHERE v.status IS NOT NULL AND p.first_visit <= ?", (crawled,)).fetchone()[0]
        firsts = conn.execute("SELECT count(*) FROM recrawl_visits WHERE kind = 'first'").fetchone()[0]
    finally:
        conn.close()
    assert members > 100 and revisits > 20
    assert (firsts > 0) == bool(new_per_hour)   # the new pages' first fetches, in the recrawl
    res = skitter("eval-fresh", str(out), "--changes", str(log), "--json")
    assert res.returncode == 0, res.stderr
    ev = json.loads(res.stdout)["crawl"]
    assert ev["synced"] <= crawled and ev["start"] == ev["synced"]   # the discovery crawl's end
    assert ev["end"] - ev["start"] >= 5.0                            # about the recrawl's 8 s
    assert ev["pages"] + ev["late"] == members
    if new_per_hour:
        assert ev["late"] > 0.06 * members, ev["late"]   # grown by more than the 5 % the 95 % mark allows
    else:
        assert ev["late"] <= 0.05 * members + 1
    assert ev["scores"]["recrawl"]["fetches"] >= 0.8 * revisits   # the recrawl's revisits, nearly all


def test_a_bare_change_log_gives_rates_from_its_own_changes(recrawled, tmp_path: Path) -> None:
    """{url: [times]} without rates: each URL's rate is its changes over the span; the recrawl's
    own row does not depend on rates at all."""
    out, log, _ = recrawled
    doc = json.loads(log.read_text())
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc["changes"]))
    full = json.loads(skitter("eval-fresh", str(out), "--changes", str(log), "--json").stdout)["crawl"]["scores"]
    res = skitter("eval-fresh", str(out), "--changes", str(bare), "--json")
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)["crawl"]["scores"]
    assert s["recrawl"] == full["recrawl"]
    assert s["optimal (true rates)"]["freshness"] == pytest.approx(full["optimal (true rates)"]["freshness"], abs=0.05)


def in_process(*args: str) -> subprocess.CompletedProcess:
    """``skitter ARGS`` through the CLI's own entry point (``skitter.cli.main``: click's parsing and
    its error handling) in this process, output captured: a new interpreter costs 0.3 s a case."""
    from skitter.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["skitter", *args], code, out.getvalue(), err.getvalue())


def test_bad_input_is_one_error_line(recrawled, tmp_path: Path) -> None:
    out, log, _ = recrawled
    (tmp_path / "notjson").write_text("{url")
    (tmp_path / "other.json").write_text(json.dumps({"http://example.org/x": [1.0]}))
    (tmp_path / "badtimes.json").write_text(json.dumps({"http://example.org/x": ["soon"]}))
    cases = [((str(out), "--changes", str(tmp_path / "missing.json")), "cannot read"),
             ((str(out), "--changes", str(tmp_path / "notjson")), "not JSON"),
             ((str(out), "--changes", str(tmp_path / "badtimes.json")), "list of numbers"),
             ((str(out), "--changes", str(tmp_path / "other.json")), "no page of the collection is in the change log"),
             ((str(tmp_path / "nocrawl"), "--changes", str(log)), "not a crawl directory"),
             ((str(out), "--changes", str(log), "--warmup", "5h"), "nothing to score"),
             ((str(out), "--changes", str(log), "--warmup", "soon"), "--warmup wants")]
    for i, (args, message) in enumerate(cases):
        # two as a user runs them (a process of their own), the others through the same entry point
        res = skitter("eval-fresh", *args) if i in (1, 4) else in_process("eval-fresh", *args)
        line = one_error_line(res)
        assert line.startswith("skitter: error:") and message in line, (args, line)


def test_the_demo_command_crawls_and_recrawls_the_changing_web(tmp_path: Path) -> None:
    """``skitter demo --changing --for 20s`` as the README has it: serves the changing web (a
    wall-clock minute an hour of its life), crawls it, revisits it for the rest of the 20 s and
    leaves the change log, on which ``eval-fresh`` scores the recrawl."""
    import sqlite3

    out = tmp_path / "d"
    res = skitter("demo", "--changing", "--pages", "200", "--hosts", "2", "--for", "20s", "--rate", "5",
                  "-o", str(out), timeout=180)
    assert res.returncode == 0, res.stderr
    assert f"skitter eval-fresh {out} --changes {out}/changes.json" in res.stdout
    log = json.loads((out / "changes.json").read_text())
    assert set(log) >= {"from", "to", "changes", "rates"} and 15 < log["to"] - log["from"] < 60
    assert len(log["rates"]) > 150 and sum(map(len, log["changes"].values())) > 0
    conn = sqlite3.connect(out / "crawl.db")
    try:
        kinds = dict(conn.execute("SELECT kind, count(*) FROM recrawl_visits GROUP BY kind").fetchall())
    finally:
        conn.close()
    assert kinds.get("first", 0) > 150 and kinds.get("changed", 0) > 0, kinds
    assert kinds.get("304", 0) + kinds.get("same", 0) > 0, kinds   # revisits of unchanged pages
    res = skitter("eval-fresh", str(out), "--changes", str(out / "changes.json"), "--json")
    assert res.returncode == 0, res.stderr
    (ev,) = json.loads(res.stdout).values()
    assert ev["pages"] > 150 and ev["scores"]["recrawl"]["fetches"] > 0
    assert 0 <= ev["scores"]["recrawl"]["freshness"] <= 1
