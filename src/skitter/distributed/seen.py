"""The shared URL-seen set on Redis: a URL is admitted once in the whole cluster.

Layout (bench/redis_seen_bench.py measured the alternatives; docs/distributed.md, "The shared
URL-seen set"). A 64-bit URL fingerprint (:func:`skitter.urls.fingerprint`) is split into

- its top ``BUCKET_BITS`` (16) bits, which name a bucket: one Redis string key, and
- its low 48 bits, the *remainder*, stored in that string as 6 big-endian bytes, packed.

The top 16 bits are in the key and the low 48 in the value, so the set is exact: two URLs are
confused only if their 64-bit fingerprints collide, as in the local frontier's seen test. At
10 M URLs a bucket holds about 150 remainders (about 900 bytes) and the set takes 10.9 bytes a
URL of Redis memory (7.1 once a restart has loaded it), where a key per URL takes 100 and one
Redis set of 8-byte strings 68. Intset or listpack buckets are as small only until the largest
bucket passes the server's encoding limit (then that bucket grows several times); strings have
no such limit.

Buckets grow with APPEND, so what Redis replicates and writes to its AOF is the new remainders
only (a SET of the whole bucket would write about a kilobyte per URL at 10 M). The price is
APPEND's doubling of a string's allocation, the difference between 10.9 and 7.1 bytes; a
restarted server loads every bucket at its exact size.

A batch is tested in Lua scripts (EVALSHA), each atomic, so two workers adding the same URL at
once see it new exactly once. On a single Redis the whole batch is one script call. On a Redis
Cluster a script may touch keys of one hash slot only: the bucket keys carry a hash tag of their
top ``GROUP_BITS`` (8) bits, so the 65,536 buckets fall into 256 tag groups spread over the
slots, and a batch becomes one script call per slot it touches, pipelined (one round trip per
node). 256 groups, not more: redis-py's cluster pipeline costs tens of µs of CPU per command, and
256 still spread the set over the nodes of any cluster this crawler will see (about ±10% on
three nodes). Keys: ``<prefix>:seen:{<group>}<bucket>`` in hexadecimal, e.g. ``c1:seen:{ff}3f``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import NoScriptError

from .redis_url import as_lost, leaked

__all__ = ["RedisSeenSet"]

BUCKET_BITS = 16
GROUP_BITS = 8
WIDTH = 6                                   # bytes of a remainder: the low 48 bits
_SHIFT = 64 - BUCKET_BITS
_LOW_BITS = BUCKET_BITS - GROUP_BITS        # bucket bits after the hash tag's
_REMAINDER = (1 << (8 * WIDTH)) - 1
_U64 = (1 << 64) - 1

# The aligned search every seen-set script uses (these two and the Redis frontier's admission):
# string.find with plain=true finds any occurrence, and a match that straddles two remainders is
# skipped. ARGV[1] is the remainders' width.
HAS_LUA = """
local w = tonumber(ARGV[1])
local function has(bucket, rem)
  local at = string.find(bucket, rem, 1, true)
  while at and (at - 1) % w ~= 0 do
    at = string.find(bucket, rem, at + 1, true)
  end
  return at ~= nil
