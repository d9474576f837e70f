"""The distributed commands: ``crawl --redis``, ``worker``, ``stats --redis`` (docs/distributed.md).

``crawl SEED... --redis URL`` creates the shared crawl (its settings stored in Redis, so every
worker crawls by the same rules) and works on it as one worker; ``worker --redis URL -o DIR``
joins it with a crawl directory of its own. Each process exits 0 once the whole crawl is done.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from .cli import nonempty_path
from .config import CrawlConfig
from .errors import RedisError, UsageError

DEFAULT_CRAWL_ID = "crawl"


def config_from_dict(d: dict[str, Any]) -> CrawlConfig:
    d = dict(d)
    d.pop("protocol", None)
    d["seeds"] = tuple(d.get("seeds", ()))
    d["resolve"] = tuple(tuple(p) for p in d.get("resolve", ()))
    return CrawlConfig(**d)


def _check_protocol(raw: dict[str, Any], crawl_id: str) -> None:
    """A crawl made by a skitter whose Redis layout is another (``PROTOCOL``) is one error line."""
    from .distributed.frontier import PROTOCOL

    got = raw.get("protocol", 1)
    if got != PROTOCOL:
        age = "an older" if isinstance(got, int) and got < PROTOCOL else "another"
        raise UsageError(f"crawl {crawl_id!r} in Redis was made by {age} skitter (Redis protocol {got}; this one "
                         f"speaks {PROTOCOL}): run the same skitter version on every worker, or use another --crawl-id")


async def _connect(url: str):
    from .distributed.redis_url import connect

    return await connect(url)


def run_distributed(directory: Path, redis_url: str, crawl_id: str, config: CrawlConfig | None, *,
                    quiet: bool = False) -> dict:
    """One worker of the crawl ``crawl_id`` (creating it when ``config`` is given), until the whole
    crawl is done; returns this worker's summary."""
    from .cli import _run, _say_seeds_not_fetched
    from .stats import load_summary, render

    crawler_box: list = []
    _run(_work(directory, redis_url, crawl_id, config, crawler_box, quiet))
    crawler = crawler_box[0]
    interrupted = crawler.interrupted
    del crawler, crawler_box
    if config is None or config.index_interval >= 0:
        from .crawllog import crawl_log
        from .index.live import finish_index

        with crawl_log(directory):   # its warnings (a damaged index made again) as the crawl's
            finish_index(directory)
    summary = load_summary(directory)
    summary["interrupted"] = interrupted
    if not quiet:
        from rich.console import Console

        Console().print(render(summary))
    # the seeds this worker was given (the ring's: their hosts were its) and got no response for;
    # each worker says its own, so the workers' lines together name every seed not fetched
    _say_seeds_not_fetched(directory)
    return summary


async def _work(directory: Path, redis_url: str, crawl_id: str, config: CrawlConfig | None, box: list,
                quiet: bool) -> None:
    from .api import build_crawler
    from .distributed.frontier import AWAY, CrawlKeys, RedisFrontier, create_crawl, read_crawl_config
    from .distributed.redis_url import explain_lost
    from .frontier.politeness import Politeness

    try:
        keys = CrawlKeys(crawl_id)
    except ValueError as exc:
        raise UsageError(f"--crawl-id: {exc}") from None
    before = recorded_cluster(directory) if (directory / "crawl.db").exists() else None
    if before is not None and before.get("crawl_id") != crawl_id:
        # its pages, seeds and settings would be merged into this crawl's as if it had fetched them
        raise UsageError(f"{directory} is a worker directory of crawl {before.get('crawl_id')!r}: a worker of "
                         f"crawl {crawl_id!r} needs a directory of its own (or the same --crawl-id to resume)")
    client = await _connect(redis_url)
    try:
        try:   # Redis gone before the crawl began (a worker waiting for it): one line, as afterwards
            hold = False
            if config is not None:
                await create_crawl(client, keys, config.to_dict())
                raw_config = await read_crawl_config(client, keys)
                if raw_config is None:   # deleted in between by hand
                    raise RedisError(f"crawl {crawl_id!r} vanished from Redis while it was being created")
                _check_protocol(raw_config, crawl_id)
                stored = config_from_dict(raw_config)
                # the crawl's stored rules win; this command's seeds are added to it
                config = stored.with_(seeds=tuple(dict.fromkeys(stored.seeds + config.seeds)))
                hold = True
            else:
                deadline = time.monotonic() + 3600
                said = False
                while (raw := await read_crawl_config(client, keys)) is None:
                    if not said:
                        others = await _crawl_ids(client)
                        click.echo(f"skitter: waiting for crawl {crawl_id!r} to be created (skitter crawl --redis); "
                                   + (f"this Redis holds {', '.join(map(repr, others))}" if others
                                      else "this Redis holds no crawl yet"), err=True)
                        said = True
                    if time.monotonic() > deadline:
                        raise RedisError(f"no crawl {crawl_id!r} in Redis after an hour of waiting")
                    await asyncio.sleep(0.5)
                _check_protocol(raw, crawl_id)
                config = config_from_dict(raw)
        except AWAY as exc:
            raise explain_lost(exc, redis_url) from exc
        policy = Politeness(delay=config.delay, per_host=config.per_host, adaptive=config.adaptive_delay,
                            max_crawl_delay=config.max_crawl_delay, max_adaptive=config.max_adaptive_delay)
        made: list[RedisFrontier] = []

        def make(store):
            budget = 0 if config.recrawl else config.max_pages   # (a recrawl admits fetches itself)
            made.append(RedisFrontier(client, crawl_id, store.db, policy, hold=hold, budget=budget, **_timing()))
            return made[0]

        crawler = build_crawler(directory, config, frontier=make)
        box.append(crawler)
        record_cluster(crawler.store.db, redis_url, crawl_id)
        frontier = made[0]
        from .strategies.importance import _Importance

        if isinstance(crawler.scorer, _Importance):   # backlinks, pagerank (OPIC): the cluster's signals
            frontier.share_importance(crawler.scorer, crawler.link_filter.may_enter)
        frontier.start()
        try:
            await crawler.run()
        finally:
            await frontier.aclose()
    finally:
        await client.aclose()


