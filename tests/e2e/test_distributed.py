"""End-to-end: a distributed crawl of the demo web by several real `skitter` processes on one real
redis-server, all on loopback, checked from the web server's own access log: the same URL set as a
local crawl, each URL fetched once in the whole cluster, politeness held across workers, every
process exiting 0 (global termination); and a worker killed with kill -9 mid-crawl loses nothing."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sites import Served

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig

# alone: `make test` runs this module after the others, not beside them (Makefile): its tests time
# several crawl processes, Redis outages and kills against each other, and on two cores shared
# with three other test processes their windows missed
pytestmark = [pytest.mark.slow, pytest.mark.alone]

DELAY = 0.05
COMMON = ["--delay", str(DELAY), "--per-host", "1", "--concurrency", "8", "--adaptive-delay", "0",
          "--analysis-processes", "0", "--index-interval", "-1", "--quiet"]
TIMING = "0.2,1.0,1.5"   # heartbeat, member TTL, lease TTL (s): a dead worker's hosts move within ~2 s
WEB = DemoConfig(hosts=6, pages=240, seed=7, crawl_delay=0)
# For the tests that need each of two workers to crawl: the ring gives all of 6 hosts to one of two
# workers once in 32 crawls (worker names are random), all of 12 once in 2,048.
WIDE = DemoConfig(hosts=12, pages=240, seed=7, crawl_delay=0)

# A worker killed with kill -9 fetches again what it fetched in its last commit interval (1 s) and
# what it had in flight; with the commit's own time on a loaded machine (the suite in 4 processes
# and a second crawl beside it), the URLs first fetched up to 2 s before its last heartbeat
KILL_WINDOW = 2.0


def skitter(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skitter", *args], capture_output=True, text=True, timeout=timeout)


def spawn(*args: str) -> subprocess.Popen:
    env = dict(os.environ, SKITTER_REDIS_TIMING=TIMING)
    return subprocess.Popen([sys.executable, "-m", "skitter", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def start_cluster(seeds: list[str], url: str, crawl_id: str, tmp_path, workers: int,
                  *options: str, workers_first: bool = False) -> list[subprocess.Popen]:
    """``crawl --redis`` (with ``options``) into tmp_path/w0 and ``workers - 1`` workers into w1, w2,
    ...: the processes. ``workers_first``: the workers are started first and the crawl once each
    says it waits for it, so that they join at its start (a worker takes a second or more to start
    and join on a busy machine: a short crawl could end without it)."""
    def crawl() -> subprocess.Popen:
        return spawn("crawl", *seeds, "-o", str(tmp_path / "w0"), "--redis", url, "--crawl-id", crawl_id, *COMMON,
                     *options)

    procs = [] if workers_first else [crawl()]
    procs += [spawn("worker", "--redis", url, "--crawl-id", crawl_id, "-o", str(tmp_path / f"w{i}"), "-q")
              for i in range(1, workers)]
    if workers_first:
        for w in procs:
            assert select.select([w.stderr], [], [], 60)[0], "a worker did not start"
            line = w.stderr.readline()
            assert f"waiting for crawl '{crawl_id}' to be created" in line, line
        procs.insert(0, crawl())
    return procs


def finish(procs: list[subprocess.Popen], timeout: float = 60) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        out.append((p.returncode, err))
    if os.environ.get("SKITTER_DIST_DEBUG"):
        for p, (rc, err) in zip(procs, out):
            Path(f"{os.environ['SKITTER_DIST_DEBUG']}-{p.pid}.log").write_text(f"rc {rc}\n{err}")
    return out


def stderrs(results: list[tuple[int, str]]) -> str:
    """The processes' exit codes and stderr, whole (an assertion message pytest does not shorten)."""
    return "\n".join(f"process {i}: exit {rc}\n{err[-4000:]}" for i, (rc, err) in enumerate(results))


