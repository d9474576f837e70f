"""The live index on the user's path (issue #18): the default `skitter crawl` command, index
included, timed end to end, with the time after the last fetch and each process's memory.

    python bench/live_index.py --seeds SEEDS_FILE --runs 3 [--variant NAME=SRC_DIR ...]
                               [--max-pages 15000] [--json OUT]

SEEDS_FILE holds the seed URLs of a served benchmark web (`bench/run.py --serve 3600` writes
bench/out/runs/seeds.txt). Each variant is a source tree (its ``src`` directory, put first on
PYTHONPATH): several variants alternate, run by run, so that other load on the machine falls on
all of them alike. The default is this checkout.

Per run, from outside (psutil, every 0.1 s; PSS from smaps_rollup every 0.5 s):

- wall: the command's wall time; pages: fetches with a status (crawl.db); docs: the index's rows;
- span: first to last ``fetched_at`` (a fetch's start time); after: wall end minus the last
  fetch's start; loop_end: when the crawl's child processes were gone (the loop ended: what
  follows is ``run_crawl``'s final index update and summary);
- cpu: user+sys of the whole tree (wait4); per child process its CPU (last sample) and peak
  RSS/PSS, in order of start (the first is the analysis worker; the index process, when there is
  one, is the last started);
- peak RSS and PSS of the tree (the sum over its processes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def run_once(src: Path, seeds: list[str], out: Path, args) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(src))
    if args.pure:
        env["SKITTER_PURE_PYTHON"] = "1"
    cmd = [sys.executable, "-m", "skitter", "crawl", *seeds, "-o", str(out),
           "--max-pages", str(args.max_pages), "--per-host", "8", "--concurrency", "64",
           "--delay", "0", "--quiet", *args.extra]
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(out.with_suffix(".stderr"), "wb"))
    stop = threading.Event()
    children: dict[int, dict] = {}
    tree = {"rss": 0, "pss": 0, "main_rss": 0, "main_pss": 0, "loop_end": None, "had_children": False}

    def sampler() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        n = 0
        while not stop.is_set():
            tick = n % 5 == 0
            n += 1
            try:
                kids = root.children(recursive=True)
            except psutil.Error:
                break
            rss = pss = 0
            for p in [root, *kids]:
                try:
                    if tick:
                        m = p.memory_full_info()
                        r, s = m.rss, m.pss
                    else:
                        r, s = p.memory_info().rss, 0
                    cpu = p.cpu_times()
                except psutil.Error:
                    continue
                rss += r
                pss += s
                if p.pid == root.pid:
                    tree["main_rss"] = max(tree["main_rss"], r)
                    tree["main_pss"] = max(tree["main_pss"], s)
                    continue
                c = children.setdefault(p.pid, {"start": round(time.time() - t0, 2), "rss": 0, "pss": 0})
                c["rss"] = max(c["rss"], r)
                c["pss"] = max(c["pss"], s)
                c["cpu"] = round(cpu.user + cpu.system, 2)
                c["end"] = round(time.time() - t0, 2)
            if kids:
                tree["had_children"] = True
            elif tree["had_children"] and tree["loop_end"] is None:
                tree["loop_end"] = time.time()
            tree["rss"] = max(tree["rss"], rss)
            tree["pss"] = max(tree["pss"], pss)
            stop.wait(0.1)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    _, status, ru = os.wait4(proc.pid, 0)
    t1 = time.time()
    stop.set()
    th.join()
    rc = os.waitstatus_to_exitcode(status)
    db = sqlite3.connect(out / "crawl.db")
    pages, first, last = db.execute("SELECT count(*), min(fetched_at), max(fetched_at) FROM fetches"
                                    " WHERE status IS NOT NULL").fetchone()
    db.close()
    try:
        idx = sqlite3.connect(out / "index.db")
        docs = idx.execute("SELECT count(*) FROM docs").fetchone()[0]
        idx.close()
    except sqlite3.Error:
        docs = None
    first_e, last_e = _epoch(first), _epoch(last)
    r = {"rc": rc, "wall": round(t1 - t0, 2), "pages": pages, "docs": docs,
         "span": round(last_e - first_e, 2), "after": round(t1 - last_e, 2),
         "loop_end_after_fetch": round(tree["loop_end"] - last_e, 2) if tree["loop_end"] else None,
         "final_update": round(t1 - tree["loop_end"], 2) if tree["loop_end"] else None,
         "cpu": round(ru.ru_utime + ru.ru_stime, 2),
         "peak_rss": round(tree["rss"] / 2**20, 1), "peak_pss": round(tree["pss"] / 2**20, 1),
         "main_rss": round(tree["main_rss"] / 2**20, 1), "main_pss": round(tree["main_pss"] / 2**20, 1),
         "children": [{k: (round(v / 2**20, 1) if k in ("rss", "pss") else v) for k, v in c.items()}
                      for c in sorted(children.values(), key=lambda c: c["start"])]}
    r["pages_per_s"] = round(pages / r["wall"], 1)
    r["after_pct"] = round(100 * r["after"] / r["span"], 1)
    r["cpu_ms_page"] = round(1000 * r["cpu"] / pages, 2)
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-pages", type=int, default=15000)
    ap.add_argument("--variant", action="append", default=[], help="NAME=SRC_DIR (repeatable)")
    ap.add_argument("--pure", action="store_true", help="SKITTER_PURE_PYTHON=1")
    ap.add_argument("--keep", action="store_true", help="keep the crawl directories")
    ap.add_argument("--json", help="append each run's record to this file (JSON lines)")
    ap.add_argument("extra", nargs="*", help="more `skitter crawl` options (after --)")
    args = ap.parse_args()
    seeds = Path(args.seeds).read_text().split()
    variants = [v.split("=", 1) for v in args.variant] or [["this", str(ROOT / "src")]]
    work = Path(tempfile.mkdtemp(prefix="live-index-"))
    results: dict[str, list[dict]] = {name: [] for name, _ in variants}
    keys = ("wall", "pages_per_s", "span", "after", "after_pct", "loop_end_after_fetch", "final_update",
            "cpu_ms_page", "peak_rss", "peak_pss", "docs")
    for i in range(args.runs):
        for name, src in variants:
            r = run_once(Path(src), seeds, work / f"{name}-{i}", args)
            r["variant"] = name
            results[name].append(r)
            print(json.dumps(r), flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
    for name, rs in results.items():
        med = {k: statistics.median([r[k] for r in rs if r[k] is not None] or [0]) for k in keys}
        print(f"median {name} ({len(rs)} runs): " + ", ".join(f"{k} {v}" for k, v in med.items()))


if __name__ == "__main__":
    main()
