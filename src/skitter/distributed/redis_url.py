"""``--redis URL`` -> a working asyncio Redis client, or one clear error line.

Accepted URLs::

    redis://HOST[:PORT][/DB]                     plain TCP, port 6379 and database 0 by default
    redis://:PASSWORD@HOST[:PORT][/DB]           with requirepass (percent-encode : @ / in it)
    redis://USER:PASSWORD@HOST[:PORT][/DB]       an ACL user (Redis 6+)
    rediss://...                                 the same over TLS, the certificate checked
                                                 against Python's trusted CAs (SSL_CERT_FILE and
                                                 SSL_CERT_DIR work, as for the fetcher)

Whether the server is one node of a Redis Cluster is asked of the server (``INFO cluster``), not
written in the URL: any node's URL gives a cluster client, which finds the other nodes itself.
A cluster has database 0 only. Nothing here logs or prints a password: messages name the server
as :func:`RedisTarget.redacted` does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import redis.exceptions as rex
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from ..errors import RedisError, RedisUnreachable, RedisURLError, UsageError

__all__ = ["RedisTarget", "parse_redis_url", "connect", "env_seconds"]

DEFAULT_PORT = 6379
CONNECT_TIMEOUT = 5.0
# The read timeout of a worker's client, set here because redis-py's default moved (none in
# redis-py 5, 5 s in 8.1): long enough for the largest reply a worker asks for (a host's whole queue,
# when it takes the host over: 150 MB for a million URLs), short enough that a Redis gone silent
# (a network that drops everything) is said and waited out within a minute, never hung on.
COMMAND_TIMEOUT = 60.0
FORMS = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or rediss://... for TLS"


@dataclass(frozen=True)
class RedisTarget:
    """What a ``--redis`` URL names. ``repr()`` and ``redacted`` never show the password."""

    host: str
    port: int = DEFAULT_PORT
    db: int = 0
    tls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def redacted(self) -> str:
        """The URL for messages: the password masked as ``***``."""
        auth = f"{self.username or ''}:***@" if self.password else (
            f"{self.username}@" if self.username else "")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'rediss' if self.tls else 'redis'}://{auth}{host}:{self.port}/{self.db}"

    @property
    def without_password(self) -> str:
        """The URL with no password in it (what a worker's crawl directory records)."""
        user = f"{quote(self.username, safe='')}@" if self.username else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'rediss' if self.tls else 'redis'}://{user}{host}:{self.port}/{self.db}"

    def client_options(self, timeout: float) -> dict[str, Any]:
        """Keyword arguments for ``redis.asyncio.Redis`` and ``RedisCluster`` (less ``db``)."""
        return {"host": self.host, "port": self.port, "username": self.username,
                "password": self.password, "ssl": self.tls, "socket_connect_timeout": timeout}