def fetched_urls(directory: Path) -> list[str]:
    out = skitter("export", str(directory), "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    return [r["url"] for r in map(json.loads, out.stdout.splitlines()) if r["fetch_order"] is not None]


def portless(urls, web) -> set[str]:
    """The non-trap URLs without their port (each web server of a test listens on a port of its own)."""
    return {re.sub(r":\d+/", "/", u, count=1) for u in urls if web.kind(u) != "trap"}


def requests(log: Path) -> list[dict]:
    """The access log's entries (a last line the server is still writing is left out)."""
    return [json.loads(line) for line in log.read_text().splitlines(keepends=True) if line.endswith("\n")]


def check_politeness(entries: list[dict]) -> None:
    """Per host: one connection at a time, starts at least DELAY apart (at the server: 99% within
    5 ms of it, none below half of it), robots.txt requests included."""
    by_host = defaultdict(list)
    for e in entries:
        by_host[e["host"]].append(e)
    for host, es in by_host.items():
        es.sort(key=lambda e: e["t0"])
        for a, b in zip(es, es[1:]):
            assert b["t0"] >= a["t1"], f"two connections at once to {host}: {a['path']} and {b['path']}"
        gaps = sorted(b["t0"] - a["t0"] for a, b in zip(es, es[1:]))
        assert gaps[len(gaps) // 100] >= DELAY - 0.005, f"requests to {host} closer than {DELAY} s"
        assert gaps[0] >= DELAY / 2, f"requests to {host} closer than {DELAY} s"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    import redis_servers

    reason = redis_servers.missing_reason()
    if reason:
        pytest.skip(reason)
    server = redis_servers.RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.url
    finally:
        server.kill()


def crawled_locally(config: DemoConfig, tmp: Path):
    """What a local crawl of the web ``config`` makes fetches (the reference): its web, its URLs."""
    with DemoServer(config, latency_ms=2) as srv:
        res = skitter("crawl", *srv.web.seeds(), "-o", str(tmp / "crawl"), *COMMON)
        assert res.returncode == 0, res.stderr
        web = srv.web
    urls = fetched_urls(tmp / "crawl")
    return web, portless(urls, web)


@pytest.fixture(scope="module")
def local_urls(tmp_path_factory):
    """What a local crawl of WEB fetches."""
    return crawled_locally(WEB, tmp_path_factory.mktemp("local"))


@pytest.fixture(scope="module")
def wide_urls(tmp_path_factory):
    """What a local crawl of WIDE fetches."""
    return crawled_locally(WIDE, tmp_path_factory.mktemp("wide"))


def test_three_workers_crawl_what_a_local_crawl_does(redis_url, local_urls, tmp_path):
    _, expected = local_urls
    log = tmp_path / "access.jsonl"
    with DemoServer(WEB, latency_ms=2, access_log=log) as srv:
        web = srv.web
        procs = start_cluster(srv.web.seeds(), redis_url, "three", tmp_path, 3)
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0, 0], stderrs(results)
    per_worker = [fetched_urls(tmp_path / f"w{i}") for i in range(3)]
    assert sum(1 for urls in per_worker if urls) >= 2, "the work was not shared"
    everything = [u for urls in per_worker for u in urls]
    assert len(everything) == len(set(everything)), "a URL fetched by two workers"
    assert portless(everything, web) == expected
    entries = requests(log)
    counts = Counter((e["host"], e["path"]) for e in entries if e["path"] != "/robots.txt")
    assert [k for k, n in counts.items() if n > 1] == [], "a URL requested twice"
    check_politeness(entries)
    stats = json.loads(skitter("stats", "--redis", redis_url, "--crawl-id", "three", "--json").stdout)
    assert stats["finished"] and stats["pending"] == 0
    assert sum(w["fetched"] for w in stats["workers"]) == len(entries)   # requests, robots.txt included


def test_a_seed_not_fetched_is_said_by_the_worker_it_fell_to(redis_url, tmp_path):
    """A seed whose host does not answer is named in one warning line, on the stderr of the
    process whose hosts it fell among (the crawl's or a worker's), as a local crawl names it."""
    dead = "http://127.0.0.1:9/"
    with DemoServer(DemoConfig(hosts=2, pages=60, seed=3, crawl_delay=0), latency_ms=2) as srv:
        procs = start_cluster([*srv.web.seeds(), dead], redis_url, "deadseed", tmp_path, 2)
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], stderrs(results)
    said = [err for _, err in results if f"WARNING: seed {dead} was not fetched: " in err]
    assert len(said) == 1, stderrs(results)
    assert not any("WARNING: seed" in err and dead not in err for _, err in results), stderrs(results)


def test_a_worker_directory_of_another_crawl_is_refused(redis_url, tmp_path):
    """A hold-out test started a worker of crawl x1 in a directory of crawl pol: pol's 724 pages,
    seeds and settings stayed, and a merge of x1's directories counted them as x1's."""
    from sites import one_error_line

    from skitter.cli_distributed import record_cluster
    from skitter.store.db import CrawlDB

    (tmp_path / "w").mkdir()
    db = CrawlDB(tmp_path / "w")
    record_cluster(db, redis_url, "pol")
    db.close()
    line = one_error_line(skitter("worker", "--redis", redis_url, "--crawl-id", "x1", "-o", str(tmp_path / "w")))
    assert "is a worker directory of crawl 'pol'" in line and "directory of its own" in line
    db = CrawlDB(tmp_path / "w", readonly=True)
    assert db.get_meta("cluster")["crawl_id"] == "pol"   # left as it was
    db.conn.close()


def last_heartbeat(url: str, crawl_id: str, pid: int) -> float:
    """When the worker with this pid last sent its heartbeat (epoch seconds). Its membership task and
    its store's committer run on the same event loop, so a worker the machine's load starved of CPU
    before its kill -9 stopped committing about when it stopped beating."""
    import redis

    from skitter.distributed.frontier import CrawlKeys

    client = redis.Redis.from_url(url)
    try:
        beats = client.zrange(CrawlKeys(crawl_id).members, 0, -1, withscores=True)
    finally:
        client.close()
    return next(beat for name, beat in beats if f"-{pid}-" in name.decode())


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.read().decode()


