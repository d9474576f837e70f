"""`make bench`: skitter vs Scrapy (and a bare aiohttp+selectolax client) on the same served web.

    .venv/bin/python bench/run.py [--pages 20000] [--hosts 32] [--runs 3] [--bare-runs 2]
                                  [--concurrency 32] [--per-host 4] [--max-pages N]
                                  [--quick] [--only skitter|skitter-noindex|skitter-tuned|scrapy|bare]
                                  [--timeout 900]

1. Generates the demo web (``skitter.demo.web``) and writes it as static files under
   bench/out/web/<key>/ (kept between invocations: the key holds every parameter).
2. Serves it with nginx (Debian's package; installed with apt-get when missing and root), one
   ``server`` per host on 127.0.0.2, 127.0.0.3, ... and one port, config/pid/logs under bench/out/.
3. Alternates runs: skitter three ways (the user's defaults; without the index; the tuned line of
   earlier stops: SKITTER_VARIANTS), scrapy, [bare], then again ... each in its own subprocess,
   measured from outside (psutil): wall time, CPU seconds of the process tree (user+sys, from
   wait4's rusage), peak RSS of the tree (sum over its processes, sampled every 0.1 s), pages
   fetched (each crawler's own output), plus nginx's CPU seconds during the run.
4. Checks that skitter and Scrapy fetched the same URL set (canonical URLs; exact equality when
   the budget exceeded what was reachable, Jaccard overlap otherwise).
5. Writes its section of docs/benchmarks.md (between the bench:crawl markers; the rest of the file
   is left alone) and the raw numbers to bench/out/results-<time>.json.

All traffic goes to loopback addresses; every crawl is bounded by its page budget and a timeout
(killed after it); nginx is stopped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- bench:crawl:start -->", "<!-- bench:crawl:end -->"
BIN = Path(sys.executable).parent
PY = sys.executable

sys.path.insert(0, str(BENCH))
if (ROOT / "src").is_dir():
    sys.path.insert(1, str(ROOT / "src"))

import psutil  # noqa: E402

import docsection  # noqa: E402
from nginx import Nginx, ensure_nginx, free_port, loopback_ips, nginx_version  # noqa: E402

# skitter three ways (issue 18): the user's defaults (with the benchmark's --delay 0 and
# concurrency), the same without the search index, and the tuned line of earlier stops
SKITTER_VARIANTS = {
    "skitter": [],
    "skitter-noindex": ["--index-interval", "-1"],
    "skitter-tuned": ["--adaptive-delay", "0", "--max-crawl-delay", "0", "--index-interval", "-1"],
}
CRAWLERS = (*SKITTER_VARIANTS, "scrapy", "bare")
REUSE_WEB = False   # --reuse-web


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------------------------
# the demo web


def wait_for_generator(limit: float) -> None:
    web_py = ROOT / "src" / "skitter" / "demo" / "web.py"
    deadline = time.monotonic() + limit
    while not web_py.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {web_py} does not exist (waited {limit:.0f} s)")
        log(f"waiting for {web_py.relative_to(ROOT)} ...")
        time.sleep(10)


def build_web(args, base_urls: list[str]):
    """The demo web (no Crawl-delay), or with ``--web wild`` the wild web (skitter.demo.wild: a web
    of another shape, with Crawl-delay on three hosts; its static form has no transient 503/429
    and no latency, which need a live server)."""
    if args.web == "wild":
        from skitter.demo.wild import WildConfig, WildWeb

        return WildWeb(WildConfig(seed=args.seed, hosts=args.hosts, pages=args.pages,
                                  page_kb=(args.page_kb[0], args.page_kb[1])), base_urls)
    from skitter.demo.web import DemoConfig, DemoWeb

    config = DemoConfig(seed=args.seed, hosts=args.hosts, pages=args.pages,
                        page_kb=(args.page_kb[0], args.page_kb[1]), crawl_delay=0.0)
    return DemoWeb(config, base_urls)


def web_dir_for(args, port: int) -> Path:
    key = f"s{args.seed}-h{args.hosts}-p{args.pages}-kb{args.page_kb[0]}_{args.page_kb[1]}-port{port}"
    return OUT / "web" / (key if args.web == "demo" else f"{args.web}-{key}")


def generator_fingerprint() -> str:
    import hashlib

    h = hashlib.sha256()
    for name in ("web.py", "wild.py"):
        h.update((ROOT / "src" / "skitter" / "demo" / name).read_bytes())
    return h.hexdigest()[:16]


def ensure_static(web, root: Path) -> dict:
    stamp = root / "complete.json"
    fp = generator_fingerprint()
    if stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("generator") == fp or REUSE_WEB:
            stale = "" if info.get("generator") == fp else ", written by an older generator (--reuse-web)"
            log(f"reusing the static web in {root.relative_to(ROOT)} ({info['files']} files{stale})")
            return info
        log("the generator changed since the static web was written: writing it again")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    log(f"writing the static web ({web.config.pages} pages, {web.config.hosts} hosts) to "
        f"{root.relative_to(ROOT)} ...")
    t0 = time.perf_counter()
    web.write_static(root)
    files = nbytes = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            files += 1
            nbytes += os.path.getsize(os.path.join(dirpath, n))
    info = {"generator": fp, "files": files, "bytes": nbytes, "seconds": round(time.perf_counter() - t0, 1)}
    stamp.write_text(json.dumps(info))
    log(f"wrote {files} files, {nbytes / 2**20:.0f} MiB in {info['seconds']} s")
    return info


def warm_page_cache(root: Path) -> None:
    t0 = time.perf_counter()
    n = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 20):
                    pass
            n += 1
    log(f"page cache warmed: {n} files read in {time.perf_counter() - t0:.1f} s")


# ----------------------------------------------------------------------------------------------
# one measured run


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, everything but idle and iowait)."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def measure(cmd: list[str], logs: Path, timeout: float, nginx: Nginx | None) -> dict:
    """Run ``cmd`` in its own session; wall, CPU (wait4 rusage: the whole reaped tree), peak RSS."""
    out = open(logs.with_suffix(".stdout"), "wb")
    err = open(logs.with_suffix(".stderr"), "wb")
    ng0 = nginx.cpu_seconds() if nginx else 0.0
    sys0 = _busy_seconds()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=str(ROOT),
                            start_new_session=True)
    samples: list[tuple[float, int]] = []
    pss_samples: list[tuple[float, int]] = []
    peak = [0, 0, 0]  # tree RSS, largest process count, tree PSS
    stop = threading.Event()

    def sampler() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not stop.is_set():
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                break
            rss = pss = 0
            tick = len(samples) % 5 == 0   # PSS (smaps_rollup) every 0.5 s: it costs more to read
            for p in procs:
                try:
                    if tick:
                        full = p.memory_full_info()
                        rss += full.rss
                        pss += full.pss
                    else:
                        rss += p.memory_info().rss
                except psutil.Error:
                    pass
            now = time.perf_counter() - t0
            if rss:
                samples.append((round(now, 2), rss))
                if rss > peak[0]:
                    peak[0] = rss
                peak[1] = max(peak[1], len(procs))
            if pss:
                pss_samples.append((round(now, 2), pss))
                peak[2] = max(peak[2], pss)
            stop.wait(0.1)

    timed_out = threading.Event()

    def killer() -> None:
        timed_out.set()
        for sig, pause in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            if pause:
                time.sleep(pause)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    timer = threading.Timer(timeout, killer)
    timer.daemon = True
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except KeyboardInterrupt:
        killer()
        raise
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    timer.cancel()
    stop.set()
    th.join(timeout=5)
    try:  # stragglers of the session (none expected)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    out.close()
    err.close()
    ng1 = nginx.cpu_seconds() if nginx else 0.0
    busy = _busy_seconds() - sys0
    other = max(0.0, busy - (ru.ru_utime + ru.ru_stime) - (ng1 - ng0))
    stderr_text = logs.with_suffix(".stderr").read_text(errors="replace")
    # decimate the RSS samples to at most ~300 points for the results file
    step = max(1, len(samples) // 300)
    return {
        "cmd": cmd, "rc": proc.returncode, "timed_out": timed_out.is_set(), "wall_s": round(wall, 3),
        "cpu_user_s": round(ru.ru_utime, 3), "cpu_sys_s": round(ru.ru_stime, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "peak_rss_mb": round(peak[0] / 2**20, 1), "max_rss_one_process_mb": round(ru.ru_maxrss / 1024, 1),
        "peak_pss_mb": round(peak[2] / 2**20, 1), "pss_samples": pss_samples[::max(1, len(pss_samples) // 300)],
        "processes": peak[1], "nginx_cpu_s": round(ng1 - ng0, 3),
        "machine_busy_s": round(busy, 2), "other_cpu_s": round(other, 2),
        "stderr_tail": stderr_text[-3000:], "rss_samples": samples[::step],
    }


# ----------------------------------------------------------------------------------------------
# the three crawlers


def canon(url: str) -> str:
    from skitter.urls import canonicalize

    try:
        return canonicalize(url)
    except Exception:
        return url


def skitter_command(args, seeds: list[str], crawl_dir: Path, variant: str) -> list[str]:
    exe = BIN / "skitter"
    return [str(exe) if exe.exists() else PY, *([] if exe.exists() else ["-m", "skitter"]),
            "crawl", *seeds, "-o", str(crawl_dir), "--quiet", "--delay", "0",
            "--per-host", str(args.per_host), "--concurrency", str(args.concurrency),
            "--max-pages", str(args.budget), *SKITTER_VARIANTS[variant],
            # the wild web has Crawl-delay hosts, which Scrapy does not obey: neither does skitter here
            *(["--max-crawl-delay", "0"] if args.web == "wild" and "--max-crawl-delay" not in SKITTER_VARIANTS[variant]
              else []), *args.skitter_arg]


def run_skitter(args, seeds: list[str], run_dir: Path, nginx: Nginx, variant: str = "skitter") -> dict:
    crawl_dir = run_dir / "crawl"
    if crawl_dir.exists():
        shutil.rmtree(crawl_dir)
    cmd = skitter_command(args, seeds, crawl_dir, variant)
    res = measure(cmd, run_dir / "skitter", args.timeout, nginx)
    res["urls"] = None
    if not crawl_dir.exists():
        res["error"] = "no crawl directory"
        return res
    export = run_dir / "skitter-export.jsonl"
    ex = subprocess.run([*cmd[: cmd.index("crawl")], "export", str(crawl_dir), "--format", "jsonl", "-o", str(export)],
                        capture_output=True, text=True, timeout=600, cwd=str(ROOT))
    if ex.returncode != 0:
        res["error"] = f"skitter export failed (rc {ex.returncode}): {ex.stderr.strip()[-1500:]}"
        return res
    statuses: dict[str, int] = {}
    fetched, robots_skipped, errors, error_samples = [], 0, 0, []
    with open(export, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            st = rec.get("status")
            if st is not None:
                fetched.append(rec["url"])
                k = f"{st // 100}xx" if st not in (200, 404) else str(st)
                statuses[k] = statuses.get(k, 0) + 1
            elif str(rec.get("error") or "").startswith("robots"):
                robots_skipped += 1
            elif rec.get("fetch_order") is not None or rec.get("error"):
                errors += 1
                if len(error_samples) < 5:
                    error_samples.append(f"{rec['url']}: {rec.get('error')}")
    res.update(pages=len(fetched), urls=fetched, statuses=statuses, robots_skipped=robots_skipped,
               fetch_errors=errors, error_samples=error_samples)
    st = subprocess.run([*cmd[: cmd.index("crawl")], "stats", str(crawl_dir), "--json"],
                        capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    if st.returncode == 0:
        try:
            res["summary"] = json.loads(st.stdout)
        except ValueError:
            pass
    res["crawl_dir_mb"] = round(sum(p.stat().st_size for p in crawl_dir.rglob("*") if p.is_file()) / 2**20, 1)
    if not args.keep:
        shutil.rmtree(crawl_dir, ignore_errors=True)
    return res


def run_scrapy(args, seeds: list[str], run_dir: Path, nginx: Nginx) -> dict:
    feed = run_dir / "scrapy-feed.jsonl"
    feed.unlink(missing_ok=True)
    cmd = [PY, str(BENCH / "scrapy_spider.py"), "--seeds-file", str(run_dir.parent / "seeds.txt"),
           "--out", str(feed), "--max-pages", str(args.budget), "--concurrency", str(args.concurrency),
           "--per-host", str(args.per_host), "--max-depth", "10", *(["--seen-set"] if args.scrapy_seen_set else [])]
    res = measure(cmd, run_dir / "scrapy", args.timeout, nginx)
    res["urls"] = None
    if not feed.exists():
        res["error"] = "no feed written"
        return res
    statuses: dict[str, int] = {}
    fetched: list[str] = []
    hops = Path(str(feed) + ".hops")
    for path in (feed, hops):
        if not path.exists():
            continue
        for line in open(path, encoding="utf-8"):
            rec = json.loads(line)
            fetched.append(rec["url"])
            st = rec["status"]
            k = f"{st // 100}xx" if st not in (200, 404) else str(st)
            statuses[k] = statuses.get(k, 0) + 1
    res.update(pages=len(fetched), urls=fetched, statuses=statuses)
    return res


def run_bare(args, seeds: list[str], run_dir: Path, nginx: Nginx) -> dict:
    out = run_dir / "bare-urls.txt"
    out.unlink(missing_ok=True)
    cmd = [PY, str(BENCH / "bare_client.py"), "--seeds-file", str(run_dir.parent / "seeds.txt"),
           "--out", str(out), "--max-pages", str(args.budget), "--concurrency", str(args.concurrency),
           "--per-host", str(args.per_host), "--max-depth", "10"]
    res = measure(cmd, run_dir / "bare", args.timeout, nginx)
    res["urls"] = None
    if not out.exists():
        res["error"] = "no URL list written"
        return res
    fetched = [u for u in out.read_text(encoding="utf-8").splitlines() if u]
    res.update(pages=len(fetched), urls=fetched)
    return res


RUNNERS = {**{v: (lambda *a, v=v: run_skitter(*a, variant=v)) for v in SKITTER_VARIANTS},
           "scrapy": run_scrapy, "bare": run_bare}


# ----------------------------------------------------------------------------------------------
# environment facts


def machine_info() -> dict:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = psutil.virtual_memory().total
    return {"nproc": os.cpu_count(), "cpu_model": model or platform.processor() or "unknown",
            "ram_gib": round(mem / 2**30, 1), "kernel": platform.release(), "os": _os_release()}


def _os_release() -> str:
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def versions(nginx_exe: str) -> dict:
    from importlib import metadata

    v = {"python": platform.python_version(), "nginx": nginx_version(nginx_exe)}
    for dist in ("skitter", "pycurl", "scrapy", "twisted", "aiohttp", "selectolax", "uvloop", "psutil"):
        try:
            v[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v[dist] = "not installed"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=str(ROOT), timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True,
                               cwd=str(ROOT), timeout=30).stdout.strip()
        if rev:
            v["skitter"] += f" (git {rev}{', uncommitted changes in src/' if dirty else ''})"
    except Exception:
        pass
    return v


# ----------------------------------------------------------------------------------------------
# report


def med(values: list[float]) -> float | None:
    values = [x for x in values if x is not None]
    return statistics.median(values) if values else None


def summarise(runs: list[dict]) -> dict:
    out = {}
    for name in CRAWLERS:
        ok = [r for r in runs if r["crawler"] == name and r.get("ok")]
        tried = [r for r in runs if r["crawler"] == name]
        if not tried:
            continue
        out[name] = {
            "runs": len(tried), "ok_runs": len(ok),
            "pages": med([r["pages"] for r in ok]), "wall_s": med([r["wall_s"] for r in ok]),
            "pages_per_s": med([r["pages_per_s"] for r in ok]), "cpu_s": med([r["cpu_s"] for r in ok]),
            "cpu_ms_per_page": med([1000 * r["cpu_s"] / r["pages"] for r in ok if r["pages"]]),
            "peak_rss_mb": med([r["peak_rss_mb"] for r in ok]), "nginx_cpu_s": med([r["nginx_cpu_s"] for r in ok]),
            "peak_pss_mb": med([r["peak_pss_mb"] for r in ok if r.get("peak_pss_mb")]),
        }
    return out


def ratio(a, b) -> float | None:
    return (a / b) if (a is not None and b) else None


def url_check(runs: list[dict], budget: int, truth: set[str] | None) -> dict:
    sets = {}
    for name in CRAWLERS:
        for r in runs:
            if r["crawler"] == name and r.get("ok") and r.get("urls"):
                sets.setdefault(name, []).append((r["index"], {canon(u) for u in r["urls"]}, r["pages"]))
    res: dict = {"consistency": {}}
    for name, lst in sets.items():
        first = lst[0][1]
        res["consistency"][name] = all(s == first for _, s, _ in lst)
    variants = [lst[0][1] for name, lst in sets.items() if name in SKITTER_VARIANTS]
    if len(variants) > 1:
        res["consistency"]["skitter, all three ways"] = all(v == variants[0] for v in variants)
    if "skitter" in sets and "scrapy" in sets:
        (_, a, pa), (_, b, pb) = sets["skitter"][0], sets["scrapy"][0]
        full = pa < budget and pb < budget
        inter, union = len(a & b), len(a | b)
        res.update(compared=True, full=full, skitter=len(a), scrapy=len(b), common=inter,
                   jaccard=inter / union if union else 1.0, equal=(a == b),
                   only_skitter=sorted(a - b)[:12], only_scrapy=sorted(b - a)[:12],
                   n_only_skitter=len(a - b), n_only_scrapy=len(b - a))
    else:
        res["compared"] = False
    if truth is not None:
        res["truth"] = len(truth)
        for name in ("skitter", "scrapy"):
            if name in sets:
                s = sets[name][0][1]
                res[f"{name}_vs_truth"] = {"missing": len(truth - s), "extra": len(s - truth),
                                           "missing_sample": sorted(truth - s)[:6],
                                           "extra_sample": sorted(s - truth)[:6]}
    return res


def fmt(x, nd=1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def render(ctx: dict) -> str:
    a, m, v, s, chk = ctx["args"], ctx["machine"], ctx["versions"], ctx["summary"], ctx["urlcheck"]
    L = [START, "## Crawl throughput: skitter vs Scrapy vs a bare client (`make bench`)", ""]
    L.append(f"Written by `bench/run.py` on {ctx['date']} — `{ctx['cmdline'].strip()}` — in {ctx['total_s'] / 60:.1f} min. "
             "Each run is its own subprocess, measured from outside: wall time, CPU seconds (user+sys of the "
             "process tree, from `wait4`), peak RSS (sum over the tree, sampled every 0.1 s). Pages = URLs "
             "fetched (any HTTP status, redirect hops included; robots.txt not counted), from each crawler's "
             "own output. The runs alternate (skitter, Scrapy, bare, skitter, Scrapy, …) against one nginx.")
    L += ["", "**Machine**: " + f"{m['cpu_model']}, {m['nproc']} cores (`nproc`), {m['ram_gib']} GiB RAM, "
          f"{m['os']}, Linux {m['kernel']}. The crawler, nginx (1 worker) and the harness share the cores.", ""]
    L.append("**Versions**: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".")
    w = ctx["web"]
    web_name = "skitter.demo.wild" if a.get("web") == "wild" else "skitter.demo.web"
    L += ["", f"**Web**: `{web_name}` seed {a['seed']}, {a['hosts']} hosts (127.0.0.2–127.0.0.{a['hosts'] + 1}, "
          f"port {ctx['port']}), {a['pages']:,} pages of {a['page_kb'][0]}–{a['page_kb'][1]} KiB "
          f"({w['files']:,} static files, {w['bytes'] / 2**20:,.0f} MiB), written with `write_static` and served "
          "by nginx: one `server` per host IP, `worker_processes 1`, sendfile, keep-alive, no access log, no gzip; "
          "redirects and extra headers from the manifest as exact locations, spider traps absent (404). "
          + ("robots.txt has Crawl-delay on three hosts, ignored by both crawlers (Scrapy does not read it; "
             "skitter runs with `--max-crawl-delay 0`)." if a.get("web") == "wild"
             else "robots.txt has no Crawl-delay (`crawl_delay=0`)."), ""]
    L.append(f"**Settings** (the same for all three): concurrency {a['concurrency']}, {a['per_host']} per host, "
             f"page budget {a['budget']:,}, depth limit 10, no delay, robots.txt obeyed (skitter, Scrapy).")
    L += ["", f"- skitter, three ways: `skitter crawl <{a['hosts']} seeds> -o DIR --quiet --delay 0 "
          f"--per-host {a['per_host']} --concurrency {a['concurrency']} --max-pages {a['budget']}"
          + (" " + " ".join(a["skitter_arg"]) if a["skitter_arg"] else "") + "` and nothing else is **skitter** "
          "(the user's defaults: adaptive delay 10 × the server's response time, the live search index kept "
          "current while crawling and made exact before exit, all of it in the wall time); **skitter-noindex** "
          "adds `--index-interval -1` (no index: Scrapy has no counterpart of it); **skitter-tuned** adds "
          "`--adaptive-delay 0 --max-crawl-delay 0 --index-interval -1` (the line of the earlier stops). Each "
          "stores everything (SQLite + WARC); pages = records of `skitter export --format jsonl` with a status.",
          "- Scrapy: `bench/scrapy_spider.py`, a follow-all spider restricted to the served hosts: ROBOTSTXT_OBEY "
          "(product token `skitter`, the same robots.txt group), DOWNLOAD_DELAY 0, CONCURRENT_REQUESTS "
          f"{a['concurrency']}, CONCURRENT_REQUESTS_PER_DOMAIN {a['per_host']}, CLOSESPIDER_PAGECOUNT {a['budget']}, "
          "DEPTH_LIMIT 10, FIFO (breadth-first) queues, AutoThrottle/HTTP cache/cookies off, LOG_LEVEL WARNING, "
          "a JSON-lines feed of the fetched URLs; "
          + ("it keeps its own seen set and yields each URL once (`--scrapy-seen-set`); " if a.get("scrapy_seen_set") else
             "it yields every followable link and leaves de-duplication to Scrapy's dupe filter, as a CrawlSpider does; ")
          + "it follows links by skitter's rules (a/area href, every "
          "extension, rel=nofollow and meta/X-Robots-Tag nofollow honoured) so both fetch the same set.",
          "- bare: `bench/bare_client.py`, aiohttp + selectolax on uvloop: fetch, extract links, follow within "
          "the hosts; no robots.txt, no nofollow, no storage — the ceiling for a Python crawler on these "
          "libraries (it fetches a slightly different, larger set: private pages, nofollow links).", ""]
    L += ["### Medians", "",
          "| crawler | ok runs | pages | wall s | pages/s | CPU s | CPU ms/page | peak RSS MB | peak PSS MB | nginx CPU s |",
          "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in CRAWLERS:
        if name in s:
            x = s[name]
            L.append(f"| {name} | {x['ok_runs']}/{x['runs']} | {fmt(x['pages'], 0)} | {fmt(x['wall_s'])} | "
                     f"**{fmt(x['pages_per_s'])}** | {fmt(x['cpu_s'])} | {fmt(x['cpu_ms_per_page'], 2)} | "
                     f"{fmt(x['peak_rss_mb'])} | {fmt(x.get('peak_pss_mb'))} | {fmt(x['nginx_cpu_s'])} |")
    L += ["", "Peak RSS is summed over the crawler's processes (skitter: the crawl process, its analysis "
          "worker and, with the index, the index process; Scrapy: one process), so pages two processes share (the "
          "Python runtime, libraries) count twice; peak PSS (proportional set size, from smaps_rollup every "
          "0.5 s) splits each shared page among the processes that map it: the memory the tree really takes."]
    sc, ba = s.get("scrapy", {}), s.get("bare", {})
    L += ["", "### Ratios", "",
          "| skitter, against Scrapy | pages per wall-second | CPU ms per page | pages per CPU-second | peak RSS | peak PSS |",
          "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name in SKITTER_VARIANTS:
        sk = s.get(name)
        if not sk:
            continue
        cps = ratio(ratio(1000.0, sk.get("cpu_ms_per_page")), ratio(1000.0, sc.get("cpu_ms_per_page")))
        L.append(f"| {name} | **{fmt(ratio(sk.get('pages_per_s'), sc.get('pages_per_s')), 2)}×** | "
                 f"{fmt(ratio(sk.get('cpu_ms_per_page'), sc.get('cpu_ms_per_page')), 2)}× | {fmt(cps, 2)}× | "
                 f"{fmt(ratio(sk.get('peak_rss_mb'), sc.get('peak_rss_mb')), 2)}× | "
                 f"{fmt(ratio(sk.get('peak_pss_mb'), sc.get('peak_pss_mb')), 2)}× |")
    L += ["", "Pages per wall-second count from the command's start to its exit (the index made exact included); "
          "pages per CPU-second is the figure least moved by other load on the machine. "
          f"skitter-tuned / bare client: **{fmt(ratio(s.get('skitter-tuned', {}).get('pages_per_s'), ba.get('pages_per_s')), 2)}** "
          f"(Scrapy / bare: {fmt(ratio(sc.get('pages_per_s'), ba.get('pages_per_s')), 2)})."]
    L += ["", "### URL-set check", ""]
    if chk.get("compared"):
        if chk["full"]:
            verdict = ("**identical**" if chk["equal"] else "**DIFFERENT**")
            L.append(f"Both crawls ended below the budget ({a['budget']:,}), so both crawled everything reachable "
                     f"and the sets must be equal: they are {verdict} — skitter {chk['skitter']:,} URLs, Scrapy "
                     f"{chk['scrapy']:,}, common {chk['common']:,} (Jaccard {chk['jaccard']:.4f}).")
        else:
            L.append(f"A crawl hit the budget ({a['budget']:,}): Jaccard overlap {chk['jaccard']:.4f} — skitter "
                     f"{chk['skitter']:,} URLs, Scrapy {chk['scrapy']:,}, common {chk['common']:,}.")
        L.append("URLs compared canonically (skitter's export `url`; Scrapy's `response.url` and redirect hops "
                 "through `skitter.urls.canonicalize`), first successful run of each.")
        if chk["n_only_skitter"] or chk["n_only_scrapy"]:
            L.append("")
            L.append(f"Only skitter ({chk['n_only_skitter']}): " + ", ".join(f"`{u}`" for u in chk["only_skitter"][:8]))
            L.append("")
            L.append(f"Only Scrapy ({chk['n_only_scrapy']}): " + ", ".join(f"`{u}`" for u in chk["only_scrapy"][:8]))
    else:
        L.append("Not compared: a successful run of both skitter and Scrapy is needed.")
    cons = chk.get("consistency", {})
    if cons:
        L += ["", "Same set in every run of one crawler: " + ", ".join(f"{k} {'yes' if ok else 'NO'}" for k, ok in cons.items()) + "."]
    if "truth" in chk:
        parts = []
        for name in ("skitter", "scrapy"):
            t = chk.get(f"{name}_vs_truth")
            if t:
                parts.append(f"{name} misses {t['missing']} and adds {t['extra']}")
        L += ["", f"Against the generator's ground truth (`DemoWeb.reachable()`: {chk['truth']:,} URLs, robots.txt "
              "for `skitter`, nofollow honoured, depth 10; the static server also answers the linked first URLs "
              "of the spider traps with 404, which the truth leaves out): " + "; ".join(parts) + "."]
    L += ["", "### All runs", "",
          "| # | crawler | exit | pages | wall s | pages/s | CPU s (user+sys) | peak RSS MB | nginx CPU s | other CPU s | notes |",
          "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in ctx["runs"]:
        notes = []
        if r.get("timed_out"):
            notes.append("timed out")
        if r.get("error"):
            notes.append(r["error"].splitlines()[0][:120])
        if r.get("statuses"):
            notes.append(" ".join(f"{k}:{n}" for k, n in sorted(r["statuses"].items())))
        if r.get("fetch_errors"):
            notes.append(f"{r['fetch_errors']} fetch errors")
        if r.get("crawl_dir_mb"):
            notes.append(f"crawl dir {r['crawl_dir_mb']} MB")
        L.append(f"| {r['index']} | {r['crawler']} | {r['rc']} | {fmt(r.get('pages'))} | {fmt(r['wall_s'])} | "
                 f"{fmt(r.get('pages_per_s'))} | {fmt(r['cpu_s'])} ({fmt(r['cpu_user_s'])}+{fmt(r['cpu_sys_s'])}) | "
                 f"{fmt(r['peak_rss_mb'])} | {fmt(r['nginx_cpu_s'])} | {fmt(r.get('other_cpu_s'))} | {'; '.join(notes)} |")
    L += ["", "*other CPU s*: CPU time the rest of the machine (anything but the crawler's process tree and nginx: "
          "the harness's sampler, other jobs) used during the run, out of 2 × wall s available. A large value "
          "marks a run that shared the cores with something else.",
          "", "Reproduce: `make bench` (or `.venv/bin/python bench/run.py --help`); raw numbers and RSS samples in "
          "`bench/out/results-*.json` (git-ignored).", END]
    return "\n".join(L) + "\n"


def write_doc(path: Path, section: str) -> None:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Benchmarks\n\nMeasured on this project's machine kind (2 cores, 24 GiB). Each section is "
                        "written by its own script; re-running one replaces only its section.\n", encoding="utf-8")
    docsection.write_section(path, section)


def plot(runs: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = {"skitter": "tab:blue", "skitter-noindex": "tab:cyan", "skitter-tuned": "tab:purple",
              "scrapy": "tab:orange", "bare": "tab:gray"}
    for r in runs:
        if r.get("rss_samples"):
            xs, ys = zip(*r["rss_samples"])
            ax.plot(xs, [y / 2**20 for y in ys], color=colors[r["crawler"]], alpha=0.8,
                    label=f"{r['crawler']} #{r['index']}")
    ax.set_xlabel("seconds")
    ax.set_ylabel("RSS of the process tree (MiB)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="skitter vs Scrapy (and a bare client) on the same nginx-served demo web")
    ap.add_argument("--pages", type=int, default=None, help="pages in the demo web (default 20000; --quick: 1000)")
    ap.add_argument("--hosts", type=int, default=None, help="hosts (loopback IPs) (default 32; --quick: 8)")
    ap.add_argument("--runs", type=int, default=None, help="runs of skitter and of Scrapy each (default 3; --quick: 1)")
    ap.add_argument("--bare-runs", type=int, default=None, help="runs of the bare client (default 2; --quick: 1)")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight, all hosts (default 32)")
    ap.add_argument("--per-host", type=int, default=4, help="requests in flight per host (default 4)")
    ap.add_argument("--max-pages", dest="budget", type=int, default=0,
                    help="page budget of every crawl (default: 2 × pages, so the whole web is crawled)")
    ap.add_argument("--page-kb", type=int, nargs=2, default=(5, 50), metavar=("LO", "HI"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--web", choices=("demo", "wild"), default="demo",
                    help="the generated web: the demo web, or the wild web (another shape; Crawl-delay hosts)")
    ap.add_argument("--port", type=int, default=8431,
                    help="port of every host (a free one if taken, unless a web for this port is on disk: "
                         "then the run stops and says so)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a crawl run is killed (default 900)")
    ap.add_argument("--retries", type=int, default=1,
                    help="extra runs of a crawler, at the end, to replace its failed runs (not after a timeout)")
    ap.add_argument("--only", choices=CRAWLERS, action="append", help="run only this crawler (repeatable)")
    ap.add_argument("--quick", action="store_true", help="small web, 1 run each: a smoke test (writes no docs)")
    ap.add_argument("--docs", dest="docs", action="store_true", default=None, help="write docs/benchmarks.md")
    ap.add_argument("--no-docs", dest="docs", action="store_false", help="do not write docs/benchmarks.md")
    ap.add_argument("--scrapy-seen-set", action="store_true",
                    help="the Scrapy spider yields each URL once (own seen set) instead of leaving it all to the dupe filter")
    ap.add_argument("--keep", action="store_true", help="keep skitter's crawl directories")
    ap.add_argument("--skitter-arg", action="append", default=[], help="extra argument for skitter crawl (repeatable)")
    ap.add_argument("--serve", type=float, default=0, metavar="SECONDS",
                    help="only serve the web with nginx for SECONDS (for manual runs), then stop")
    ap.add_argument("--render", metavar="RESULTS_JSON",
                    help="only write the report again from a bench/out/results-*.json (no crawling)")
    ap.add_argument("--no-warm", action="store_true",
                    help="do not read the whole web into the page cache first (webs larger than the RAM can hold)")
    ap.add_argument("--reuse-web", action="store_true",
                    help="reuse a static web written before src/skitter/demo/web.py changed (big webs take minutes to write)")
    ap.add_argument("--wait-generator", type=float, default=1800, help="seconds to wait for src/skitter/demo/web.py")
    args = ap.parse_args(argv)
    global REUSE_WEB
    REUSE_WEB = args.reuse_web
    q = args.quick
    args.pages = args.pages or (1000 if q else 20000)
    args.hosts = args.hosts or (8 if q else 32)
    args.runs = args.runs if args.runs is not None else (1 if q else 3)
    args.bare_runs = args.bare_runs if args.bare_runs is not None else (1 if q else 2)
    args.budget = args.budget or 2 * args.pages
    if args.docs is None:
        args.docs = not q
    if args.hosts < 1 or args.hosts > 250:
        ap.error("--hosts must be within 1..250 (127.0.0.2 ... 127.0.0.251)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render:
        ctx = json.loads(Path(args.render).read_text())
        section = render(ctx)
        if args.docs or args.docs is None:
            write_doc(DOC, section)
            log(f"wrote {DOC.relative_to(ROOT)} from {args.render}")
        else:
            print(section)
        return 0
    t_start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    wait_for_generator(args.wait_generator)
    ips = loopback_ips(args.hosts)
    port = free_port(ips, args.port)
    if port != args.port and (web_dir_for(args, args.port) / "complete.json").exists():
        # a web for the usual port is on disk: writing another for a new port takes minutes and
        # half a GB; the usual cause is an nginx an interrupted run left behind
        log(f"port {args.port} is taken (an nginx from an earlier run? `pkill -f {OUT / 'nginx'}`); "
            f"free it, or pass --port {port} to write a web for another port")
        return 2
    # SIGTERM (kill, a CI timeout) ends the run through the finally below, which stops nginx
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base_urls = [f"http://{ip}:{port}" for ip in ips]
    web = build_web(args, base_urls)
    web_root = web_dir_for(args, port)
    winfo = ensure_static(web, web_root)
    truth = None
    try:
        truth = {canon(u) for u in web.reachable(max_depth=10, obey_robots=True)}   # (the wild web's: a dict)
    except Exception as exc:  # the ground truth is a bonus
        log(f"no ground truth: {type(exc).__name__}: {exc}")
    nginx_exe = ensure_nginx()
    ctx = {"args": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()},
           "machine": machine_info(), "versions": versions(nginx_exe), "port": port, "web": winfo,
           "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "cmdline": ("python bench/run.py " + " ".join(shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:]))).strip()}
    log(f"versions: {ctx['versions']}")
    runs_dir = OUT / "runs"
    if runs_dir.exists():
        shutil.rmtree(runs_dir)
    runs_dir.mkdir(parents=True)
    (runs_dir / "seeds.txt").write_text("\n".join(web.seeds()) + "\n")
    seeds = web.seeds()
    only = set(args.only or CRAWLERS)
    plan: list[str] = []
    for i in range(max(args.runs, args.bare_runs)):
        if i < args.runs:
            plan += [c for c in (*SKITTER_VARIANTS, "scrapy") if c in only]
        if i < args.bare_runs and "bare" in only:
            plan.append("bare")
    runs: list[dict] = []
    nginx = Nginx(nginx_exe, web_root, OUT / "nginx", ips, port)
    try:
        nginx.start()
        robots_hosts = [g for g in range(args.hosts) if (web_root / str(g) / "robots.txt").exists()]
        nginx.check(robots_hosts)
        log(f"nginx {ctx['versions']['nginx']} serving {args.hosts} hosts on port {port} (pid {nginx.proc.pid})")
        if not args.no_warm:
            warm_page_cache(web_root)
        if args.serve:
            log(f"serving for {args.serve:.0f} s (Ctrl-C stops): seeds in {runs_dir / 'seeds.txt'}")
            try:
                time.sleep(args.serve)
            except KeyboardInterrupt:
                pass
            return 0
        retries = {name: args.retries for name in CRAWLERS}
        idx = 0
        while idx < len(plan):
            name = plan[idx]
            idx += 1
            run_dir = runs_dir / f"{idx:02d}-{name}"
            run_dir.mkdir()
            log(f"run {idx}/{len(plan)}: {name} ...")
            try:
                res = RUNNERS[name](args, seeds, run_dir, nginx)
            except Exception as exc:
                res = {"rc": None, "wall_s": 0.0, "cpu_s": 0.0, "cpu_user_s": 0.0, "cpu_sys_s": 0.0,
                       "peak_rss_mb": 0.0, "nginx_cpu_s": 0.0, "error": f"harness: {type(exc).__name__}: {exc}"}
            res.update(index=idx, crawler=name)
            ok = res.get("rc") == 0 and not res.get("timed_out") and res.get("pages")
            res["ok"] = bool(ok)
            res["pages_per_s"] = (res["pages"] / res["wall_s"]) if ok and res["wall_s"] else None
            if res.get("rc") not in (0, None) or res.get("timed_out"):
                tail = (res.get("stderr_tail") or "").strip()
                why = f"exit {res.get('rc')}{' (timed out)' if res.get('timed_out') else ''}"
                if res.get("rc") in (130, -2, -15, 143) and not res.get("timed_out"):
                    why += " (SIGINT/SIGTERM from outside the harness)"
                res.setdefault("error", f"{why}: {tail.splitlines()[-1] if tail else 'no stderr'}")
                log(f"  {name} FAILED: {res['error']}")
                if tail:
                    print("  --- stderr (tail) ---\n  " + "\n  ".join(tail.splitlines()[-25:]), flush=True)
                if not res.get("timed_out") and retries[name] > 0:
                    retries[name] -= 1
                    plan.append(name)
                    log(f"  {name} will be run again at the end ({retries[name]} retries left)")
            elif res.get("error"):
                log(f"  {name}: {res['error']}")
            if ok:
                log(f"  {name}: {res['pages']} pages in {res['wall_s']:.1f} s = {res['pages_per_s']:.1f} pages/s, "
                    f"CPU {res['cpu_s']:.1f} s, peak RSS {res['peak_rss_mb']:.0f} MB, nginx CPU {res['nginx_cpu_s']:.1f} s"
                    + (f", statuses {res.get('statuses')}" if res.get("statuses") else ""))
                if res.get("pages", 0) >= args.budget:
                    log(f"  {name} used the whole budget ({args.budget})")
            runs.append(res)
    finally:
        nginx.stop()
        log("nginx stopped")
    err_log = OUT / "nginx" / "error.log"
    if err_log.exists() and err_log.stat().st_size:
        log(f"nginx error log ({err_log.stat().st_size} bytes), tail:\n" + err_log.read_text(errors="replace")[-1500:])
    ctx["summary"] = summarise(runs)
    ctx["urlcheck"] = url_check(runs, args.budget, truth)
    ctx["runs"] = runs
    ctx["total_s"] = time.perf_counter() - t_start
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results = dict(ctx, runs=[{k: v for k, v in r.items() if k != "urls"} for r in runs])
    (OUT / f"results-{stamp}.json").write_text(json.dumps(results, indent=1, default=str))
    plot(runs, OUT / f"rss-{stamp}.png")
    section = render(ctx)
    if args.docs:
        write_doc(DOC, section)
        log(f"wrote {DOC.relative_to(ROOT)}")
    else:
        (OUT / "benchmarks-section.md").write_text(section)
        log(f"wrote {(OUT / 'benchmarks-section.md').relative_to(ROOT)} (docs/benchmarks.md untouched)")
    s = ctx["summary"]
    for name, x in s.items():
        log(f"{name:8s} median {fmt(x['pages_per_s'])} pages/s, CPU {fmt(x['cpu_s'])} s, "
            f"peak RSS {fmt(x['peak_rss_mb'])} MB ({x['ok_runs']}/{x['runs']} ok)")
    for name in SKITTER_VARIANTS:
        r1 = ratio(s.get(name, {}).get("pages_per_s"), s.get("scrapy", {}).get("pages_per_s"))
        log(f"{name}/Scrapy {fmt(r1, 2)}x")
    chk = ctx["urlcheck"]
    if chk.get("compared"):
        log(f"URL sets: skitter {chk['skitter']}, scrapy {chk['scrapy']}, equal={chk['equal']}, "
            f"jaccard={chk['jaccard']:.4f}, full crawl={chk['full']}")
    failed = [r for r in runs if not r.get("ok")]
    return 1 if failed and len(failed) == len(runs) else 0


if __name__ == "__main__":
    sys.exit(main())
