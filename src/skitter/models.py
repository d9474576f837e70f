"""Pure records passed between the stages of the crawl. No I/O here.

The data flow (docs/architecture.md) in records:

    Candidate ──fetch──▶ FetchResult ──parse──▶ Page (with Links) ──filter/score──▶ Candidate
        ▲                                                                              │
        └──────────── frontier.done(candidate, Outcome) ◀──────────────────────────────┘
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter


def fast_pickle(cls):
    """Pickle as ``cls(*fields)``: a third of the time of the dataclass default (``__getstate__``
    walking ``fields()``) for the records the worker processes send back and forth."""
    get = attrgetter(*(f.name for f in fields(cls)))
    cls.__reduce__ = lambda self: (cls, get(self))
    return cls


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link of a page, with the attributes of seed 004.

    ``visibility``: 3 if the anchor is bold and italic, 2 if bold or italic, else 1.
    ``position``: 3 if the link's first word is in the first third of the page's text,
    2 in the middle third, 1 in the last third.
    ``distance``: 1 if the link stays on the page's host, 5 otherwise.
    """

    url: str
    anchor: str = ""
    context: str = ""
    visibility: int = 1
    position: int = 3
    distance: int = 1
    nofollow: bool = False


_LINK_FIELDS = ("url", "anchor", "context", "visibility", "position", "distance", "nofollow")
assert tuple(f.name for f in fields(Link)) == _LINK_FIELDS, "new_link sets exactly these slots"
_set_url, _set_anchor, _set_context, _set_visibility, _set_position, _set_distance, _set_nofollow = (
    Link.__dict__[name].__set__ for name in _LINK_FIELDS)


def new_link(url: str, anchor: str = "", context: str = "", visibility: int = 1, position: int = 3,
             distance: int = 1, nofollow: bool = False) -> Link:
    """``Link(...)`` at half the cost: a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for every field; this sets the slots directly. The parser builds
    its links with it, and a pickled Link is rebuilt with it (a page's ~30 links took 34 µs to
    unpickle in the crawl process through ``__init__``)."""
    link = object.__new__(Link)
    _set_url(link, url)
    _set_anchor(link, anchor)
    _set_context(link, context)
    _set_visibility(link, visibility)
    _set_position(link, position)
    _set_distance(link, distance)
    _set_nofollow(link, nofollow)
    return link


_link_fields = attrgetter(*_LINK_FIELDS)
Link.__reduce__ = lambda self: (new_link, _link_fields(self))   # type: ignore[method-assign]


@fast_pickle
@dataclass(slots=True)
class Page:
    """What the parser extracts from one HTML document."""

    title: str = ""
    description: str = ""
    keywords: str = ""
    headings: list[str] = field(default_factory=list)
    text: str = ""
    links: list[Link] = field(default_factory=list)
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    lang: str | None = None
    encoding: str | None = None
    main_start: int | None = None   # where the main text starts in ``text`` (None: not looked for)

    @property
    def outlinks(self) -> int:
        return len(self.links)


@fast_pickle
@dataclass(frozen=True, slots=True)
class Candidate:
    """A URL the frontier hands out (or takes in)."""

    url: str
    depth: int = 0
    parent: str | None = None
    priority: float = 0.0
    redirects: int = 0
    attempts: int = 0


@fast_pickle
@dataclass(slots=True)
class FetchResult:
    """The outcome of one HTTP request (one hop: redirects are not followed here).

    ``body`` is the decoded payload (transfer and content encodings removed, capped);
    ``raw_body`` is the payload as sent (content encoding kept) for the WARC record.
    ``error`` is set (and ``status`` may be None) when the request failed.
    ``elapsed`` is the whole call's wall time (name lookup, waiting for the event loop included);
    ``response_time`` the server's part as the HTTP client timed it: from the request sent to
    the response complete (None when no request was sent). The adaptive delay uses the latter.
    """

    url: str
    status: int | None = None
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = field(default=b"", repr=False)
    raw_body: bytes = field(default=b"", repr=False)
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    ip: str | None = None
    started: float = 0.0
    elapsed: float = 0.0
    error: str | None = None
    retryable: bool = False
    response_time: float | None = None

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_lines(self, name: str) -> str | None:
        """Every value of the header ``name``, one a line (None: there is none): for a field
        that may be repeated, such as X-Robots-Tag, whose field lines all count (RFC 9110 5.3)."""
        name = name.lower()
        values = [v for k, v in self.headers if k.lower() == name]
        return "\n".join(v.replace("\n", " ") for v in values) if values else None

    @property
    def content_type(self) -> str | None:
        value = self.header("content-type")
        if value is None:
            return None
        return value.split(";", 1)[0].strip().lower() or None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the crawl loop tells the frontier when it is done with a candidate it was handed.

    ``requested``: a request went to the host (False: decided without one, e.g. robots.txt
    disallows the URL; the host's politeness slot is given back). ``response_time``: the
    server's time (the adaptive delay). ``retry_after``: the host asked to wait this many seconds
    (429/503). ``crawl_delay``: robots.txt's Crawl-delay for the host, when it was just read (0:
    none). ``due``: the URL itself comes back at this time (seconds since the epoch: a retry, a
    page put back behind its host's robots.txt, a revisit); None: the URL is done. ``revisit``:
    that due time is the URL's next revisit (a recrawl's schedule), not a retry: when it falls due
    the URL takes turns with its host's new URLs instead of going before them all.
    """

    requested: bool = True
    response_time: float | None = None
    retry_after: float | None = None
    crawl_delay: float | None = None
    due: float | None = None
    revisit: bool = False