def test_a_worker_killed_mid_crawl_loses_nothing(redis_url, local_urls, tmp_path, request):
    _, expected = local_urls
    log = tmp_path / "access.jsonl"
    ui = Served(None, "--redis", redis_url, "--crawl-id", "kill")   # the web UI of the cluster alone
    request.addfinalizer(ui.stop)
    with DemoServer(WEB, latency_ms=2, access_log=log) as srv:
        web = srv.web
        procs = start_cluster(srv.web.seeds(), redis_url, "kill", tmp_path, 3)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log.exists() or len(requests(log)) < 80):
            time.sleep(0.1)
        # the worker holding the most hosts (its name holds its pid)
        cluster = json.loads(skitter("stats", "--redis", redis_url, "--crawl-id", "kill", "--json").stdout)
        # the crawl page shows the same cluster: the same workers, alive, holding hosts
        page = json.loads(get(f"{ui.base}/crawl.json"))
        assert page["crawl"] is None and page["cluster_error"] is None
        shown = {w["worker"]: w for w in page["cluster"]["workers"]}
        assert set(shown) == {w["worker"] for w in cluster["workers"]} and len(shown) == 3
        assert all(w["alive"] for w in shown.values()) and sum(w["hosts"] for w in shown.values()) > 0
        assert {"queued", "in_flight", "pages_per_s", "fetched"} <= set(next(iter(shown.values())))
        html = get(f"{ui.base}/crawl")
        assert all(name in html for name in shown) and 'id="cluster-workers"' in html
        busiest = max((w for w in cluster["workers"] if w["alive"]), key=lambda w: w["hosts"])
        assert busiest["hosts"] > 0
        pid = int(busiest["worker"].split("-")[-2])
        victim_index = [p.pid for p in procs].index(pid)
        victim = procs.pop(victim_index)
        os.kill(victim.pid, signal.SIGKILL)
        killed_at = time.time()
        victim.wait(timeout=10)
        quiet_since = min(killed_at, last_heartbeat(redis_url, "kill", victim.pid))
        if os.environ.get("SKITTER_DIST_DEBUG"):
            Path(f"{os.environ['SKITTER_DIST_DEBUG']}-{victim.pid}.log").write_text(victim.stderr.read())
        time.sleep(1.0)
        # restarted on its own directory: it resumes there, as a new member of the ring
        procs.append(spawn("worker", "--redis", redis_url, "--crawl-id", "kill", "-o",
                           str(tmp_path / f"w{victim_index}"), "-q"))
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0, 0], stderrs(results)
    assert all("internal error" not in err for _, err in results)
    state = json.loads(skitter("stats", str(tmp_path / f"w{victim_index}"), "--json").stdout)["state"]
    assert state == "finished"
    everything = [u for i in range(3) for u in fetched_urls(tmp_path / f"w{i}")]
    print(f"killed {busiest['worker']} holding {busiest['hosts']} hosts after {len(everything)} fetches")
    assert portless(everything, web) >= expected, "pages lost with the killed worker"
    entries = requests(log)
    counts = Counter((e["host"], e["path"]) for e in entries if e["path"] != "/robots.txt")
    repeated = {k for k, n in counts.items() if n > 1}
    assert all(counts[k] == 2 for k in repeated)
    first = {}
    for e in sorted(entries, key=lambda e: e["t0"]):
        first.setdefault((e["host"], e["path"]), e["t0"])
    # Only what the killed worker had in flight, or fetched in the last commit interval (1 s: its
    # store had not committed it, so it was not done in Redis either), is fetched again. A worker
    # the machine's load starved of CPU before the kill stopped committing at its last heartbeat.
    late = {k: round(quiet_since - first[k], 3) for k in repeated if first[k] < quiet_since - KILL_WINDOW}
    print(f"{len(repeated)} URLs fetched twice")
    assert not late, f"URLs done well before the kill fetched again: {late}"
    # merged: each URL once, nothing missing, the fetch order renumbered, search works on it
    merged = tmp_path / "merged"
    res = skitter("merge", *(str(tmp_path / f"w{i}") for i in range(3)), "-o", str(merged))
    assert res.returncode == 0, res.stderr
    assert json.loads(skitter("stats", str(merged), "--json").stdout)["state"] == "finished"
    out = skitter("export", str(merged), "--format", "jsonl")
    records = [json.loads(line) for line in out.stdout.splitlines()]
    urls = [r["url"] for r in records]
    assert len(urls) == len(set(urls))
    assert portless([r["url"] for r in records if r["fetch_order"] is not None], web) >= expected
    orders = sorted(r["fetch_order"] for r in records if r["fetch_order"] is not None)
    assert orders == list(range(1, len(orders) + 1))
    assert sum(1 for r in records if r["outlinks"]) > 0
    # export of the workers' directories: the merged directory's records, without merging
    workers = [str(tmp_path / f"w{i}") for i in range(3)]
    several = skitter("export", *workers, "--format", "jsonl")
    assert several.returncode == 0, several.stderr
    assert several.stdout == out.stdout
    latest: dict[str, str] = {}   # the URLs fetched twice: the later fetch wins
    for w in workers:
        for r in map(json.loads, skitter("export", w, "--format", "jsonl").stdout.splitlines()):
            if r["fetch_order"] is not None:
                latest[r["url"]] = max(latest.get(r["url"], ""), r["fetched_at"])
    assert {r["url"]: r["fetched_at"] for r in records if r["fetch_order"] is not None} == latest
    assert skitter("export", *workers, "--format", "csv").stdout == skitter("export", str(merged), "--format",
                                                                              "csv").stdout
    warcs = [skitter("export", *dirs, "--format", "warc", "-o", str(tmp_path / f"{name}.warc.gz")).stderr
             for name, dirs in (("several", workers), ("merged", [str(merged)]))]
    assert warcs[0].split()[0] == warcs[1].split()[0] != "0", warcs
    res = skitter("search", str(merged), "gardening", "--json")
    assert res.returncode == 0 and res.stdout.strip(), res.stderr
    check_politeness(entries)