def parse_redis_url(url: str) -> RedisTarget:
    """Parse and check a ``--redis`` URL; raises :class:`RedisURLError` saying what is wrong."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:   # a port that is not a number in 0-65535, a bad IPv6 literal
        raise RedisURLError(f"bad --redis URL ({exc}); expected {FORMS}") from None
    if port == 0:   # (not the default port: a typo would otherwise join whatever listens on 6379)
        raise RedisURLError(f"bad --redis URL (port 0); expected {FORMS}")
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss"):
        raise RedisURLError(f"--redis wants {FORMS}, got a {scheme or 'scheme-less'} URL")
    if not parts.hostname:
        raise RedisURLError(f"--redis URL has no host; expected {FORMS}")
    if parts.query or parts.fragment:
        raise RedisURLError("--redis URL takes no ?query or #fragment; "
                            "TLS is rediss://, the password goes before the host")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise RedisURLError(f"--redis URL path must be a database number, got /{path}")
    return RedisTarget(host=parts.hostname, port=port or DEFAULT_PORT, db=int(path or 0),
                       tls=scheme == "rediss", username=unquote(parts.username or "") or None,
                       password=unquote(parts.password or "") or None)


async def connect(url: str, *, timeout: float = CONNECT_TIMEOUT,  # noqa: ASYNC109
                  command_timeout: float | None = None) -> Redis | RedisCluster:
    """A client for the Redis or Redis Cluster at ``url``, checked with a PING.

    Raises :class:`RedisURLError` for a malformed URL (or a database other than 0 on a
    cluster) and :class:`RedisError` when the server cannot be used: refused or unreachable,
    a TLS failure, a wrong or missing password, no answer within ``timeout`` seconds (those
    that say it cannot be reached are :class:`RedisUnreachable`). ``command_timeout``: the read
    timeout of the client returned, in seconds (default :data:`COMMAND_TIMEOUT`): a command
    unanswered that long is an outage to wait out, as a connection lost is.
    """
    target = parse_redis_url(url)   # (``timeout`` is the sockets', not an asyncio deadline)
    # Database 0, as a cluster refuses SELECT; a read timeout, as a server that accepts the
    # connection and never answers would otherwise hang here; no retries, which back off for
    # seconds (redis-py retries an AuthenticationError too). The client returned keeps
    # redis-py's retries and its read timeout (see command_timeout).
    probe = Redis(socket_timeout=timeout, retry=Retry(NoBackoff(), 0), **target.client_options(timeout))
    try:
        await probe.ping()
        cluster = (await probe.info("cluster")).get("cluster_enabled") == 1
    except rex.RedisError as exc:
        raise _explain(exc, target, timeout) from exc
    finally:
        await probe.aclose()
    if cluster and target.db:
        raise RedisURLError(f"{target.redacted} is a Redis Cluster, which has database 0 only: "
                            "drop the /DB from the URL")
    client: Redis | RedisCluster
    options = target.client_options(timeout)
    if command_timeout is None:   # (SKITTER_REDIS_COMMAND_TIMEOUT: the tests' shorter one)
        command_timeout = (env_seconds("SKITTER_REDIS_COMMAND_TIMEOUT", 1) or [COMMAND_TIMEOUT])[0]
    options["socket_timeout"] = command_timeout
    try:
        if cluster:
            client = RedisCluster(**options)
            await client.initialize()     # reads the slot map (CLUSTER SLOTS)
        else:
            client = Redis(db=target.db, **options)
            await client.ping()           # SELECT of a database the server does not have fails here
    except (rex.RedisError, rex.RedisClusterException) as exc:
        await client.aclose()
        raise _explain(exc, target, timeout) from exc
    return client


def env_seconds(name: str, count: int) -> list[float] | None:
    """The ``count`` comma-separated positive numbers of seconds in environment variable ``name``
    (the tests' shorter timings), None when it is unset or empty; a
    :class:`~skitter.errors.UsageError` naming the variable when it holds anything else."""
    raw = os.environ.get(name, "")
    if not raw:
        return None
    try:
        values = [float(x) for x in raw.split(",")]
    except ValueError:
        values = []
    if len(values) != count or not all(0 < v < float("inf") for v in values):
        what = "a number of seconds above 0" if count == 1 else f"{count} numbers of seconds above 0, comma-separated"
        raise UsageError(f"{name}={raw!r}: expected {what}")
    return values


# Redis away: the connection refused, lost or timed out, or a Redis Cluster short of a node (a node
# down or restarting answers CLUSTERDOWN or TRYAGAIN, a slot may have no node): wait for it and try
# again. The last three ran nothing, so even a call that must not run twice is tried again.
NOT_RUN = (rex.ClusterDownError, rex.TryAgainError, rex.SlotNotCoveredError)
AWAY = (rex.ConnectionError, rex.TimeoutError, OSError, *NOT_RUN)


def leaked(exc: BaseException) -> bool:
    """Whether ``exc`` is an error that redis-py let out of a connection whose transport was torn
    down under a write: ``AttributeError: 'NoneType' object has no attribute 'writelines'`` (the
    connection closed meanwhile), a TypeError of the transport (redis-py issue 4287), or uvloop's
    ``RuntimeError: unable to perform operation on <TCPTransport closed=True ...>; the handler is
    closed``: a cluster node killed while a pipeline was sent to it. The connection is lost, and
    the caller should treat it as :data:`AWAY`. Raised in redis-py's, asyncio's or uvloop's code,
    not in skitter's."""
    if not isinstance(exc, (AttributeError, TypeError, RuntimeError)) or exc.__traceback__ is None:
        return False
    if isinstance(exc, RuntimeError) and "closed" not in str(exc):
        return False
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename.replace("\\", "/")
    return "/redis/" in where or "/asyncio/" in where or "uvloop" in where


def _lost_writes_are_connection_errors() -> None:
    """Make redis-py's asyncio connections raise ``ConnectionError`` where a write meets a torn-down
    transport (:func:`leaked`), so that its own recovery (a cluster's slot map refreshed, a
    connection made again) and skitter's "Redis away" both see a lost connection. redis-py 8.1
    (issue 4287, closed without a release) let these out as AttributeError, TypeError or
    RuntimeError; a hold-out test's workers died of them when a cluster node was killed. Every
    write of a command goes through ``send_packed_command``."""
    from redis.asyncio.connection import AbstractConnection

    original = AbstractConnection.send_packed_command
    if getattr(original, "skitter_patched", False):
        return

    async def send_packed_command(self, command, check_health: bool = True) -> None:
        try:
            await original(self, command, check_health)
        except (AttributeError, TypeError, RuntimeError) as exc:
            if not leaked(exc):
                raise
            await self.disconnect(nowait=True)
            raise rex.ConnectionError(f"connection lost ({type(exc).__name__}: {exc})") from exc

    send_packed_command.skitter_patched = True  # type: ignore[attr-defined]
    AbstractConnection.send_packed_command = send_packed_command  # type: ignore[method-assign]


_lost_writes_are_connection_errors()


def as_lost(exc: BaseException) -> BaseException:
    """``exc``, or a ``redis.exceptions.ConnectionError`` for it if it is :func:`leaked`."""
    if leaked(exc):
        lost = rex.ConnectionError(f"connection lost ({type(exc).__name__}: {exc})")
        lost.__cause__ = exc
        return lost
    return exc


def explain_lost(exc: Exception, url: str) -> RedisUnreachable:
    """A connection error or timeout on a client :func:`connect` gave (one of :data:`AWAY`): one line."""
    where = parse_redis_url(url).redacted
    what = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, NOT_RUN):
        return RedisUnreachable(f"the Redis Cluster at {where} is short of a node: {what}")
    if isinstance(exc, rex.TimeoutError):
        return RedisUnreachable(f"Redis at {where} stopped answering: {what}")
    return RedisUnreachable(f"lost the connection to Redis at {where}: {what}")


def _explain(exc: Exception, target: RedisTarget, timeout: float) -> RedisError:
    """One line: which server, what went wrong, what to check."""
    where = target.redacted
    if isinstance(exc, rex.AuthenticationError):
        if target.password is None:
            return RedisError(f"Redis at {where} wants a password: give it in the URL as "
                              f"redis://:PASSWORD@{target.host}:{target.port}")
        return RedisError(f"Redis at {where} refused the password: {exc}")
    if isinstance(exc, rex.TimeoutError):
        return RedisUnreachable(f"Redis at {where} did not answer within {timeout:g} s")
    if isinstance(exc, rex.ConnectionError):
        return RedisUnreachable(f"cannot connect to Redis at {where}: {exc}")
    return RedisError(f"Redis at {where}: {exc}")
