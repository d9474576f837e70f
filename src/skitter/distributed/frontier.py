"""The Redis frontier: the frontier seam (:mod:`skitter.frontier.base`) for many workers sharing one
Redis or Redis Cluster. Distribution is this backend plus a membership layer, not a second crawl
loop: each worker runs the ordinary loop (skitter.loop) with a :class:`RedisFrontier`.

What lives where (``P`` = ``sk``, ``C`` = the crawl id, ``H`` = a host key):

- ``sk:C:seen:…``            the shared URL-seen set (:class:`~.seen.RedisSeenSet`): a URL is
                              admitted once in the whole cluster.
- ``sk:{C/H}:q``             a hash, fingerprint -> record (JSON: url, depth, parent, priority,
                              seq, redirects, attempts, due) of every admitted URL of the host not
                              done yet: queued, due later, or in flight. It is the truth a worker
                              that dies leaves behind; its hosts' next owners load it.
- ``sk:{C/H}:lease``         ``WORKER:TOKEN`` with an expiry: who crawls the host. ``TOKEN``
                              comes from ``sk:{C/H}:tok`` (INCR: the fencing token), and every
                              write of the holder (a URL done or due again) runs in a script that
                              checks the lease first, so a worker that lost the host (paused past
                              its lease) cannot change its queue. ``sk:{C/H}:pol`` is the host's
                              politeness state as its last holder left it: its next allowed
                              time (epoch seconds), robots.txt's Crawl-delay and the last
                              response time (the adaptive delay), so a host that moves keeps them.
- ``sk:{C/H}:imp``           with an importance strategy (backlinks, OPIC): fingerprint -> the
                              URL's in-link count or cash, the whole cluster's. A worker adds what
                              a page gives each URL it links to, one script call per host per page
                              (pipelined), and the script also writes the new total as the
                              priority of the URL's record in ``q`` if it is higher, so a host
                              that moves keeps the order; the totals go to the host's owner in its
                              inbox with the next heartbeat. Only URLs the link filter may ever
                              admit (scope, URL length, repeated segments) are counted.
- ``sk:{C/H}:done``          on a Redis Cluster: a sorted set, fingerprint -> when (the node's
                              clock, ms) of the host's URLs done in the last ``DONE_HORIZON``
                              seconds (at most ``DONE_MAX``), written and trimmed by the script that
                              removes their records; the cluster's admission queues none of them
                              again (:meth:`RedisFrontier._add_cluster`).
- ``sk:{C}:members``          a sorted set, worker -> its last heartbeat (epoch seconds); the
                              live ones (a heartbeat within ``member_ttl``) form the ring
                              (:class:`~.ring.Ring`, consistent hashing with virtual nodes).
- ``sk:{C}:hosts``            every host with admitted URLs (the set a new owner scans).
- ``sk:{C}:inbox:W``          batches of URLs other workers found for hosts W owns (a list of
                              JSON batches): hand-off, one RPUSH per owner per page, in the same
                              pipeline as the records.
- ``sk:{C}:pending``          URLs admitted and not done, cluster-wide. It reaches 0 only when
                              nothing is queued or in flight anywhere, and then stays 0 (a URL is
                              admitted only while its parent is pending): global termination.
- ``sk:{C}:budget``           with ``--max-pages``: fetches counted against the cluster's budget
                              (those done plus those reserved and in flight). A worker reserves
                              one (a script: only below the budget) before it hands a URL out, and
                              gives it back when the URL turns out not to count (robots.txt, a
                              retry, a URL robots.txt disallows).
- ``sk:{C}:config``, ``sk:{C}:stats:W``   the crawl's settings; each worker's figures.

The worker's own part is a :class:`~skitter.frontier.local.LocalFrontier` on the worker's crawl
database, holding the hosts this worker leases: the same scheduling (politeness, due times,
priorities) as a local crawl. A URL done is written to Redis only after the store has committed
the page (:meth:`RedisFrontier.committed`, called by the loop's committer), so a worker killed at
any moment loses nothing: what it had not committed is still in its hosts' queues in Redis.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from redis import exceptions as rex

from ..clock import SYSTEM, Clock, wait_event
from ..errors import RedisError
from ..frontier.local import LocalFrontier
from ..frontier.politeness import Politeness
from ..models import Candidate, Outcome
from ..store.db import CrawlDB
from ..urls import fingerprint, host_key
from .redis_url import AWAY, NOT_RUN, as_lost, leaked
from .ring import Ring
from .seen import HAS_LUA, RedisSeenSet, _Script

log = logging.getLogger("skitter.distributed")

__all__ = ["AWAY", "RedisFrontier", "CrawlKeys", "create_crawl", "read_crawl_config", "worker_id", "PROTOCOL"]


def worker_id() -> str:
    """A worker's name: host, pid and a random part (a restarted worker is a new member)."""
    host = socket.gethostname().replace(":", "-").replace("{", "").replace("}", "")[:40]
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class CrawlKeys:
    """The Redis key names of one crawl."""

    def __init__(self, crawl_id: str) -> None:
        if not crawl_id or any(ch in crawl_id for ch in "{}/: "):
            raise ValueError(f"a crawl id has no braces, slashes, colons or spaces, got {crawl_id!r}")
        self.crawl_id = crawl_id
        g = f"sk:{{{crawl_id}}}"
        self.members = f"{g}:members"
        self.hosts = f"{g}:hosts"
        self.pending = f"{g}:pending"
        self.config = f"{g}:config"
        self.budget = f"{g}:budget"
        self.seen_prefix = f"sk:{crawl_id}"
        self._g = g

    def inbox(self, worker: str) -> str:
        return f"{self._g}:inbox:{worker}"

    def stats(self, worker: str) -> str:
        return f"{self._g}:stats:{worker}"

    def host(self, host: str, what: str) -> str:
        return f"sk:{{{self.crawl_id}/{host}}}:{what}"


# -- scripts (each touches the keys of one host: one slot of a cluster) --------------------------

# On a Redis Cluster, a host's URLs done within the last DONE_HORIZON seconds (at most DONE_MAX of
# them) are kept in sk:{C/H}:done, so that an admission whose seen test ran before such a URL was
# done does not queue it again (RedisFrontier._add_cluster).
DONE_HORIZON = 120.0
DONE_MAX = 10_000

_ACQUIRE = _Script.of("""
-- KEYS: lease, tok, q, pol; ARGV: worker, ttl ms, patient, sent (ms, this server's clock as the
-- worker reckons it), oldest (ms). The lease if free (or already ours): token, the host's records,
-- its politeness time. nil if another worker holds it; and if the lease lapsed (gone, where a
-- release leaves 'free') when its holder may be coming back from an outage: the request is patient
-- ('1': the worker has just come back from a gap in its heartbeats), or it waited here longer than
-- `oldest` (sent before Redis hung, run as it came back, ahead of the holder's renewal): 0 then,
-- not nil. `oldest` 0: no such test (RedisFrontier._acquire).
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= 'free' then
  local w = string.match(cur, '^(.*):%d+$')
  if w ~= ARGV[1] then return nil end
elseif not cur and redis.call('EXISTS', KEYS[2]) == 1 then
  if ARGV[3] == '1' then return nil end
  local oldest = tonumber(ARGV[5])
  local now = redis.call('TIME')
  if oldest > 0 and tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[4]) > oldest then
    return 0
  end
end
local t = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. t, 'PX', ARGV[2])
return {t, redis.call('HGETALL', KEYS[3]), redis.call('GET', KEYS[4]) or ''}
""")

# A lease that expired while its holder could not reach Redis (an outage longer than the lease's
# time) is still the holder's if no one has acquired the host since: the host's fencing counter
# (tok) is still at the holder's token. _RENEW takes it back and _DONE writes under it, so the URLs
# done during the outage are not fenced and fetched again by the host's next holder.
_OURS = """
local cur = redis.call('GET', KEYS[1])
local ours = cur == ARGV[1]
if not ours and not cur then
  ours = redis.call('GET', KEYS[TOK]) == string.match(ARGV[1], ':(%d+)$')
end
"""