def test_a_merge_is_stopped_when_a_directory_it_merges_is(tmp_path):
    """``merge`` says what its directories say: finished when they are, stopped when one of them
    is (a crawl --max-pages or Ctrl-C ended: pages are missing, and a later run may go on)."""
    with DemoServer(DemoConfig(hosts=2, pages=60, seed=5, crawl_delay=0)) as srv:
        for name, more in (("whole", ()), ("part", ("--max-pages", "5"))):
            res = skitter("crawl", *srv.web.seeds(), "-o", str(tmp_path / name), *COMMON, "--delay", "0", *more)
            assert res.returncode == 0, res.stderr

    def state(directory: Path) -> str:
        return json.loads(skitter("stats", str(directory), "--json").stdout)["state"]

    assert (state(tmp_path / "whole"), state(tmp_path / "part")) == ("finished", "stopped")
    for sources, expected in ((["whole", "whole"], "finished"), (["whole", "part"], "stopped"),
                              (["part", "whole"], "stopped")):
        out = tmp_path / "-".join(["merged", *sources])
        res = skitter("merge", *(str(tmp_path / s) for s in sources), "-o", str(out))
        assert res.returncode == 0, res.stderr
        assert state(out) == expected, sources


@pytest.fixture
def tls_redis(redis_servers, tmp_path, monkeypatch):
    """A redis-server on TLS only (rediss://, a throwaway CA the processes trust through
    SSL_CERT_FILE) that wants a password."""
    pytest.importorskip("trustme")
    from redis_servers import TLSFiles

    files = TLSFiles.throwaway(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(files.ca))   # the skitter processes inherit it
    return redis_servers(tls=files, password="s3cret-" + os.urandom(4).hex())


def test_max_pages_is_the_clusters_budget(tls_redis, tmp_path):
    """--max-pages holds for the whole cluster: three workers together fetch at most that many
    (a fetch is reserved in Redis before it starts), and hardly fewer. Over TLS, with a password."""
    budget = 60
    redis_url = tls_redis.url
    assert redis_url.startswith("rediss://:s3cret-")
    log = tmp_path / "access.jsonl"
    with DemoServer(WEB, latency_ms=2, access_log=log) as srv:
        # the workers first, waiting for the crawl, and a longer delay (the last --delay wins): 60
        # pages at 0.05 s a host take the crawl's creator about a second, less than a worker takes
        # to start and join on a busy machine
        procs = start_cluster(srv.web.seeds(), redis_url, "budget", tmp_path, 3, "--max-pages", str(budget),
                              "--delay", "0.25", workers_first=True)
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0, 0], stderrs(results)
    per_worker = [fetched_urls(tmp_path / f"w{i}") for i in range(3)]
    total = sum(map(len, per_worker))
    print(f"fetched {[len(u) for u in per_worker]} = {total} of a budget of {budget}")
    assert sum(1 for urls in per_worker if urls) >= 2, "the work was not shared"
    assert budget - 3 <= total <= budget
    pages = [e for e in requests(log) if e["path"] != "/robots.txt"]
    assert len(pages) == total, "a request the directories do not show"
    stats = json.loads(skitter("stats", "--redis", redis_url, "--crawl-id", "budget", "--json").stdout)
    assert stats["max_pages"] == budget and stats["budget_spent"] and not stats["finished"]
    assert stats["max_pages_used"] == total
    for i in range(3):
        assert json.loads(skitter("stats", str(tmp_path / f"w{i}"), "--json").stdout)["state"] == "stopped"
    # merged, the crawl is stopped too (not finished: --max-pages ended it)
    res = skitter("merge", *(str(tmp_path / f"w{i}") for i in range(3)), "-o", str(tmp_path / "merged"))
    assert res.returncode == 0, res.stderr
    assert json.loads(skitter("stats", str(tmp_path / "merged"), "--json").stdout)["state"] == "stopped"
    # the web UI on a worker's directory finds its cluster (recorded in the directory, without the
    # password: it says where to give it) and, given the password, shows it
    ui = Served(tmp_path / "w2")
    try:
        page = json.loads(get(f"{ui.base}/crawl.json"))
    finally:
        ui.stop()
    assert "wants a password" in page["cluster_error"] and "--redis URL" in page["cluster_error"]
    assert "s3cret" not in (tmp_path / "w2" / "crawl.db").read_bytes().decode("latin-1")
    ui = Served(tmp_path / "w2", "--redis", redis_url, "--crawl-id", "budget")
    try:
        page = json.loads(get(f"{ui.base}/crawl.json"))
    finally:
        ui.stop()
    assert page["cluster_error"] is None and page["crawl"]["state"] == "stopped"
    assert page["cluster"]["max_pages_used"] == total and page["cluster"]["budget_spent"]
    assert sorted(w["fetched"] for w in page["cluster"]["workers"]) == sorted(
        w["fetched"] for w in stats["workers"])
    assert not any(w["alive"] for w in page["cluster"]["workers"])


