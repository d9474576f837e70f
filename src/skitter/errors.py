"""One exception tree for skitter.

    SkitterError
    ├── UsageError                 bad input at the command line: one line, exit status 2
    │   ├── BadSeedError           a seed URL that is invalid or not http(s)
    │   ├── CrawlDirError          a crawl directory that cannot be written, or is corrupt
    │   ├── QuerySyntaxError       a search query that does not parse (column and caret line)
    │   └── RedisURLError          a --redis URL that does not parse (also a RedisError)
    ├── RedisError                 the shared Redis of a distributed crawl cannot be used: not
    │   │                          reachable, refuses the password, not answering: one line, exit 1
    │   └── RedisUnreachable       refused, unreachable, or no answer in time (not a password)
    └── FetchError                 one URL failed; recorded in the export's `error`, crawl goes on
        ├── DNSError               the host name does not resolve
        ├── ConnectError           refused, reset, unreachable
        ├── FetchTimeout           connect, read or total timeout
        ├── TLSError               certificate or handshake failure
        ├── ProtocolError          malformed HTTP, bad chunking, bad compression
        ├── BodyTooLarge           body (or its decompressed size) over the cap
        └── BlockedAddress         resolves to a private/loopback/link-local address not allowed

Each FetchError has a short ``code``; the export's ``error`` field is ``"<code>: <detail>"``
(see :meth:`FetchError.record`). The CLI prints ``skitter: error: <message>`` for a UsageError
and never a traceback.
"""

from __future__ import annotations


class SkitterError(Exception):
    """Base of every error skitter raises on purpose."""


class UsageError(SkitterError):
    """Bad input from the user: reported as one line, exit status 2."""

    exit_code = 2


class BadSeedError(UsageError):
    """A seed URL that cannot be parsed or is not http(s)."""


class CrawlDirError(UsageError):
    """The crawl directory cannot be created or written, or its database is corrupt."""


class QuerySyntaxError(UsageError):
    """A malformed search query. ``column`` is 1-based; ``str()`` is the message, then the query
    and a caret line under the place where it is wrong."""

    def __init__(self, message: str, query: str = "", position: int = 0) -> None:
        self.message = message
        self.query = query
        self.position = max(0, min(position, len(query)))
        self.column = self.position + 1
        super().__init__(message)

    def __str__(self) -> str:
        if not self.query:
            return f"bad query: {self.message}"
        line = self.query.replace("\n", " ").replace("\t", " ")
        return (f"bad query: {self.message} (column {self.column})\n"
                f"  {line}\n  {' ' * self.position}^")


class RedisError(SkitterError):
    """The Redis named by ``--redis`` cannot be used (``skitter.distributed.redis_url``). The
    message names the server with its password masked, and says what to check."""


class RedisUnreachable(RedisError):
    """The Redis cannot be reached: the connection refused or unreachable, or no answer in time
    (as against a wrong password or a bad URL). The web UI keeps this verdict a few seconds."""


class RedisURLError(RedisError, UsageError):
    """A ``--redis`` URL that is not ``redis://`` or ``rediss://`` with a host, a port and a
    database number that parse: bad input, so exit status 2."""


class FetchError(SkitterError):
    """A per-URL failure. ``retryable`` errors are retried with backoff."""

    code = "fetch"
    retryable = False

    def record(self) -> str:
        """The string stored in the export's ``error`` field."""
        detail = str(self).strip()
        return f"{self.code}: {detail}" if detail else self.code


class DNSError(FetchError):
    code = "dns"
    retryable = False


class ConnectError(FetchError):
    code = "connect"
    retryable = True


class FetchTimeout(FetchError):
    code = "timeout"
    retryable = True


class TLSError(FetchError):
    code = "tls"


class ProtocolError(FetchError):
    code = "protocol"


class BodyCutShort(ProtocolError):
    """The connection ended mid-body (a reset, or fewer bytes than Content-Length): transient
    like a refused connection, so retried; the last attempt's part is kept (WARC-Truncated)."""

    retryable = True


class UnaskedCoding(ProtocolError):
    """The body came in a compression the request did not accept (``br``, ``zstd``): read whole
    and archived as sent, but unreadable (RFC 9110 8.4.1). Not a cut body, not a dead server."""

    PREFIX = "protocol: content-encoding"

    def __init__(self, coding: str) -> None:
        super().__init__(f"content-encoding {coding} (not accepted, not decoded)")

    @classmethod
    def recorded(cls, error: str | None) -> bool:
        """Whether a fetch's recorded ``error`` is one of these."""
        return error is not None and error.startswith(cls.PREFIX)


class BodyTooLarge(FetchError):
    code = "too-large"


class BlockedAddress(FetchError):
    code = "blocked-address"