_RENEW = _Script.of("""
-- KEYS: lease, pol, tok; ARGV: WORKER:TOKEN, ttl ms, politeness time. 1 if still ours.
""" + _OURS.replace("KEYS[TOK]", "KEYS[3]") + """
if not ours then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[3], 'EX', 86400)
return 1
""")

_RELEASE = _Script.of("""
-- KEYS: lease, pol, tok; ARGV: WORKER:TOKEN, politeness time. The lease is left 'free' (not
-- deleted: a lease that lapsed is told from one given up, see _ACQUIRE); a lapsed one still ours
-- is released too.
""" + _OURS.replace("KEYS[TOK]", "KEYS[3]") + """
if not ours then return 0 end
redis.call('SET', KEYS[1], 'free', 'EX', 86400)
redis.call('SET', KEYS[2], ARGV[2], 'EX', 86400)
return 1
""")

_DONE = _Script.of("""
-- KEYS: lease, q, done, tok; ARGV: WORKER:TOKEN, horizon ms (0: no done set), the done set's bound, then
-- (fingerprint, record) pairs: an empty record deletes (the URL is done), another replaces (due
-- again). With a horizon (a Redis Cluster), each URL done is also recorded in the host's set of
-- URLs done recently (score: this node's clock, ms), trimmed here to the horizon and the bound:
-- admission's step 2 (_QUEUE_NX) queues none of them again. -1 if the lease is not ours
-- (fenced), else the number of records deleted.
""" + _OURS.replace("KEYS[TOK]", "KEYS[4]") + """
if not ours then return -1 end
local horizon = tonumber(ARGV[2])
local now = nil
if horizon > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local n, recorded = 0, false
for i = 4, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    n = n + redis.call('HDEL', KEYS[2], ARGV[i])
    if now then
      redis.call('ZADD', KEYS[3], now, ARGV[i])
      recorded = true
    end
  else
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
if recorded then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%d', now - horizon))
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[3])
  if over > 0 then redis.call('ZREMRANGEBYRANK', KEYS[3], 0, over - 1) end
  redis.call('PEXPIRE', KEYS[3], horizon)
end
return n
""")

_ADMIT = _Script.of("""
-- The URL-seen test and the queueing of the new URLs in one atomic step (a single Redis: a
-- worker killed between the two would leave URLs seen and never queued).
-- KEYS: nb seen buckets, pending, hosts, nq host queues.
-- ARGV: width, nb, nq, nb packed remainders (one string per bucket), nq host names, then per
-- remainder in bucket order: queue index (1-based), fingerprint, record.
""" + HAS_LUA + """
local nb, nq = tonumber(ARGV[2]), tonumber(ARGV[3])
local flags = {}
local k = 4 + nb + nq
local new, used = 0, {}
for i = 1, nb do
  local bucket = redis.call('GET', KEYS[i]) or ''
  local before = #bucket
  local rems = ARGV[3 + i]
  for j = 1, #rems, w do
    local rem = string.sub(rems, j, j + w - 1)
    local q, fp, rec = tonumber(ARGV[k]), ARGV[k + 1], ARGV[k + 2]
    k = k + 3
    if has(bucket, rem) then
      flags[#flags + 1] = '0'
    else
      bucket = bucket .. rem
      flags[#flags + 1] = '1'
      redis.call('HSET', KEYS[nb + 2 + q], fp, rec)
      new = new + 1
      used[q] = true
    end
  end
  if #bucket > before then
    redis.call('APPEND', KEYS[i], string.sub(bucket, before + 1))
  end
end
for q in pairs(used) do redis.call('SADD', KEYS[nb + 2], ARGV[3 + nb + q]) end
local pending = redis.call('INCRBY', KEYS[nb + 1], new)
return {table.concat(flags), pending}
""")

_QUEUE_NX = _Script.of("""
-- KEYS: a host's queue, its set of URLs done recently; ARGV: (fingerprint, record) pairs. Each
-- record written where the queue has none for that URL and the URL was not done recently: '1'
-- where written, '0' where another record is there or the URL is done (fetched by then).
local flags = {}
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[2], ARGV[i]) then
    flags[#flags + 1] = '0'
  else
    flags[#flags + 1] = tostring(redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]))
  end
end
return table.concat(flags)
""")

_IMPORTANCE = _Script.of("""
-- KEYS: imp, q; ARGV: (fingerprint, amount) pairs. Adds each amount to the URL's total (its in-link
-- count or cash) and raises the priority of its record, if queued, to the total. Returns the totals.
local out = {}
for i = 1, #ARGV, 2 do
  local total = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
  out[#out + 1] = total
  local rec = redis.call('HGET', KEYS[2], ARGV[i])
  if rec then
    local r = cjson.decode(rec)
    if tonumber(total) > r[4] then
      r[4] = tonumber(total)
      redis.call('HSET', KEYS[2], ARGV[i], cjson.encode(r))
    end
  end
end
return out
""")

_RESERVE = _Script.of("""
-- KEYS: budget; ARGV: --max-pages. 1 (and one more fetch counted) if the count is below it, else 0.
if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
return 1
""")

_ZERO_IF = _Script.of("""
-- KEYS: pending; ARGV: the value seen. Set to 0 if unchanged (a count left too high by a crash).
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], 0) return 1 end
return 0
""")


def _record(c: Candidate, seq: int, due: float | None = None, revisit: bool = False) -> str:
    return json.dumps([c.url, c.depth, c.parent, c.priority, seq, c.redirects, c.attempts, due, int(revisit)],
                      separators=(",", ":"))


def _decode(raw: bytes | str) -> tuple[Candidate, int, float | None, int]:
    """A record: the candidate, its seq, its due time and whether that is a revisit (0 in a record
    an older worker wrote, without the field)."""
    url, depth, parent, priority, seq, redirects, attempts, due, *rest = json.loads(raw)
    return Candidate(url=url, depth=depth, parent=parent, priority=priority, redirects=redirects,
                     attempts=attempts), seq, due, int(rest[0]) if rest else 0


# The layout of a crawl's entries in Redis, stored with its settings (``protocol`` in
# ``sk:{C}:config``): a worker joins only a crawl of its own protocol, so a cluster of mixed
# skitter versions is one clear error, not records one side cannot read. 1 (no ``protocol``):
# records of 8 fields; 2: records with a 9th (``revisit``), politeness with three values; 3: a
# released lease left ``free`` (a worker of protocol 2 would take it for a worker's and never lease
# the host again), lease requests with their send time; 4: hand-offs forwarded to a host's owner
# (``["forwarded", batch]`` in an inbox, which a protocol-3 worker would read as priorities).
PROTOCOL = 4