@pytest.fixture
def own_cluster(tmp_path):
    """A three-node Redis Cluster of this test alone (the session's shared one would outlive this
    module, and tests that count this process's children, such as test_procpool's, would see it)."""
    import redis_servers

    reason = redis_servers.missing_reason()
    if reason:
        pytest.skip(reason)
    with redis_servers.RedisClusterNodes(tmp_path / "cluster") as cluster:
        yield cluster


def test_two_workers_on_a_redis_cluster(own_cluster, wide_urls, tmp_path):
    """The same crawl on the three-node Redis Cluster: every key of a host in one slot (hash tags),
    the seen set spread over the nodes; by in-link counts (backlinks), which are the cluster's: a
    URL linked from pages of both workers has the sum of their links."""
    _, expected = wide_urls
    redis_cluster = own_cluster
    with DemoServer(WIDE, latency_ms=2) as srv:
        web = srv.web
        procs = start_cluster(srv.web.seeds(), redis_cluster.url, "cluster", tmp_path, 2, "--strategy", "backlinks",
                              workers_first=True)
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], stderrs(results)
    everything = [u for i in range(2) for u in fetched_urls(tmp_path / f"w{i}")]
    assert len(everything) == len(set(everything))
    assert portless(everything, web) == expected
    keys = []
    for node in redis_cluster.nodes:
        with node.admin() as client:
            keys += client.keys("sk:*")
    assert len({k.split(b"}")[0] for k in keys if b":seen:" in k}) > 50   # the seen set's tag groups
    # each worker's in-link counts, rebuilt from its directory as a resumed crawl does; Redis has their sum
    from redis.cluster import RedisCluster

    from skitter.config import CrawlConfig
    from skitter.store.crawlstore import CrawlStore
    from skitter.strategies.importance import BacklinkScorer
    from skitter.urls import fingerprint, host_key

    counts = []
    for i in range(2):
        scorer = BacklinkScorer()
        store = CrawlStore.open(tmp_path / f"w{i}", CrawlConfig().to_dict(), software="test")
        try:
            assert scorer.restore([], store.replay_pages()) > 0
        finally:
            store.close()
        counts.append(scorer.inlinks)
    both = {u for u in counts[0] if u in counts[1]}
    assert len(both) > 10, "no URL linked from pages of both workers"
    port = redis_cluster.nodes[0].port
    with RedisCluster(host="127.0.0.1", port=port) as client:
        shared = {u: float(client.hget(f"sk:{{cluster/{host_key(u)}}}:imp", str(fingerprint(u))) or 0)
                  for u in counts[0].keys() | counts[1].keys()}
    assert shared == {u: counts[0].get(u, 0.0) + counts[1].get(u, 0.0) for u in shared}


def test_max_pages_on_a_redis_cluster(own_cluster, tmp_path):
    """--max-pages on a Redis Cluster: the budget's reservation script runs there too (its key has
    the crawl's hash tag), and two workers together fetch the budget, no more."""
    budget = 50
    with DemoServer(WEB, latency_ms=2) as srv:
        procs = start_cluster(srv.web.seeds(), own_cluster.url, "clusterbudget", tmp_path, 2, "--max-pages", str(budget))
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], stderrs(results)
    total = sum(len(fetched_urls(tmp_path / f"w{i}")) for i in range(2))
    assert budget - 3 <= total <= budget
    stats = json.loads(skitter("stats", "--redis", own_cluster.url, "--crawl-id", "clusterbudget", "--json").stdout)
    assert stats["budget_spent"] and stats["max_pages_used"] == total


def test_unreachable_redis_is_one_line(tmp_path):
    res = skitter("worker", "--redis", "redis://127.0.0.1:1/0", "-o", str(tmp_path / "w"), timeout=30)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "cannot connect to Redis at redis://127.0.0.1:1/0" in res.stderr


def test_a_worker_waiting_for_its_crawl_says_in_one_line_that_redis_went_away(redis_servers, tmp_path):
    """``worker`` on a crawl not created yet waits for it; Redis going away meanwhile is the
    ordinary one line (exit 1), not an internal error."""
    server = redis_servers()
    import redis as redis_py

    redis_py.Redis(port=server.port).set("sk:{other}:config", "{}")   # another crawl: named, so a typo shows
    proc = spawn("worker", "--redis", server.url, "--crawl-id", "later", "-o", str(tmp_path / "w"), "-q")
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "the worker never said it was waiting"
        waiting = proc.stderr.readline()
        assert waiting == ("skitter: waiting for crawl 'later' to be created (skitter crawl --redis);"
                           " this Redis holds 'other'\n")
        server.kill()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"skitter: error: lost the connection to Redis at {server.url}: "), err