def record_cluster(db, redis_url: str, crawl_id: str) -> None:   # noqa: ANN001 - a CrawlDB
    """Write in the worker's directory which cluster it belongs to (for ``serve DIR``): the Redis
    URL without its password (a crawl directory is no place for one), and the crawl id."""
    from .distributed.redis_url import parse_redis_url

    target = parse_redis_url(redis_url)
    db.ensure_tx()
    db.set_meta("cluster", {"redis": target.without_password, "crawl_id": crawl_id,
                            "password": target.password is not None})
    db.commit()


def recorded_cluster(directory: Path) -> dict[str, Any] | None:
    """What :func:`record_cluster` wrote in a worker's directory, or None (a local crawl)."""
    from .store.db import CrawlDB

    db = CrawlDB(directory, readonly=True)
    try:
        return db.get_meta("cluster")
    finally:
        db.conn.close()


def _timing() -> dict[str, float]:
    """Heartbeat, member and lease times: the defaults, or SKITTER_REDIS_TIMING=hb,member,lease."""
    from .distributed.redis_url import env_seconds   # noqa: PLC0415

    values = env_seconds("SKITTER_REDIS_TIMING", 3)
    return {} if values is None else dict(zip(("heartbeat", "member_ttl", "lease_ttl"), values))


@click.command("worker")
@click.option("--redis", "redis_url", required=True, metavar="URL", help="the crawl's Redis (redis://, rediss://)")
@click.option("-o", "--output", "output", required=True, type=click.Path(), callback=nonempty_path,
              help="this worker's crawl directory")
@click.option("--crawl-id", default=DEFAULT_CRAWL_ID, show_default=True, help="which crawl on that Redis")
@click.option("--quiet", "-q", is_flag=True, help="no summary")
def worker(redis_url: str, output: str, crawl_id: str, quiet: bool) -> None:
    """Join a distributed crawl: crawl the hosts the ring gives this worker until the whole crawl
    is done."""
    summary = run_distributed(Path(output), redis_url, crawl_id, None, quiet=quiet)
    if summary.get("interrupted"):
        sys.exit(130)


async def cluster_stats(redis_url: str, crawl_id: str, *, timeout: float | None = None) -> dict[str, Any]:  # noqa: ASYNC109
    """The cluster's figures (``stats --redis``, the web UI's crawl page). ``timeout``: seconds for
    the connection and for each command (the web UI's, short); None: the default connect timeout
    and no read timeout. Raises :class:`RedisError` (:class:`RedisUnreachable` when Redis cannot
    be reached or stops answering)."""
    import redis.exceptions as rex

    from .distributed.redis_url import AWAY, connect, explain_lost, parse_redis_url

    if timeout is None:
        client = await _connect(redis_url)
    else:
        client = await connect(redis_url, timeout=timeout, command_timeout=timeout)
    try:
        return await _cluster_figures(client, crawl_id)
    except AWAY as exc:
        raise explain_lost(exc, redis_url) from exc
    except (rex.RedisError, rex.RedisClusterException) as exc:   # e.g. NOPERM under an ACL, WRONGTYPE
        raise RedisError(f"Redis at {parse_redis_url(redis_url).redacted}: {' '.join(str(exc).split())}") from exc
    finally:
        await client.aclose()