async def create_crawl(client, keys: CrawlKeys, config: dict[str, Any]) -> bool:
    """Store the crawl's settings (the first ``crawl --redis`` creates the crawl; a later one
    joins it with the stored settings) and hold the crawl open (+1 pending) until this process
    has queued the seeds (:class:`RedisFrontier` ``hold=True`` lets go). True if created."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.set(keys.config, json.dumps({**config, "protocol": PROTOCOL}), nx=True)
        pipe.incrby(keys.pending, 1)
        created, _ = await pipe.execute()
    return bool(created)


async def read_crawl_config(client, keys: CrawlKeys) -> dict[str, Any] | None:
    """The crawl's settings as stored by :func:`create_crawl`; None if there is no such crawl. A
    value no skitter wrote there is :class:`~skitter.errors.RedisError` (one line)."""
    raw = await client.get(keys.config)
    if raw is None:
        return None
    try:
        config = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        config = None
    if not isinstance(config, dict):
        raise RedisError(f"{keys.config} in Redis holds no skitter crawl's settings: "
                         f"delete it, or use another --crawl-id")
    return config


class _Owned(LocalFrontier):
    """The local scheduler of the hosts this worker holds: a host not held (never leased, or
    leaving) is never scheduled."""

    held: set[str]
    leaving: set[str]

    def _schedule(self, h, now):   # noqa: ANN001 - LocalFrontier's own signature
        if h.key not in self.held or h.key in self.leaving:
            return
        super()._schedule(h, now)


class RedisFrontier:
    """Implements :class:`skitter.frontier.base.Frontier` (and ``Reprioritizing``) on Redis.

    ``db``: the worker's crawl database (its ``urls`` rows are this worker's cache of its hosts'
    queues; the queues in Redis are the truth, so rows not done are dropped when it starts).
    ``immediate``: write each URL done to Redis at once instead of after the store's commit (for
    a frontier used without a store, as the contract tests do). ``hold``: this process created
    the crawl (:func:`create_crawl`) and lets go of its hold once the seeds are queued.
    ``budget``: the crawl's ``--max-pages``, for the whole cluster (0: none): a URL is handed out
    only after one fetch is reserved in ``sk:{C}:budget``, so the workers together never fetch
    more than the budget.
    ``done_horizon``: on a Redis Cluster, how long (seconds) a URL done stays in its host's set of
    URLs done recently (``sk:{C/H}:done``), which admission checks before queueing a URL (:meth:`_add_cluster`).
    """

    def __init__(self, client, crawl_id: str, db: CrawlDB, policy: Politeness, *, worker: str | None = None,
                 clock: Clock = SYSTEM, window: int = 32, immediate: bool = False, hold: bool = False,
                 heartbeat: float = 0.5, member_ttl: float = 3.0, lease_ttl: float = 5.0,
                 budget: int = 0, done_horizon: float = DONE_HORIZON) -> None:
        self.client = client
        self.keys = CrawlKeys(crawl_id)
        self.worker = worker or worker_id()
        self.seen = RedisSeenSet(client, self.keys.seen_prefix)
        self.db = db
        db.ensure_tx()
        db.conn.execute("DELETE FROM urls WHERE state != 2")   # the queues in Redis are the truth
        db.commit()
        self.local = _Owned(db, policy, window=window, clock=clock)
        self.local.held = set()
        self.local.leaving = set()
        self.clock = clock
        self.immediate = immediate
        self._hold = hold
        self.heartbeat, self.member_ttl, self.lease_ttl = heartbeat, member_ttl, lease_ttl
        self.tokens: dict[str, str] = {}          # host held -> "WORKER:TOKEN"
        self.ring = Ring([self.worker])
        self.members: list[str] = [self.worker]
        self.known_hosts: set[str] = set()        # hosts this process has put in sk:{C}:hosts
        self.wanted: set[str] = set()             # hosts the ring gives us, not leased yet
        self._acquiring: set[str] = set()         # hosts whose lease is being asked for
        self._buf: list[tuple[str, int, str]] = []   # (host, fp, record or "") not yet in Redis
        self._writing: list[list[tuple[str, int, str]]] = []   # ... and those a flush is writing now
        self._decided: list[int] = []             # fps of URLs decided without a request, not yet seen in Redis
        self._seq = 0
        self.pending: int | None = None           # the last value of sk:{C}:pending we read
        self._stopped = False
        self._task: asyncio.Task | None = None
        self._rescan = True
        self._idle_pending: tuple[int, int] = (-1, 0)
        self.fetched = 0
        self.moved_in = self.moved_out = self.handed_off = self.fenced = 0
        self._redis_down_since: float | None = None
        self._had_config = False                  # sk:{C}:config seen by a heartbeat
        self._vanished = False                    # ... and gone since: the crawl's state is lost
        self._last_beat = 0.0                     # when this worker's last heartbeat reached Redis
        self._offset = 0.0                        # Redis's clock less this machine's (s), from a heartbeat
        self._offset_rtt = float("inf")           # ... the round trip it was measured over
        self._offset_next = 0.0                   # when to read Redis's clock again (monotonic)
        self._stale: dict[str, float] = {}        # host -> since when its lease requests came too late
        self._grace: tuple[float, float] | None = None   # (liveness cut-off, until): see _tick
        self._last_answer = time.monotonic()      # when the membership task last heard from Redis
        self._renew_sent = time.monotonic()       # when the last lease renewal that succeeded was sent
        self._watcher: asyncio.Task | None = None
        self._started = time.time()
        self.budget = budget
        self.done_horizon = done_horizon
        self.budget_used = 0                      # the last value of sk:{C}:budget we read
        self.budget_spent = False                 # a reservation failed: this worker is done
        self._give_back = 0                       # reservations to give back (fetches that did not count)
        self.importance: Any = None               # the importance scorer whose signals are shared
        self._may_enter: Callable[[str], bool] | None = None   # which URLs' signals are shared
        self._priorities_out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)   # owner -> host -> url -> total
        self._forward_out: dict[str, dict[str, list[str]]] = defaultdict(dict)   # owner -> host -> records

    # -- the Frontier interface -----------------------------------------------------------------
    async def add(self, candidates: Sequence[Candidate], *, decided: bool = False) -> list[Candidate]:
        if not candidates:
            return []
        fps = [fingerprint(c.url) for c in candidates]
        if not decided and not self.seen._cluster:
            return await self._add_atomic(candidates, fps)
        if not decided:
            return await self._add_cluster(candidates, fps)
        # URLs robots.txt disallows: only seen (their records are written by the store). Tested
        # now, put in the seen set only after the store has committed their records (flush): a
        # worker killed in between must not leave a URL seen in Redis and recorded nowhere.
        if self.immediate:   # no store: seen at once
            flags = await self._retrying(self.seen.add_many, fps, lost_reply_ok=False)
            new = [c for c, f in zip(candidates, flags) if f]
            if new:
                self.local.admit(new, decided=True)
            return new
        flags = await self._retrying(self.seen.contains_many, fps)
        new = self.local.admit([c for c, f in zip(candidates, flags) if not f], decided=True)
        self._decided.extend(fingerprint(c.url) for c in new)
        return new

    async def _add_cluster(self, candidates: Sequence[Candidate], fps: list[int]) -> list[Candidate]:
        """:meth:`add` on a Redis Cluster, where the seen set's buckets and a host's queue live in
        different slots, so that no one script can test and queue: the records go in first and the
        seen set after, so a worker killed in between leaves URLs queued (at worst fetched twice,
        below), never seen and not queued. Three pipelines:

        1. which URLs are not seen yet (read only), and all of them counted pending and their hosts
           known, before any record of theirs is visible;
        2. the records of those not seen, each only where its host's queue has none (a record
           there is another worker's, who found the URL at the same moment, or one a killed worker
           left) and its host's set of URLs done recently (``sk:{C/H}:done``, written by the
           script that removes a record, :data:`_DONE`) has not got it: the URLs whose record this
           worker wrote are its new ones;
        3. those into the seen set, the count set right (less the URLs not new), the hand-off.

        A URL admitted, fetched and done by others between this worker's steps 1 and 2 is in its
        host's set of URLs done recently, so it is not queued again. That set keeps a URL for
        ``done_horizon`` seconds (:data:`DONE_HORIZON`); step 2 tests the seen set again when it
        comes over half of that after step 1. What is left: a worker stopped longer than the
        horizon between its test and its script reaching Redis (or between another's steps 2
        and 3) queues a URL again, and it is fetched twice. A count left too high by a crash is set
        right when the cluster is idle."""
        from .seen import _ADD, _CONTAINS

        hosts = list(dict.fromkeys(h for h in map(host_key, (c.url for c in candidates))
                                   if h not in self.known_hosts))
        plan = self.seen._plan(fps)
        extra: list[tuple] = [("INCRBY", self.keys.pending, len(candidates))]
        if hosts:
            extra.append(("SADD", self.keys.hosts, *hosts))
        # (a lost reply retried counts twice: too high, set right when the cluster is idle)
        tested = time.monotonic()
        flags, (self.pending, *_) = await self._retrying(
            self._pipeline, [(_CONTAINS, c.keys, c.args) for c in plan], extra)
        known = [False] * len(fps)
        for call, fl in zip(plan, flags):
            for pos, flag in zip(call.positions, fl):
                known[pos] = flag == 49
        self.known_hosts.update(hosts)
        first: dict[int, int] = {}
        for p, (fp, k) in enumerate(zip(fps, known)):
            if not k:
                first.setdefault(fp, p)
        todo = list(first.values())
        by_host: dict[str, list[int]] = defaultdict(list)
        recs: dict[int, str] = {}
        tries = 0

        async def queue() -> list:
            nonlocal todo, tested, tries
            tries += 1
            if time.monotonic() - tested > self.done_horizon / 2:
                # long since the seen test (Redis away, the process stopped): a URL admitted, fetched
                # and done since may be out of its host's set of URLs done recently: test again
                again = await self.seen.contains_many([fps[p] for p in todo])
                todo = [p for p, k in zip(todo, again) if not k]
                tested = time.monotonic()
            by_host.clear()
            for p in todo:
                by_host[host_key(candidates[p].url)].append(p)
            calls = []
            for host, ps in by_host.items():
                args: list = []
                for p in ps:
                    if p not in recs:   # (the same record in every try: see below)
                        self._seq += 1
                        recs[p] = _record(candidates[p], self._seq)
                    args += [str(fps[p]), recs[p]]
                calls.append((host, [self.keys.host(host, "q"), self.keys.host(host, "done")], args))
            flags = await self._scripts(_QUEUE_NX, calls)
            if tries > 1:
                # an earlier try's reply was lost (a node hung, the connection dropped), so it may
                # have written records: a record there that is this worker's own (the same string,
                # sequence number included) was written by it
                flags = await self._own_records(calls, flags, [[recs[p] for p in by_host[h]] for h, _, _ in calls])
            return list(zip(calls, flags))

        replies = await self._retrying(queue)
        written = sorted(p for (host, _, _), fl in replies for p, f in zip(by_host[host], fl)
                         if f in (49, "1"))
        mine, acquire, handoff = self._route([(candidates[p], recs[p]) for p in written])
        if mine:   # before any await: routed to hosts held now (one dropped meanwhile takes none)
            self.local.admit(mine)
        extra = [("RPUSH", self.keys.inbox(owner), json.dumps(batch, separators=(",", ":")))
                 for owner, batch in handoff.items()]
        # The candidates not written leave the count. After a lost reply, a URL the lost try wrote
        # whose record changed or went before the retry read it (its priority raised, fetched and
        # done) is not among ``written`` and was counted once already: only the URLs known before
        # any try (seen in step 1, or twice in the batch) leave, and the count stays too high (set
        # right when idle), never too low, which would end the crawl early.
        unwritten = len(candidates) - (len(first) if tries > 1 else len(written))
        if unwritten:
            extra.append(("DECRBY", self.keys.pending, unwritten))
        try:   # once: run twice, the count would go too low
            _, replies = await self._pipeline(
                [(_ADD, c.keys, c.args) for c in self.seen._plan([fps[p] for p in todo])], extra)
            if unwritten:
                self.pending = replies[-1]
            self.handed_off += sum(len(r) for batch in handoff.values() for r in batch.values())
        except AWAY:
            # Nothing is lost: URLs not in the seen set are queued all the same (at worst found and
            # fetched again), the count is too high (set right when idle), and owners load what the
            # hand-off missed from the hosts' queues.
            pass
        if acquire:
            await self._retrying(self._acquire, acquire)
        return [candidates[p] for p in written]

    def _route(self, new: list[tuple[Candidate, str]]) -> tuple[list[Candidate], list[str], dict[str, dict[str, list]]]:
        """Where new URLs (with their records) are crawled: this worker's local frontier for the
        hosts it holds, a lease to ask for those the ring gives it, the owners' inboxes for the
        others (what an owner misses, it loads from the host's queue)."""
        mine: list[Candidate] = []
        acquire: list[str] = []
        handoff: dict[str, dict[str, list]] = defaultdict(dict)
        for c, rec in new:
            host = host_key(c.url)
            owner = self.ring.owner(host)
            if owner == self.worker:
                if host in self.local.held:
                    if host not in self.local.leaving:
                        mine.append(c)
                elif host not in acquire:
                    acquire.append(host)
            else:
                handoff[owner].setdefault(host, []).append(rec)
        return mine, acquire, handoff

    async def _place(self, new: list[tuple[Candidate, str]]) -> None:
        """New URLs (with their records) to where they are crawled (:meth:`_route`)."""
        mine, acquire, handoff = self._route(new)
        if mine:   # before any await: routed to hosts held now (one dropped meanwhile takes none)
            self.local.admit(mine)
        if handoff:
            await self._retrying(self._hand_off, handoff)
        if acquire:
            await self._retrying(self._acquire, acquire)

    async def _add_atomic(self, candidates: Sequence[Candidate], fps: list[int]) -> list[Candidate]:
        """:meth:`add` on a single Redis: the seen test and the records in one script, then the
        hand-off to other owners (what they miss, they load from the host's queue)."""
        from .seen import WIDTH, _REMAINDER, _SHIFT, _U64

        by_bucket: dict[int, list[int]] = {}
        for pos, fp in enumerate(fps):
            by_bucket.setdefault((fp & _U64) >> _SHIFT, []).append(pos)
        hosts = [host_key(c.url) for c in candidates]
        qindex: dict[str, int] = {}
        for h in hosts:
            qindex.setdefault(h, len(qindex) + 1)
        buckets = list(by_bucket)
        order = [p for b in buckets for p in by_bucket[b]]
        records = []
        for p in order:
            self._seq += 1
            records.append(_record(candidates[p], self._seq))
        keys = [self.seen.key(b) for b in buckets] + [self.keys.pending, self.keys.hosts] + \
            [self.keys.host(h, "q") for h in qindex]
        args: list = [WIDTH, len(buckets), len(qindex)]
        args += [b"".join((fps[p] & _REMAINDER).to_bytes(WIDTH, "big") for p in by_bucket[b]) for b in buckets]
        args += list(qindex)
        for p, rec in zip(order, records):
            args += [qindex[hosts[p]], str(fps[p]), rec]
        (flags, pending), = await self._retrying(self._scripts, _ADMIT, [("", keys, args)])
        self.pending = pending
        is_new = [False] * len(candidates)
        for p, flag in zip(order, flags):
            is_new[p] = flag == 49 or flag == "1"
        new = [c for c, f in zip(candidates, is_new) if f]
        if new:
            rec_of = dict(zip(order, records))
            await self._place([(c, rec_of[p]) for p, c in enumerate(candidates) if is_new[p]])
        return new

    async def _hand_off(self, handoff: dict[str, dict[str, list]]) -> None:
        async with self.client.pipeline(transaction=False) as pipe:
            for owner, batch in handoff.items():
                pipe.rpush(self.keys.inbox(owner), json.dumps(batch, separators=(",", ":")))
            await pipe.execute()
        self.handed_off += sum(len(r) for batch in handoff.values() for r in batch.values())

    async def next_ready(self) -> Candidate | None:
        if self._hold:
            self._hold = False
            self.pending = await self._retrying(self.client.decr, self.keys.pending, lost_reply_ok=False, single=True)
        local = self.local
        while not self._stopped:
            if self._vanished:
                raise RedisError(f"crawl {self.keys.crawl_id!r} vanished from Redis mid-crawl (Redis restarted "
                                 "without persistence, or flushed): its URL-seen set and queues are lost; "
                                 "this worker stops, its directory keeps the pages it fetched")
            # leases not renewed for most of their time to live (this process was paused, or Redis
            # is away): another worker may hold our hosts by now. Hand out nothing until a renewal
            # says which are still ours (politeness: one worker at a time per host); the ends of
            # the crawl below are still seen meanwhile, and the wait below is a heartbeat at most
            stale = (self._task is not None and bool(self.tokens)
                     and time.monotonic() - self._renew_sent > self.lease_ttl * 0.8)
            cand = None if stale else local._pop_ready()
            if cand is not None:
                if self.budget and not await self._retrying(self._reserve):
                    # the cluster's budget is spent: the URL stays queued (in Redis too)
                    local.finish(cand, Outcome(requested=False, due=self.clock.time()))
                    self.budget_spent = True
                    return None
                return cand
            if self.pending == 0 and not local._leases and not self._buf:
                local._wake.set()
                return None   # nothing queued or in flight anywhere: the crawl is over
            if self.budget and self.budget_used >= self.budget and not local._leases:
                self.budget_spent = True
                local._wake.set()
                return None   # the cluster's --max-pages are all fetched or in flight elsewhere
            local._wake.clear()
            timeout = None
            if local._timers and not stale:
                timeout = max(0.0, local._timers[0][0] - self.clock.monotonic())
            if self._task is not None:   # the membership task wakes us when work or the end comes
                timeout = self.heartbeat if timeout is None else min(timeout, self.heartbeat)
            await wait_event(local._wake, timeout)
        return None

    def waiting_for(self) -> str | None:
        """For the watchdog's report of a stall: leases this worker cannot hand URLs out under."""
        age = time.monotonic() - self._renew_sent
        if self._task is not None and self.tokens and age > self.lease_ttl * 0.8:
            return (f"the leases of {len(self.tokens)} hosts not renewed for {age:.0f} s: no URL is handed out "
                    "until Redis confirms which are still this worker's")
        return None

    async def done(self, candidate: Candidate, outcome: Outcome) -> None:
        host = host_key(candidate.url)
        fp = fingerprint(candidate.url)
        local = self.local
        if outcome.requested:
            self.fetched += 1
        local.finish(candidate, outcome)
        # buffered before any await: a task cancelled while giving back its budget (the crawl
        # stopping) must still have its URL written done or due again in Redis by the next flush
        if outcome.due is None:
            self._buf.append((host, fp, ""))
        else:
            self._seq += 1
            self._buf.append((host, fp, _record(candidate, self._seq, outcome.due, outcome.revisit)))
        if self.budget and not (outcome.requested and outcome.due is None):
            # not a fetch that counts (--max-pages counts URLs requested and done): given back at
            # once, so that a worker's last fetch tasks can take it again; while Redis is away,
            # with the next flush
            self._give_back += 1
            try:
                await self._give_back_budget()
            except AWAY:
                pass
        if self.immediate:
            await self.flush()

    async def _reserve(self) -> bool:
        """One fetch reserved in the cluster's budget, if any is left."""
        (ok,) = await self._scripts(_RESERVE, [("", [self.keys.budget], [self.budget])])
        self.budget_used = self.budget_used + 1 if ok else max(self.budget_used, self.budget)
        return bool(ok)

    async def _give_back_budget(self) -> None:
        n, self._give_back = self._give_back, 0
        try:
            self.budget_used = await self.client.decrby(self.keys.budget, n)
        except BaseException:
            self._give_back += n   # (a reply lost in a Redis blip gives back twice: n fetches more)
            raise

    @property
    def wants_commit(self) -> bool:
        """Hosts wait to be handed over (:meth:`_lost`): commit soon, not at the next regular commit."""
        return bool(self.local.leaving)

    async def committed(self) -> None:
        """The store has committed every page done so far: make those URLs done in Redis too,
        then let go of the hosts this worker is leaving. While Redis is unreachable they wait."""
        try:
            await self.flush()
        except AWAY as exc:
            if self._redis_down_since is None:
                self._redis_down_since = time.monotonic()
                _say(f"Redis unreachable ({exc}); waiting for it")

    def stop(self) -> None:
        self._stopped = True
        self.local.stop()

    def seen_recently(self, url: str) -> bool:
        return self.local.seen_recently(url)

    def share_importance(self, scorer, may_enter: Callable[[str], bool] | None = None) -> None:   # noqa: ANN001
        """Share the importance strategy's signals (in-link counts, OPIC cash) through Redis: for the
        URLs ``may_enter`` accepts (the link filter's test of what may ever be admitted: scope, URL
        length, repeated segments), or all."""
        scorer.shared = True
        self.importance = scorer
        self._may_enter = may_enter

    async def reprioritize(self, changes: Sequence[tuple[str, float]]) -> None:
        """Raise queued URLs' priorities: this worker's own estimate; or, with
        :meth:`share_importance`, the cluster's, from what the page just added in Redis."""
        if self.importance is None:
            await self.local.reprioritize(changes)
            return
        scorer = self.importance
        deltas = scorer.take_deltas()
        if deltas and self._may_enter is not None:   # none for a URL that never enters the frontier
            may_enter = self._may_enter
            deltas = {url: amount for url, amount in deltas.items() if may_enter(url)}
        if not deltas:
            return
        by_host: dict[str, list[str]] = defaultdict(list)
        for url in deltas:
            by_host[host_key(url)].append(url)
        calls = [(h, [self.keys.host(h, "imp"), self.keys.host(h, "q")],
                  [x for url in urls for x in (str(fingerprint(url)), repr(deltas[url]))])
                 for h, urls in by_host.items()]
        try:
            replies = await self._scripts(_IMPORTANCE, calls)
        except AWAY:
            # Redis away: kept for the next page (a reply lost after the script ran counts twice)
            for url, amount in deltas.items():
                scorer.deltas[url] = scorer.deltas.get(url, 0.0) + amount
            return
        totals = {url: float(t) for (h, _, _), reply in zip(calls, replies) for url, t in zip(by_host[h], reply)}
        scorer.absorb(totals)
        mine = []
        for url, total in totals.items():
            if url in scorer.fetched:
                continue
            h = host_key(url)
            if h in self.local.held:
                mine.append((url, total))
            else:
                owner = self.ring.owner(h)
                if owner != self.worker:   # its queue's record has it already; its scheduler too, soon
                    self._priorities_out[owner].setdefault(h, {})[url] = total
        await self.local.reprioritize(mine)

    def _receive_priorities(self, batch: dict[str, dict[str, float]]) -> None:
        """Totals another worker found for URLs of hosts we hold: the priorities raised here too."""
        for host, totals in batch.items():
            if self.importance is not None:
                self.importance.absorb(totals)
            if host in self.local.held:
                for url, total in totals.items():
                    self.local.raise_priority(url, total)

    @property
    def queued(self) -> int:
        return self.local.queued

    @property
    def in_flight(self) -> int:
        return self.local.in_flight

    @property
    def active_hosts(self) -> int:
        return self.local.active_hosts

    def held_hosts(self, limit: int = 3) -> tuple[int, list[tuple[str, float, str]]]:
        return self.local.held_hosts(limit)

    # -- writes ----------------------------------------------------------------------------------
    async def flush(self, release: bool = True) -> None:
        """Write the URLs done (or due again) to their hosts' queues in Redis, one script call per
        host, pipelined; then the count of pending URLs; then release the hosts we are leaving.
        First the URLs decided without a request (robots.txt), whose records the store has
        committed by now, into the seen set.

        What is written is what was done when the flush began, taken before its first await: the
        loop's committer calls it right after the store's commit, and a URL done while the flush
        waits for Redis is not in that commit (written done now, it would be lost to a kill -9
        before the next one: its record gone from Redis, its page from the store)."""
        decided, self._decided = self._decided, []
        buf, self._buf = self._buf, []
        self._writing.append(buf)   # (its hosts are busy: _resync_held)
        try:
            await self._write_done(decided, buf)
        finally:
            self._writing.remove(buf)
        if self._give_back:
            await self._give_back_budget()
        if release:
            await self._release_leaving()

    async def _write_done(self, decided: list[int], buf: list[tuple[str, int, str]]) -> None:
        """:meth:`flush`'s writes: the URLs decided into the seen set, then those done (or due
        again) into their hosts' queues, the count of pending URLs. On an error what is not
        written goes back to be written with the next flush."""
        if decided:
            try:
                await self.seen.add_many(decided)
            except BaseException:
                self._decided = decided + self._decided   # adding twice changes nothing
                self._buf = buf + self._buf
                raise
        if buf:
            by_host: dict[str, list[str]] = defaultdict(list)
            for host, fp, rec in buf:
                by_host[host].extend((str(fp), rec))
            calls = []
            # on a cluster the URLs done are also recorded for admission's step 2 (_add_cluster)
            horizon = int(self.done_horizon * 1000) if self.seen._cluster else 0
            for host, args in by_host.items():
                token = self.tokens.get(host)
                if token is None:
                    self.fenced += len(args) // 2
                    continue
                calls.append((host, [self.keys.host(host, "lease"), self.keys.host(host, "q"),
                                     self.keys.host(host, "done"), self.keys.host(host, "tok")],
                              [token, horizon, DONE_MAX, *args]))
            try:
                replies = await self._scripts(_DONE, calls)
            except BaseException:
                self._buf = buf + self._buf   # a script that ran changes nothing when run again
                raise
            deleted = 0
            for (host, _, _), n in zip(calls, replies):
                if n < 0:
                    _debug(f"fenced on {host}")
                    self.fenced += 1
                    self._lost(host)
                else:
                    deleted += n
            if deleted:
                self.pending = await self.client.decrby(self.keys.pending, deleted)
                if self.pending <= 0:
                    self.local._wake.set()

    async def _own_records(self, calls: list[tuple[str, list[str], list]], flags: list,
                           records: list[list[str]]) -> list:
        """``_QUEUE_NX``'s ``flags`` with a '1' where it found a record and the record is this
        worker's ``records`` one (written by a try whose reply was lost)."""
        _, stored = await self._pipeline([], [("HMGET", keys[0], *args[0::2]) for _host, keys, args in calls])
        out = []
        for fl, there, mine in zip(flags, stored, records):
            fl = fl.decode() if isinstance(fl, bytes) else str(fl)
            out.append("".join("1" if f == "1" or (x is not None and (x.decode() if isinstance(x, bytes) else x) == r)
                               else "0" for f, x, r in zip(fl, there, mine)))
        return out

    async def _scripts(self, script: _Script, calls: list[tuple[str, list[str], list]]) -> list:
        """One script called with each (label, keys, args), pipelined: the replies."""
        return (await self._pipeline([(script, keys, args) for _, keys, args in calls]))[0]

    async def _pipeline(self, calls: list[tuple[_Script, list[str], list]],
                        extra: Sequence[tuple] = ()) -> tuple[list, list]:
        """Script calls and then other commands (``extra``) in one pipeline: their replies. A
        script the server does not have (NOSCRIPT: a new or restarted server, a cluster node that
        never saw it) is loaded and the calls that missed it run again, alone."""
        if not calls and not extra:
            return [], []

        async def run(todo, more):
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    for script, keys, args in todo:
                        pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
                    for command in more:
                        pipe.execute_command(*command)
                    return await pipe.execute(raise_on_error=False)
            except (AttributeError, TypeError) as exc:   # (a connection torn down: redis_url.leaked)
                if not leaked(exc):
                    raise
                raise as_lost(exc) from exc

        replies = await run(calls, extra)
        scripted, rest = replies[:len(calls)], replies[len(calls):]
        missing = [i for i, r in enumerate(scripted) if isinstance(r, rex.NoScriptError)]
        if missing:
            for source in dict.fromkeys(calls[i][0].source for i in missing):
                await self.client.script_load(source)
            for i, r in zip(missing, await run([calls[i] for i in missing], ())):
                scripted[i] = r
        for r in scripted + rest:
            if isinstance(r, Exception):
                raise as_lost(r)
        return scripted, rest

    # -- hosts: acquire, lose, release ------------------------------------------------------------
    async def _acquire(self, hosts: Sequence[str]) -> None:
        """Lease the hosts and load their queues; those leased by another worker stay wanted."""
        hosts = [h for h in dict.fromkeys(hosts) if h not in self.local.held and h not in self._acquiring]
        if not hosts:
            return
        ttl = int(self.lease_ttl * 1000)
        # just back from a gap in this worker's heartbeats (see _tick): a lease that lapsed meanwhile
        # may be its holder's still, back from the same outage; it is taken once the grace is over
        patient = int(self._grace is not None and time.time() < self._grace[1])
        # and a request that reaches Redis more than half a lease's time after it was sent (Redis
        # hung meanwhile) takes no lapsed lease either: sent again, it finds this worker patient.
        # The send time is on Redis's clock as a heartbeat read it (:meth:`_read_clock`): on a Redis
        # Cluster another node's; should the nodes' clocks differ by seconds, a host refused so for
        # a lease's time is asked for without the test (a dead worker's host is not left unleased)
        mono = time.monotonic()
        sent = int((time.time() + self._offset) * 1000)

        def oldest(host: str) -> int:
            return ttl // 2 if mono - self._stale.get(host, mono) < self.lease_ttl else 0

        self._acquiring.update(hosts)
        try:
            replies = await self._scripts(_ACQUIRE, [
                (h, [self.keys.host(h, "lease"), self.keys.host(h, "tok"), self.keys.host(h, "q"),
                     self.keys.host(h, "pol")], [self.worker, ttl, patient, sent, oldest(h)]) for h in hosts])
        finally:
            self._acquiring.difference_update(hosts)
        for host, reply in zip(hosts, replies):
            if reply is None or reply == 0:
                if reply == 0:   # the request waited out a Redis hang (or the clocks differ)
                    self._stale.setdefault(host, mono)
                else:            # held: the next refusal for age starts the count anew
                    self._stale.pop(host, None)
                self.wanted.add(host)
                continue
            self._stale.pop(host, None)
            self.wanted.discard(host)
            token, flat, pol = reply
            self.tokens[host] = f"{self.worker}:{int(token)}"
            _debug(f"acquired {host} token {int(token)} with {len(flat) // 2} URLs")
            self._load(host, flat, pol or None)

    def _pol(self, host: str) -> str:
        """The host's politeness state for ``sk:{C/H}:pol``: next allowed time (epoch seconds),
        Crawl-delay, last response time."""
        c = self.local.hosts[host].clock
        return f"{c.next_time + self.local._epoch!r} {c.crawl_delay!r} {c.last_elapsed!r}"

    def _load(self, host: str, flat: list, pol: bytes | str | None) -> None:
        """A host just leased: its queue from Redis into the local frontier (replacing any row of
        an earlier lease: what Redis still holds is not done)."""
        local = self.local
        local.held.add(host)
        local.leaving.discard(host)
        h = local._host(host)
        if pol is not None:
            # (an older worker wrote the time alone)
            raw = pol.decode() if isinstance(pol, bytes) else pol
            t, crawl_delay, elapsed, *_ = [float(x) for x in raw.split()] + [0.0, 0.0]
            h.clock.next_time = max(h.clock.next_time, t - local._epoch)
            if not h.clock.crawl_delay:
                h.clock.crawl_delay = crawl_delay
            if not h.clock.last_elapsed:
                h.clock.last_elapsed = elapsed
        decoded = sorted((_decode(flat[i + 1]) + (int(flat[i]),) for i in range(0, len(flat), 2)),
                         key=lambda r: r[1])
        rows = []
        # in the order they were admitted, numbered anew: the seq of records written by several
        # workers may repeat, and a host's window breaks ties by seq
        for c, _, due, revisit, fp in decoded:
            self._seq = local.seq = max(self._seq, local.seq) + 1
            rows.append((fp, c.url, host, c.depth, c.parent, c.priority, self._seq, c.redirects, c.attempts, due,
                         revisit))
        db = self.db
        db.ensure_tx()
        db.conn.executemany(
            "INSERT OR REPLACE INTO urls (fp, url, host, depth, parent, priority, seq, state, redirects, attempts, due,"
            " revisit) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)", rows)
        self.moved_in += 1
        self._recount(h)

    def _recount(self, h) -> None:   # noqa: ANN001
        local = self.local
        ready, waiting, next_due = self.db.conn.execute(
            "SELECT coalesce(sum(due IS NULL), 0), coalesce(sum(due IS NOT NULL), 0), min(due) FROM urls"
            " WHERE host = ? AND state = 0", (h.key,)).fetchone()
        local._queued += ready + waiting - h.ready - h.waiting
        h.ready, h.waiting, h.next_due = ready, waiting, next_due
        h.scheduled = False
        h.entry = -1      # any heap entry of it is stale
        local._schedule(h, self.clock.monotonic())
        local._wake.set()

    def _lost(self, host: str) -> None:
        """The ring gave the host to another worker, or its lease was lost: hand out nothing more
        of it; it is released once nothing of it is in flight (:meth:`_release_leaving`)."""
        if host in self.local.held:
            _debug(f"leaving {host}")
            self.local.leaving.add(host)
            h = self.local.hosts.get(host)
            if h is not None:
                h.scheduled = False
                h.entry = -1

    async def _release_leaving(self) -> None:
        local = self.local
        busy = {b[0] for b in self._buf} | {b[0] for buf in self._writing for b in buf}
        done = [k for k in local.leaving if not local.hosts[k].clock.active and k not in busy]
        if not done:
            return
        calls = [(k, [self.keys.host(k, "lease"), self.keys.host(k, "pol"), self.keys.host(k, "tok")],
                  [self.tokens.get(k, ""), self._pol(k)]) for k in done]
        await self._scripts(_RELEASE, calls)
        _debug(f"released {done}")
        for k in done:
            self._drop(k)
            self.moved_out += 1
            if self.ring.owner(k) == self.worker:
                # lost with its lease (another worker took it while this one's ring still gives it
                # here): asked for again with each heartbeat, not only when this worker is idle
                self.wanted.add(k)

    def _drop(self, key: str) -> None:
        local = self.local
        h = local.hosts[key]
        n = self.db.conn.execute("SELECT count(*) FROM urls WHERE host = ? AND state = 0", (key,)).fetchone()[0]
        local._queued -= n + len(h.window) + len(h.revisits)
        local._mem -= len(h.window) + len(h.revisits)
        self.db.ensure_tx()
        self.db.conn.execute("DELETE FROM urls WHERE host = ? AND state != 2", (key,))
        h.window.clear()
        h.revisits.clear()
        h.first = h.ready = h.waiting = 0
        h.next_due = None
        h.scheduled = False
        h.entry = -1
        local.held.discard(key)
        local.leaving.discard(key)
        self.tokens.pop(key, None)

    # -- membership: heartbeats, the ring, hand-off, leases ---------------------------------------
    def start(self) -> None:
        """Join the crawl: heartbeats, the ring over the live workers, the inbox, lease renewal."""
        if self._task is None:
            self._started = time.time()
            self._last_answer = time.monotonic()
            self._task = asyncio.ensure_future(self._maintain())
            self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Say so when Redis has not answered the heartbeats for a member's time to live (while
        redis-py's own retries, which back off for seconds, keep the membership task waiting)."""
        while not self._stopped and not self._vanished:
            slept = time.monotonic()
            await asyncio.sleep(self.heartbeat)
            late = time.monotonic() - slept - self.heartbeat
            if late > 1.0:   # this process did not run (stopped, starved, its loop blocked): no
                self._last_answer += late   # silence of Redis's (the watchdog reports a blocked loop)
            silent = time.monotonic() - self._last_answer
            if silent > self.member_ttl and self._redis_down_since is None:
                self._redis_down_since = self._last_answer
                _say(f"Redis unreachable (no answer for {silent:.0f} s); waiting for it")

    async def _maintain(self) -> None:
        renew_every = self.lease_ttl / 3
        last_renew = 0.0
        last_scan = 0.0
        while not self._stopped:
            try:
                await self._tick()
                if self._vanished:   # no more heartbeats, leases or scans: the fetch tasks stop the crawl
                    return
                now = self._last_answer = time.monotonic()
                if now - last_renew >= renew_every:
                    await self._renew()
                    last_renew = now
                idle = not self.local._leases and not self.local._ready and not self.local._timers
                if self._rescan or (idle and self.pending and now - last_scan >= 2.0) or self.wanted:
                    await self._scan()
                    last_scan = now
                if self.immediate:
                    await self._release_leaving()
                if self._redis_down_since is not None:
                    self._back()
            except AWAY as exc:
                if self._redis_down_since is None:
                    self._redis_down_since = time.monotonic()
                    _say(f"Redis unreachable ({exc}); waiting for it")
            except Exception as exc:   # a bug here must not silently end the heartbeats
                if self._stopped:   # the crawl ended meanwhile and closed its store under this tick
                    return
                _say(f"internal error in the membership task: {type(exc).__name__}: {exc}")
                if os.environ.get("SKITTER_DEBUG"):
                    raise
            await asyncio.sleep(self.heartbeat)

    def _back(self) -> None:
        """Redis answers again (the membership task's call or another): say so once. The watch
        (:meth:`_watch`) counts the silence from here again."""
        if self._redis_down_since is None:
            return
        _say(f"Redis is back after {time.monotonic() - self._redis_down_since:.0f} s")
        self._redis_down_since = None
        self._last_answer = time.monotonic()

    async def _tick(self) -> None:
        now = time.time()
        cutoff = now - self.member_ttl
        if self._last_beat and now - self._last_beat > min(self.member_ttl, self.lease_ttl * 2 / 3):
            # this worker's own heartbeats did not reach Redis for longer than a member's time, or
            # than two thirds of a lease's (renewed every third: some lapsed), a Redis outage or
            # this process stalled: the others' likely did not either, and their leases lapsed.
            # Until they have had a member's time to beat again, a worker alive before the gap
            # counts as alive, and no lapsed lease is acquired: taking its hosts now would fence
            # the URLs it fetched meanwhile, and they would be fetched again (its lapsed leases it
            # takes back: _RENEW)
            self._grace = (self._last_beat - self.member_ttl, now + self.member_ttl)
        if self._grace is not None:
            if now < self._grace[1]:
                cutoff = min(cutoff, self._grace[0])
            else:
                self._grace = None
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(self.keys.members, {self.worker: now})
            pipe.zrangebyscore(self.keys.members, cutoff, "+inf")
            pipe.lpop(self.keys.inbox(self.worker), 1000)
            pipe.get(self.keys.pending)
            pipe.hset(self.keys.stats(self.worker), mapping=self._figures(now))
            pipe.expire(self.keys.stats(self.worker), 3600)
            pipe.get(self.keys.budget)
            pipe.exists(self.keys.config)
            out, self._priorities_out = self._priorities_out, defaultdict(dict)
            for owner, batch in out.items():
                pipe.rpush(self.keys.inbox(owner), json.dumps(["priorities", batch], separators=(",", ":")))
            forward, self._forward_out = self._forward_out, defaultdict(dict)
            for owner, records in forward.items():
                pipe.rpush(self.keys.inbox(owner), json.dumps(["forwarded", records], separators=(",", ":")))
            try:
                _, members, inbox, pending, _, _, used, has_config, *_ = await pipe.execute()
            except BaseException:
                for owner, batch in out.items():   # sent with the next heartbeat (twice is harmless)
                    for host, totals in batch.items():
                        self._priorities_out[owner].setdefault(host, {}).update(totals)
                for owner, records in forward.items():
                    for host, recs in records.items():
                        self._forward_out[owner].setdefault(host, []).extend(recs)
                raise
        self._last_beat = now
        self.budget_used = int(used or 0)
        if has_config:
            self._had_config = True
        elif self._had_config and not self._vanished:
            # the crawl's settings are gone: Redis restarted without persistence, was flushed, or
            # the crawl's keys were deleted. Its seen set and queues went with them: going on would
            # fetch pages again and end early with exit status 0.
            self._vanished = True
            self.local._wake.set()
            return   # (nothing more from it: no hand-offs or hosts taken while the crawl stops)
        members = sorted(m.decode() if isinstance(m, bytes) else m for m in members)
        if self.worker not in members:
            members = sorted([*members, self.worker])
        if members != self.members:
            _debug(f"members {members}")
            self.members = members
            self.ring = Ring(members)
            for host in list(self.local.held):
                if self.ring.owner(host) != self.worker:
                    self._lost(host)
            self.wanted = {h for h in self.wanted if self.ring.owner(h) == self.worker}
            self._stale = {h: t for h, t in self._stale.items() if h in self.wanted}
            self._rescan = True
        for raw in inbox or ():
            batch = json.loads(raw)
            if not isinstance(batch, list):
                self._receive(batch)
            elif batch[0] == "forwarded":   # ["forwarded", {host: [record, ...]}]
                self._receive(batch[1], forwarded=True)
            else:                           # ["priorities", {host: {url: total}}]
                self._receive_priorities(batch[1])
        self.pending = int(pending or 0)
        if self.pending == 0:
            self.local._wake.set()
        elif self._idle_pending[0] == self.pending:
            self._idle_pending = (self.pending, self._idle_pending[1] + 1)
        else:
            self._idle_pending = (self.pending, 0)
        if time.monotonic() >= self._offset_next:   # last: the heartbeat's answers are used by now
            await self._read_clock()

    async def _read_clock(self) -> None:
        """Redis's clock against this machine's (:attr:`_offset`, for :meth:`_acquire`): read with
        the heartbeats every few seconds, the quickest round trip lately kept (the estimate is off
        by half of it at most); a slow one is taken only when it is all there is. (Its own call: a
        cluster pipeline refuses TIME.)"""
        sent = time.time()
        sec, usec = await self.client.time()
        back = time.time()
        rtt = back - sent
        self._offset_rtt = min(self._offset_rtt * 1.5, 60.0)
        if rtt <= self._offset_rtt:
            self._offset, self._offset_rtt = sec + usec / 1e6 - (sent + back) / 2, rtt
        self._offset_next = time.monotonic() + (0.5 if rtt > 0.05 else 5.0)

    def _figures(self, now: float) -> dict[str, Any]:
        return {"fetched": self.fetched, "queued": self.queued, "in_flight": self.in_flight,
                "hosts": len(self.local.held), "at": now, "started": self._started, "handed_off": self.handed_off,
                "moved_in": self.moved_in, "moved_out": self.moved_out, "fenced": self.fenced}

    def _receive(self, batch: dict[str, list[str]], forwarded: bool = False) -> None:
        """URLs another worker found for hosts the ring gives us. Those of a host the ring gives
        another worker now (the sender's ring was older, or this one's is) go on to that worker
        with the next heartbeat, once: its owner may hold the host already, and it loads a host's
        queue from Redis only when it leases the host (else they waited for the whole cluster to
        go idle: hold-out runs fetched such URLs 30 s late, at the end of the crawl)."""
        for host, recs in batch.items():
            owner = self.ring.owner(host)
            if owner != self.worker:
                if not forwarded:
                    self._forward_out[owner].setdefault(host, []).extend(recs)
                continue   # once forwarded, the owner loads it from the host's queue (_resync_held)
            if host in self.local.held:
                if host not in self.local.leaving:
                    self.local.admit([_decode(r)[0] for r in recs])
            else:
                self.wanted.add(host)

    async def _renew(self) -> None:
        sent = time.monotonic()
        if not self.tokens:
            self._renew_sent = sent
            return
        ttl = int(self.lease_ttl * 1000)
        hosts = list(self.tokens)
        replies = await self._scripts(_RENEW, [
            (h, [self.keys.host(h, "lease"), self.keys.host(h, "pol"), self.keys.host(h, "tok")],
             [self.tokens[h], ttl, self._pol(h)]) for h in hosts])
        for h, ok in zip(hosts, replies):
            if not ok:
                _debug(f"renewal failed on {h}")
                self._lost(h)
        self._renew_sent = sent   # the leases still ours hold until sent + ttl
        self.local._wake.set()

    async def _scan(self) -> None:
        """Lease every host the ring gives us that has URLs in Redis; and, when every worker
        seems idle with URLs still counted pending, count them exactly (a count a crash left too
        high is set right)."""
        self._rescan = False
        mine = [h for h in await self._all_hosts()
                if self.ring.owner(h) == self.worker and h not in self.local.held]
        if mine:
            async with self.client.pipeline(transaction=False) as pipe:
                for h in mine:
                    pipe.hlen(self.keys.host(h, "q"))
                lens = await pipe.execute()
            await self._acquire([h for h, n in zip(mine, lens) if n])
        if self.wanted:
            await self._acquire(list(self.wanted))
        if self._idle_pending[1] >= 6 and self.pending and not self.local._leases:
            await self._resync_held()
            await self._check_pending(self.pending)

    async def _resync_held(self) -> None:
        """A safety net for liveness: a host this worker holds with nothing local to do, nothing
        in flight and nothing unwritten, whose queue in Redis is not empty (a hand-off lost to an
        error), is loaded again from Redis."""
        local = self.local
        busy = {b[0] for b in self._buf} | {b[0] for buf in self._writing for b in buf}
        idle = [k for k in local.held if k not in local.leaving and k not in busy
                and not local.hosts[k].has_work() and not local.hosts[k].clock.active]
        if not idle:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for k in idle:
                pipe.hgetall(self.keys.host(k, "q"))
            got = await pipe.execute()
        for k, records in zip(idle, got):
            if records and k in local.held and not local.hosts[k].has_work():
                _debug(f"resync {k}: {len(records)} URLs")
                self._load(k, [x for pair in records.items() for x in pair], None)

    async def _all_hosts(self) -> list[str]:
        return [h.decode() if isinstance(h, bytes) else h async for h in self.client.sscan_iter(self.keys.hosts, count=1000)]

    async def _check_pending(self, seen: int) -> None:
        hosts = await self._all_hosts()
        total = 0
        async with self.client.pipeline(transaction=False) as pipe:
            for h in hosts:
                pipe.hlen(self.keys.host(h, "q"))
            total = sum(await pipe.execute())
        if total == 0:
            await self._scripts(_ZERO_IF, [("", [self.keys.pending], [seen])])
        self._idle_pending = (seen, 0)

    async def aclose(self) -> None:
        """Leave the crawl: write what is done, release every lease, leave the ring."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            watcher, self._watcher = self._watcher, None
            if watcher is not None:
                watcher.cancel()
            task.cancel()
            await asyncio.gather(task, *([watcher] if watcher else []), return_exceptions=True)
        try:
            # The store is closed by now (and committed everything done): write those URLs, then
            # release every lease with nothing in flight (an abandoned URL's host waits for its
            # lease to expire, so its politeness holds), without touching the local database.
            await self.flush(release=False)
            local = self.local
            free = [k for k in self.tokens if not local.hosts[k].clock.active]
            await self._scripts(_RELEASE, [
                (k, [self.keys.host(k, "lease"), self.keys.host(k, "pol"), self.keys.host(k, "tok")],
                 [self.tokens[k], self._pol(k)]) for k in free])
            figures = self._figures(time.time())
            figures["hosts"] = 0
            await self.client.hset(self.keys.stats(self.worker), mapping=figures)
            await self.client.zadd(self.keys.members, {self.worker: 0})   # gone: kept for stats --redis
        except AWAY as exc:
            _say(f"could not leave the crawl cleanly ({exc}); its leases expire in {self.lease_ttl:g} s")

    async def _retrying(self, fn, *args, lost_reply_ok: bool = True, single: bool = False):
        """Call ``fn``; while Redis is unreachable (down, restarting), say so once and try again
        with backoff. A call whose reply was lost may have run: retried, the admission script
        finds its URLs seen and queued already (their owners load them from their hosts' queues:
        :meth:`_resync_held`), an acquisition finds the lease its own. With ``lost_reply_ok``
        False only a refused connection is retried (nothing was sent), and, for a ``single``
        command (one slot), a cluster's answer that it ran nothing (:data:`NOT_RUN`: a pipeline
        over several slots may have run on the others)."""
        wait = 0.2
        while True:
            try:
                result = await fn(*args)
            except AWAY as exc:
                if self._stopped or (not lost_reply_ok and not (single and isinstance(exc, NOT_RUN))
                                     and "connecting to" not in str(exc)):
                    raise
                if self._redis_down_since is None:
                    self._redis_down_since = time.monotonic()
                    _say(f"Redis unreachable ({exc}); retrying")
                await asyncio.sleep(wait)
                wait = min(wait * 2, 5.0)
                continue
            if self._redis_down_since is not None:
                self._back()
            return result


_DEBUG = bool(os.environ.get("SKITTER_DIST_DEBUG"))


def _debug(message: str) -> None:
    if _DEBUG:
        import sys

        print(f"{time.time():.3f} {os.getpid()} {message}", file=sys.stderr, flush=True)


def _say(message: str) -> None:
    import sys

    print(f"skitter: {message}", file=sys.stderr, flush=True)