def test_redis_restarted_mid_crawl(redis_servers, local_urls, tmp_path):
    """Redis (with its append-only file) restarted mid-crawl: the workers wait for it (redis-py's
    own retries, then ours), say so ("Redis unreachable (...); waiting for it", then "Redis is
    back after N s") and the crawl completes with every page."""
    _, expected = local_urls
    server = redis_servers(appendonly=True)
    log = tmp_path / "access.jsonl"
    with DemoServer(WEB, latency_ms=2, access_log=log) as srv:
        web = srv.web
        procs = start_cluster(srv.web.seeds(), server.url, "restart", tmp_path, 2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log.exists() or len(requests(log)) < 80):
            time.sleep(0.1)
        assert len(requests(log)) < 200, "the crawl ended before the restart"
        server.stop()
        time.sleep(2.0)
        server.start()
        results = finish(procs)
    assert [rc for rc, _ in results] == [0, 0], stderrs(results)
    everything = [u for i in range(2) for u in fetched_urls(tmp_path / f"w{i}")]
    assert portless(everything, web) >= expected
    # each worker said it was waiting for Redis, once a stall (not a line per failed call), and then
    # that it was back (and went on: every page above)
    for _, err in results:
        said = [("away" if line.startswith("skitter: Redis unreachable (")
                 and line.endswith(("; waiting for it", "; retrying")) else "back")
                for line in err.splitlines() if "Redis" in line and "waiting for crawl" not in line]
        assert said and said[0] == "away" and said[-1] == "back", err[-2000:]
        assert all(a != b for a, b in zip(said, said[1:])) and said.count("away") <= 2, err[-2000:]
        assert all(re.fullmatch(r"skitter: Redis is back after \d+ s", line) for line in err.splitlines()
                   if "Redis" in line and "unreachable" not in line and "waiting for crawl" not in line), err[-2000:]


@pytest.mark.parametrize("read_timeout", [None, "1"], ids=["calls-wait", "calls-time-out"])
def test_a_redis_outage_longer_than_the_leases_fetches_nothing_twice(redis_servers, wide_urls, tmp_path,
                                                                     read_timeout, monkeypatch):
    """Redis hung (SIGSTOP) mid-crawl for twice a lease's time and three times a member's: the
    leases lapse and no heartbeat gets through. When Redis answers again no worker has taken
    another's hosts (each one's own heartbeats stopped too: the others count as alive for a
    member's time) and no one acquired a host, so each worker takes its lapsed leases back and
    writes the URLs it fetched meanwhile: every page, and none requested twice (without the
    take-back those URLs were fenced and fetched again by the hosts' next holders). The calls
    under way wait for Redis, or (a read timeout of 1 s) time out and are tried again while
    Redis still holds them, to run when it wakes."""
    if read_timeout:
        monkeypatch.setenv("SKITTER_REDIS_COMMAND_TIMEOUT", read_timeout)
    _, expected = wide_urls
    server = redis_servers()
    log = tmp_path / "access.jsonl"
    with DemoServer(WIDE, latency_ms=2, access_log=log) as srv:
        web = srv.web
        # (a delay of 0.4 s, 20 pages a host: the crawl takes 8 s or more, so that it is still under
        # way at the hang)
        procs = start_cluster(srv.web.seeds(), server.url, "outage", tmp_path, 2, "--delay", "0.4",
                              workers_first=True)
        # both workers members and crawling, the hosts parted between them (a lease request sent just
        # before the hang and run just after it: tests/unit/test_redis_frontier.py)
        deadline = time.monotonic() + 60
        with server.admin() as admin:
            while time.monotonic() < deadline:
                stats = [admin.hgetall(k) for k in admin.keys("sk:{outage}:stats:*")]
                if len(stats) == 2 and all(int(st.get(b"fetched", 0)) >= 5 for st in stats):
                    break
                time.sleep(0.05)
        time.sleep(0.5)
        running = [p.poll() is None for p in procs]
        server.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(3.0)                 # TIMING: member TTL 1 s, lease TTL 1.5 s
        finally:
            server.proc.send_signal(signal.SIGCONT)
        during = len(requests(log))
        results = finish(procs)
    assert running == [True, True] and during < len(expected) * 0.8, "the crawl ended before the outage"
    assert [rc for rc, _ in results] == [0, 0], stderrs(results)
    everything = [u for i in range(2) for u in fetched_urls(tmp_path / f"w{i}")]
    assert portless(everything, web) >= expected
    answers: dict[tuple[str, str], list[int]] = defaultdict(list)
    for e in sorted(requests(log), key=lambda e: e["t0"]):
        answers[(e["host"], e["path"])].append(e.get("status", 200))
    twice = {k: v for k, v in answers.items()
             if len(v) > 1 and not k[1].endswith("/robots.txt") and v[0] not in (429, 500, 502, 503, 504)}
    assert not twice, twice