async def _cluster_figures(client, crawl_id: str) -> dict[str, Any]:   # noqa: ANN001 - a Redis client
    from .distributed.frontier import CrawlKeys, read_crawl_config

    keys = CrawlKeys(crawl_id)
    config = await read_crawl_config(client, keys)
    if config is None:
        raise RedisError(f"no crawl {crawl_id!r} in that Redis")
    now = time.time()
    members = await client.zrange(keys.members, 0, -1, withscores=True)
    workers = []
    for name, beat in members:
        name = name.decode() if isinstance(name, bytes) else name
        raw = {k.decode(): v.decode() for k, v in (await client.hgetall(keys.stats(name))).items()}
        w = {"worker": name, "alive": now - beat < 5.0, "last_heartbeat_s": round(now - beat, 1)}
        for k in ("fetched", "queued", "in_flight", "hosts", "handed_off", "moved_in", "moved_out"):
            w[k] = int(float(raw.get(k, 0)))
        started = float(raw.get("started", 0) or 0)
        at = float(raw.get("at", 0) or 0)
        w["pages_per_s"] = round(w["fetched"] / (at - started), 1) if started and at > started else 0.0
        workers.append(w)
    pending = int(await client.get(keys.pending) or 0)
    hosts = await client.scard(keys.hosts)
    budget = int(config.get("max_pages") or 0)
    used = int(await client.get(keys.budget) or 0) if budget else None
    return {"crawl_id": crawl_id, "pending": pending, "finished": pending == 0, "hosts": hosts,
            "max_pages": budget or None, "max_pages_used": used,
            "budget_spent": bool(budget) and used is not None and used >= budget,
            "workers_alive": sum(w["alive"] for w in workers), "workers": workers,
            "fetched": sum(w["fetched"] for w in workers),
            "pages_per_s": round(sum(w["pages_per_s"] for w in workers if w["alive"]), 1),
            "seeds": config.get("seeds", [])}


async def _crawl_ids(client, limit: int = 10) -> list[str]:   # noqa: ANN001 - a Redis or RedisCluster
    """The ids of the crawls on this Redis (their ``sk:{C}:config`` keys), at most ``limit``: a
    worker that waits for a crawl id says which there are (a typo waits an hour otherwise)."""
    out: list[str] = []
    try:
        async for key in client.scan_iter(match="sk:{*}:config", count=1000):
            name = key.decode() if isinstance(key, bytes) else key
            out.append(name[len("sk:{"):-len("}:config")])
            if len(out) >= limit:
                break
    except Exception:   # (only for a message: a Redis that refuses SCAN says nothing more)
        return []
    return sorted(out)


def cluster_state(s: dict[str, Any]) -> str:
    return "finished" if s["finished"] else "--max-pages spent" if s["budget_spent"] else "running"


def cluster_lines(s: dict[str, Any]) -> list[str]:
    """:func:`cluster_stats` as text: the cluster's line, then a line per worker (``stats --redis``;
    the web UI's crawl page shows the first and a table of the workers)."""
    lines = [f"crawl {s['crawl_id']}: {cluster_state(s)}, {s['pending']:,} URLs "
             f"queued or in flight, {s['hosts']:,} hosts, {s['fetched']:,} fetched, "
             f"{s['workers_alive']} workers alive, {s['pages_per_s']} pages/s"
             + (f", {s['max_pages_used']:,} of --max-pages {s['max_pages']:,} counted" if s["max_pages"] else "")]
    for w in s["workers"]:
        if w["alive"]:
            lines.append(f"  {w['worker']}: alive, {w['hosts']} hosts, {w['fetched']:,} fetched, "
                         f"{w['queued']:,} queued, {w['in_flight']} in flight, {w['pages_per_s']} pages/s")
        else:   # its hosts, queue and flight went to the others: what it last said of them is stale
            lines.append(f"  {w['worker']}: gone, {w['fetched']:,} fetched")
    return lines


def print_cluster_stats(redis_url: str, crawl_id: str, as_json: bool) -> None:
    from .cli import _run

    s = _run(cluster_stats(redis_url, crawl_id))
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    for line in cluster_lines(s):
        click.echo(line)