end
"""
_FIND = HAS_LUA + """
-- All buckets in a few MGETs, not a GET each (a call from Lua costs more than the search);
-- unpack() is limited by Lua's C stack, hence chunks.
local buckets = {}
for first = 1, #KEYS, 4000 do
  local got = redis.call('MGET', unpack(KEYS, first, math.min(#KEYS, first + 3999)))
  for i = 1, #got do buckets[first + i - 1] = got[i] or '' end
end
"""

ADD_SCRIPT = _FIND + """
-- KEYS[i]: a bucket; ARGV[i+1]: the remainders to add to it, concatenated (ARGV[1]: their width).
-- One APPEND per bucket; returns '1' (new) or '0' (seen) per remainder, in order.
local flags = {}
for i, key in ipairs(KEYS) do
  local bucket = buckets[i]
  local before = #bucket
  local rems = ARGV[i + 1]
  for j = 1, #rems, w do
    local rem = string.sub(rems, j, j + w - 1)
    if has(bucket, rem) then
      flags[#flags + 1] = '0'
    else
      bucket = bucket .. rem
      flags[#flags + 1] = '1'
    end
  end
  if #bucket > before then
    redis.call('APPEND', key, string.sub(bucket, before + 1))
  end
end
return table.concat(flags)
"""

CONTAINS_SCRIPT = _FIND + """
-- As the add script, reading only: '1' where the remainder is in its bucket.
local flags = {}
for i, key in ipairs(KEYS) do
  local bucket = buckets[i]
  local rems = ARGV[i + 1]
  for j = 1, #rems, w do
    flags[#flags + 1] = has(bucket, string.sub(rems, j, j + w - 1)) and '1' or '0'
  end
end
return table.concat(flags)
"""


class _Script(NamedTuple):
    """A Lua script called by SHA in pipelines and loaded on a NOSCRIPT answer (a new server, a
    restarted one, a cluster node that never saw it): redis-py's ``register_script`` does that
    for single calls only, while in a pipeline a NOSCRIPT is one command's result."""

    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> _Script:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


_ADD = _Script.of(ADD_SCRIPT)
_CONTAINS = _Script.of(CONTAINS_SCRIPT)


class _Call(NamedTuple):
    """One script call: its bucket keys, its arguments, and the batch positions of its flags."""

    keys: list[str]
    args: list[bytes | int]
    positions: list[int]


class RedisSeenSet:
    """Exact set of 64-bit URL fingerprints in Redis, shared by every worker of a crawl.

    ``client`` is a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster`` (see
    :func:`skitter.distributed.redis_url.connect`); ``prefix`` names the crawl's keys and may
    not contain braces (they would change the hash tag).
    """

    def __init__(self, client: Redis | RedisCluster, prefix: str) -> None:
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(f"a key prefix is non-empty and has no braces, got {prefix!r}")
        self.client = client
        self.prefix = prefix
        self._cluster = isinstance(client, RedisCluster)
        self._slot_of_group = [key_slot(b"{%x}" % g) for g in range(1 << GROUP_BITS)]

    def key(self, bucket: int) -> str:
        """The Redis key of a bucket (its hash tag is the bucket's group)."""
        return f"{self.prefix}:seen:{{{bucket >> _LOW_BITS:x}}}{bucket & ((1 << _LOW_BITS) - 1):x}"

    async def add_many(self, fps: Sequence[int]) -> list[bool]:
        """Add fingerprints (signed or unsigned 64-bit); True for each one not seen before.
        A fingerprint repeated in ``fps`` is new at its first place only. Batches of some
        thousands: a script holds the server while it runs (about 0.1 s per 10,000 here)."""
        return await self._run(_ADD, fps)

    async def contains_many(self, fps: Sequence[int]) -> list[bool]:
        """Whether each fingerprint is in the set (nothing is added)."""
        return await self._run(_CONTAINS, fps)

    # --- internals --------------------------------------------------------------------------

    async def _run(self, script: _Script, fps: Sequence[int]) -> list[bool]:
        calls = self._plan(fps)
        out = [False] * len(fps)
        for call, flags in zip(calls, await self._call(script, calls)):
            for pos, flag in zip(call.positions, flags):
                out[pos] = flag == 49   # b"1"
        return out

    def _plan(self, fps: Sequence[int]) -> list[_Call]:
        """The script calls for a batch: one on a single Redis, one per hash slot on a cluster."""
        by_bucket: dict[int, list[int]] = {}
        for pos, fp in enumerate(fps):
            by_bucket.setdefault((fp & _U64) >> _SHIFT, []).append(pos)
        by_slot: dict[int, list[int]] = {}
        for bucket in by_bucket:
            slot = self._slot_of_group[bucket >> _LOW_BITS] if self._cluster else 0
            by_slot.setdefault(slot, []).append(bucket)
        calls = []
        for buckets in by_slot.values():
            rems = [b"".join([(fps[p] & _REMAINDER).to_bytes(WIDTH, "big") for p in by_bucket[b]])
                    for b in buckets]
            calls.append(_Call(keys=[self.key(b) for b in buckets], args=[WIDTH, *rems],
                               positions=[p for b in buckets for p in by_bucket[b]]))
        return calls

    async def _call(self, script: _Script, calls: list[_Call]) -> list[bytes]:
        """Run the calls in one pipeline; those answered NOSCRIPT run again once the script is
        loaded (on every primary of a cluster): a NOSCRIPT call changed nothing."""
        replies = await self._pipeline(script, calls)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:
            await self.client.script_load(script.source)
            again = await self._pipeline(script, [calls[i] for i in missing])
            for i, reply in zip(missing, again):
                replies[i] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise as_lost(reply)
        return replies

    async def _pipeline(self, script: _Script, calls: list[_Call]) -> list:
        if not calls:
            return []
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for call in calls:
                    # execute_command, as redis-py's cluster pipeline refuses .evalsha() for fear of
                    # NOSCRIPT, which _call handles; the cluster routes EVALSHA by its first key.
                    pipe.execute_command("EVALSHA", script.sha, len(call.keys), *call.keys, *call.args)
                return await pipe.execute(raise_on_error=False)
        except (AttributeError, TypeError) as exc:   # (a connection torn down: redis_url.leaked)
            if not leaked(exc):
                raise
            raise as_lost(exc) from exc