def test_the_crawl_vanishing_from_redis_is_one_line_and_exit_1(redis_servers, tmp_path):
    """Redis flushed mid-crawl (FLUSHALL; or restarted without persistence): the crawl's seen set,
    queues and count of pending URLs are gone, so it cannot go on correctly. Each process says so
    in one line and exits 1, instead of fetching pages again and ending early with exit status 0."""
    server = redis_servers()
    log = tmp_path / "access.jsonl"
    with DemoServer(WEB, latency_ms=2, access_log=log) as srv:
        procs = start_cluster(srv.web.seeds(), server.url, "vanish", tmp_path, 2, "--delay", "0.2")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log.exists() or len(requests(log)) < 30):
            time.sleep(0.05)
        with server.admin() as admin:
            admin.flushall()
        flushed = len(requests(log))
        results = finish(procs, timeout=30)
    assert flushed < 150, "the crawl ended before the flush"
    line = ("skitter: error: crawl 'vanish' vanished from Redis mid-crawl (Redis restarted without persistence, "
            "or flushed): its URL-seen set and queues are lost; this worker stops, its directory keeps the pages "
            "it fetched")
    for rc, err in results:   # (a worker started before the crawl says it waited for it)
        said = [x for x in err.splitlines() if not x.startswith("skitter: waiting for crawl 'vanish' to be created")]
        assert rc == 1 and said == [line], err[-2000:]


def test_serve_dir_says_quickly_that_its_redis_is_unreachable(redis_servers, tmp_path):
    """`serve DIR` on a worker's directory whose Redis is down: the crawl page says so in one line
    ("Redis unreachable: ...") within about a second (the connection's timeout, 1 s, where the
    commands' is 5 s), then at once for a few seconds (the verdict kept), and shows the cluster
    again once Redis is back. Down as a hung server (SIGSTOP: connections accepted, no answer, as a
    machine that drops packets is to a connect) and as a stopped one (connections refused)."""
    from skitter.cli_distributed import record_cluster
    from skitter.distributed.frontier import CrawlKeys
    from skitter.store.db import CrawlDB

    server = redis_servers(appendonly=True)   # (the crawl outlives a restart)
    with server.admin() as admin:   # a crawl in that Redis, as `crawl --redis` leaves it
        admin.set(CrawlKeys("down").config, json.dumps({"seeds": ["http://a.test/"]}))
    (tmp_path / "w").mkdir()
    db = CrawlDB(tmp_path / "w")
    try:
        record_cluster(db, server.url, "down")
    finally:
        db.close()

    def crawl_json() -> tuple[dict, float]:
        t = time.monotonic()
        page = json.loads(get(f"{ui.base}/crawl.json"))
        return page, time.monotonic() - t

    def until(check, what: str) -> dict:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            page, took = crawl_json()
            assert took < 3.0, f"the crawl page took {took:.1f} s"
            if check(page):
                return page
            time.sleep(0.5)
        raise AssertionError(f"the crawl page never showed {what}: {page}")

    ui = Served(tmp_path / "w")
    try:
        page, _ = crawl_json()
        assert page["cluster"]["seeds"] == ["http://a.test/"] and page["cluster_error"] is None
        server.proc.send_signal(signal.SIGSTOP)
        try:
            page, took = crawl_json()
            assert took < 3.0, f"a hung Redis held the crawl page {took:.1f} s"
            error = page["cluster_error"]
            assert error.startswith("Redis unreachable: ") and "did not answer within 1 s" in error
            assert "\n" not in error and page["cluster"] is None
            t = time.monotonic()
            html = get(f"{ui.base}/crawl")
            assert time.monotonic() - t < 0.5, "the verdict was not kept"
            line, = re.findall(r'<p class="error" id="cluster-error">([^<]*)</p>', html)
            assert line.startswith("Redis unreachable: ")
        finally:
            server.proc.send_signal(signal.SIGCONT)
        until(lambda p: p["cluster"] is not None, "the cluster once Redis answered again")
        server.stop()
        page = until(lambda p: p["cluster_error"] is not None, "that Redis is stopped")
        assert page["cluster_error"].startswith("Redis unreachable: cannot connect to Redis at ")
        server.start()   # the same port
        until(lambda p: p["cluster"] is not None, "the cluster once Redis was restarted")
    finally:
        ui.stop()


def test_a_worker_killed_on_the_wild_web_loses_nothing(redis_url, tmp_path):
    """A web of another shape (skitter.demo.wild: Zipf host sizes, Crawl-delay, transient 503/429,
    a robots.txt that redirects, traps): three workers, one killed with kill -9 four seconds in and
    restarted, fetch what a local crawl fetches. A URL is requested again only as a retry (its
    first answer a 429 or 5xx), when it was in flight at the kill, or as robots.txt (read again by
    a host's next holder, here through its redirect). "At the kill" is from the killed worker's
last heartbeat on: a worker starved of CPU by the machine's load stops committing before its kill."""
    from skitter.demo.wild import WildConfig
    from skitter.demo.wild_server import WildServer, read_access_log

    wild = WildConfig(seed=3, hosts=10, pages=600, page_kb=(1, 16), host_zipf=0.8, crawl_delay=(0.04, 0.06),
                      transient_hosts=2, transient_share=0.05, latency=(0.005, 0.02), facets=(2, 2, 2))
    # --retries 1: the robots-500 host's robots.txt is tried twice, 4 s apart, not three times over
    # 20 s (docs/settings.md), which held each of the two crawls open for 20 s
    crawl = ["--delay", "0", "--per-host", "2", "--concurrency", "16", "--quiet", "--index-interval", "-1",
             "--retries", "1"]

    def unported(urls):
        return {re.sub(r":\d+/", "/", u, count=1) for u in urls}

    with WildServer(wild) as srv:
        res = skitter("crawl", *srv.web.seeds(), "-o", str(tmp_path / "local"), *crawl, timeout=180)
        assert res.returncode == 0, res.stderr
    expected = unported(fetched_urls(tmp_path / "local"))
    log = tmp_path / "access.jsonl"
    with WildServer(wild, access_log=log) as srv:
        seeds = list(srv.web.seeds())
        procs = [spawn("crawl", *seeds, "-o", str(tmp_path / "w0"), "--redis", redis_url, "--crawl-id", "wild", *crawl)]
        procs += [spawn("worker", "--redis", redis_url, "--crawl-id", "wild", "-o", str(tmp_path / f"w{i}"), "-q")
                  for i in (1, 2)]
        time.sleep(4.0)
        os.kill(procs[1].pid, signal.SIGKILL)
        killed_at = time.time()
        procs[1].wait(timeout=10)
        quiet_since = min(killed_at, last_heartbeat(redis_url, "wild", procs[1].pid))
        time.sleep(1.0)
        procs[1] = spawn("worker", "--redis", redis_url, "--crawl-id", "wild", "-o", str(tmp_path / "w1"), "-q")
        results = finish(procs, timeout=180)
    assert [rc for rc, _ in results] == [0, 0, 0], stderrs(results)
    got = [u for i in range(3) for u in fetched_urls(tmp_path / f"w{i}")]
    assert len(expected) > 800 and unported(got) == expected
    answers: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for e in sorted(read_access_log(log), key=lambda e: e["t0"]):
        answers[(e["host"], e["path"])].append((e["t0"], e["status"]))
    again = {k: v for k, v in answers.items() if len(v) > 1 and not k[1].endswith("/robots.txt")}
    unexplained = {k: v for k, v in again.items()
                   if v[0][1] not in (429, 500, 502, 503, 504) and not quiet_since - KILL_WINDOW <= v[0][0] <= killed_at}
    assert not unexplained, unexplained


def test_stats_on_a_key_of_another_type_is_one_line(redis_url):
    """A Redis answering with an error of its own (here WRONGTYPE: the crawl's config key holds a
    list) is one error line from ``stats --redis``, not a traceback."""
    import redis

    from skitter.distributed.frontier import CrawlKeys

    client = redis.Redis.from_url(redis_url)
    try:
        client.rpush(CrawlKeys("wrongtype").config, "x")
    finally:
        client.close()
    res = skitter("stats", "--redis", redis_url, "--crawl-id", "wrongtype")
    assert res.returncode != 0 and "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "WRONGTYPE" in lines[0], res.stderr
    ui = Served(None, "--redis", redis_url, "--crawl-id", "wrongtype")   # the crawl page says it too
    try:
        page = json.loads(get(f"{ui.base}/crawl.json"))
    finally:
        ui.stop()
    assert page["cluster"] is None and "WRONGTYPE" in page["cluster_error"]


def test_a_crawl_of_another_redis_protocol_is_one_line(redis_url, tmp_path):
    """A crawl whose entries in Redis another skitter version made (its config without this
    version's ``protocol``) is not joined: ``worker`` and ``crawl --redis`` say so in one line and
    exit 2, and leave it as it was; a config no skitter wrote is one line too. A crawl this version
    makes carries its protocol."""
    import redis

    from skitter.distributed.frontier import PROTOCOL, CrawlKeys

    old = {"seeds": ["http://127.0.0.1:9/"], "max_pages": 10}   # as an earlier skitter stored it
    client = redis.Redis.from_url(redis_url)
    try:
        client.set(CrawlKeys("olden").config, json.dumps(old))
        for args in (("worker", "-o", str(tmp_path / "w")),
                     ("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"))):
            res = skitter(*args, "--redis", redis_url, "--crawl-id", "olden", timeout=60)
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            assert res.returncode == 2 and len(lines) == 1, res.stderr
            assert "protocol 1" in lines[0] and f"speaks {PROTOCOL}" in lines[0], lines[0]
        assert json.loads(client.get(CrawlKeys("olden").config)) == old
        client.set(CrawlKeys("garbled").config, "not json")   # no skitter wrote it
        for args in (("worker", "-o", str(tmp_path / "g")), ("stats",)):
            res = skitter(*args, "--redis", redis_url, "--crawl-id", "garbled", timeout=60)
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            assert res.returncode == 1 and len(lines) == 1 and "holds no skitter crawl's settings" in lines[0], res.stderr
        with DemoServer(DemoConfig(hosts=1, pages=30, seed=2, crawl_delay=0)) as srv:
            res = skitter("crawl", *srv.web.seeds(), "-o", str(tmp_path / "new"), "--redis", redis_url,
                          "--crawl-id", "newer", *COMMON)
        assert res.returncode == 0, res.stderr
        assert json.loads(client.get(CrawlKeys("newer").config))["protocol"] == PROTOCOL
    finally:
        client.close()
