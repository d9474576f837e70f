"""RFC 9309 robots.txt rules: parsing and matching, pure (no I/O).

The parser follows RFC 9309 and, where the RFC leaves room, the behaviour of Google's reference
parser (github.com/google/robotstxt), so that a file means to skitter what it means to the
crawlers its author tested it with:

* Lines end in CR, LF or CRLF; a UTF-8 byte order mark is skipped; ``#`` starts a comment;
  lines longer than Google's limit (16663 octets) are cut there.
* Keys are case-insensitive and recognised by prefix, with Google's list of frequent typos
  ("dissallow", "useragent", ...); a missing colon is tolerated when the line is exactly
  ``key value``. Unknown lines are ignored and, like blank lines, do not end a group.
* Groups (RFC 9309 2.1): consecutive user-agent lines open one group; a user-agent line that
  follows a rule starts a new group. All groups naming our product token are merged (2.2.1);
  only if there is none, the ``*`` groups apply; rules before any user-agent line are ignored.
* Matching (2.2.2): the rule with the longest pattern wins, Allow wins a tie; ``*`` matches
  any run of characters and a final ``$`` anchors the end (2.2.3). Patterns and URL paths are
  compared in one percent-encoded form (2.2.2): non-ASCII octets encoded, hex digits upper
  case, escaped unreserved characters decoded (``%62`` -> ``b``); a literal ``*`` or ``$`` in
  the URL is compared as ``%2A`` / ``%24`` so that a rule can name it that way (2.2.3).
* ``/robots.txt`` itself is always allowed (2.2.2); only the first 500 KiB are parsed (2.5).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

__all__ = ["MAX_BYTES", "RobotsRules", "product_token"]

#: RFC 9309 2.5: crawlers MUST parse at least 500 KiB; what follows is ignored.
MAX_BYTES = 500 * 1024
#: Google's reader keeps at most 2083 * 8 - 1 octets of a line (the rest of the line is lost).
MAX_LINE_BYTES = 2083 * 8 - 1

_BOM = b"\xef\xbb\xbf"
#: Up to this many rules `allowed` tries them in turn; above, it goes through an index.
_LINEAR_MAX = 24
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEXDIGITS = frozenset(b"0123456789abcdefABCDEF")
#: RFC 9309 2.2.1: a product token is made of a-z, A-Z, "_" and "-".
_TOKEN = re.compile(r"[A-Za-z_-]+")
_TOKEN_PREFIX = re.compile(rb"[A-Za-z_-]+")
_NO_COLON = re.compile(rb"([^ \t]+)[ \t]+([^ \t]+)")
#: A path needs the slow normalisation only if it holds one of these.
_PATH_SPECIAL = re.compile(r"[^\x21-\x7e]|[%*$]")

# Keys are matched as case-insensitive prefixes, as Google's parser does (typos included).
_USER_AGENT_KEYS = (b"user-agent", b"useragent", b"user agent")
_ALLOW_KEYS = (b"allow",)
_DISALLOW_KEYS = (b"disallow", b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw")
_SITEMAP_KEYS = (b"sitemap", b"site-map")
_CRAWL_DELAY_KEYS = (b"crawl-delay", b"crawldelay")


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent string, matched against ``user-agent:`` lines.

    ``"skitter/0.1.0 (+https://x)"`` -> ``"skitter"``: the text before the first ``/``, or the
    whole string when there is none. A token that is not made of ``[A-Za-z_-]`` only (for
    instance ``"Foo Bar"``) is not a valid product token (RFC 9309 2.2.1) and matches no named
    group, only ``*`` -- as in Google's parser.
    """
    return user_agent.split("/", 1)[0].strip()


def _normalise(raw: bytes, *, pattern: bool) -> str:
    """The canonical percent-encoded form of a path or a pattern (RFC 9309 2.2.2).

    Octets outside printable ASCII are %-encoded; ``%xx`` escapes get upper-case hex digits
    and are decoded when they stand for an unreserved character (RFC 3986 2.3). In a path,
    ``*`` and ``$`` become ``%2A`` and ``%24`` (they are special only in patterns, 2.2.3); in a
    pattern, ``*`` stays a wildcard and ``$`` is an anchor only as the last character.
    """
    out: list[str] = []
    n = len(raw)
    i = 0
    while i < n:
        b = raw[i]
        if b == 0x25 and i + 2 < n and raw[i + 1] in _HEXDIGITS and raw[i + 2] in _HEXDIGITS:
            value = int(raw[i + 1 : i + 3], 16)
            out.append(chr(value) if value in _UNRESERVED else f"%{value:02X}")
            i += 3
            continue
        if b <= 0x20 or b >= 0x7F:
            out.append(f"%{b:02X}")
        elif b == 0x2A and not pattern:  # '*'
            out.append("%2A")
        elif b == 0x24 and not (pattern and i == n - 1):  # '$' (an anchor only at the end)
            out.append("%24")
        else:
            out.append(chr(b))
        i += 1
    return "".join(out)


def _path_and_query(url: str) -> str:
    """Path, params and query of ``url`` (absolute, scheme-relative or a path); ``/`` if none.

    A port of Google's ``GetPathParamsQuery``: the fragment is dropped, an empty path is ``/``.
    """
    search_start = 2 if url.startswith("//") else 0
    early_path = _find_first_of(url, "/?;", search_start)
    protocol_end = url.find("://", search_start)
    if protocol_end == -1 or (early_path != -1 and early_path < protocol_end):
        protocol_end = search_start
    else:
        protocol_end += 3
    path_start = _find_first_of(url, "/?;", protocol_end)
    if path_start == -1:
        return "/"
    hash_pos = url.find("#", search_start)
    if hash_pos != -1 and hash_pos < path_start:
        return "/"
    path = url[path_start:] if hash_pos == -1 else url[path_start:hash_pos]
    return path if path[0] == "/" else "/" + path


def _find_first_of(s: str, chars: str, start: int) -> int:
    best = -1
    for c in chars:
        i = s.find(c, start)
        if i != -1 and (best == -1 or i < best):
            best = i
    return best


class _Rule:
    """One Allow/Disallow line, compiled once.

    ``priority`` is the length of the normalised pattern ("the most octets", RFC 9309 2.2.2),
    so a pattern counts the same however it is written: ``/ツ`` and ``/%E3%83%84`` both count
    10, ``/%62`` counts 2 (``/b``) and a literal ``$`` counts 3 (``%24``, see 2.2.3).
    Matching is a prefix test for plain patterns and a left-to-right scan of the ``*``-separated
    pieces otherwise: taking each piece at its leftmost position is enough for globs with only
    ``*``, so there is no backtracking and no regex blow-up on hostile patterns.
    """

    __slots__ = ("_anchored", "_pieces", "allow", "head", "pattern", "priority")

    def __init__(self, pattern: str, allow: bool) -> None:
        self.pattern = pattern
        self.allow = allow
        self.priority = len(pattern)
        self._anchored = pattern.endswith("$")
        body = pattern[:-1] if self._anchored else pattern
        self._pieces = tuple(body.split("*"))
        #: The literal text every matching path starts with (the part before the first '*').
        self.head = self._pieces[0]

    def matches(self, path: str) -> bool:
        pieces = self._pieces
        first = pieces[0]
        if not path.startswith(first):
            return False
        if len(pieces) == 1:
            return len(path) == len(first) if self._anchored else True
        pos = len(first)
        for piece in pieces[1:-1]:
            pos = path.find(piece, pos)
            if pos == -1:
                return False
            pos += len(piece)
        last = pieces[-1]
        if self._anchored:
            return len(path) - len(last) >= pos and path.endswith(last)
        return not last or path.find(last, pos) != -1

    def __repr__(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"


def _sort_key(rule: _Rule) -> tuple[int, bool]:
    # Longest pattern first; on a tie Allow (True) before Disallow (RFC 9309 2.2.2).
    return (-rule.priority, not rule.allow)


class RobotsRules:
    """The rules of one robots.txt for one product token.

    ``reason`` is None for a parsed file, ``"unavailable"`` when the file could not be had
    because of a 4xx (allow all, RFC 9309 2.3.1.3) and ``"unreachable"`` for 5xx, network
    errors and timeouts (disallow all, 2.3.1.4). ``detail`` says what happened then (the fetch's
    error, or the status), for the records of the URLs it stops.
    """

    __slots__ = ("_head_lengths", "_index", "_rules", "crawl_delay", "detail", "reason", "sitemaps")

    def __init__(
        self,
        rules: Iterable[_Rule] = (),
        *,
        crawl_delay: float | None = None,
        sitemaps: tuple[str, ...] = (),
        reason: str | None = None,
        detail: str | None = None,
    ) -> None:
        self._rules: tuple[_Rule, ...] = tuple(sorted(rules, key=_sort_key))
        # Many rules: index them by head so that `allowed` only tries the rules whose head is a
        # prefix of the path -- one dict look-up per distinct head length, not one per rule.
        self._index: dict[str, list[_Rule]] | None = None
        self._head_lengths: tuple[int, ...] = ()
        if len(self._rules) > _LINEAR_MAX:
            index: dict[str, list[_Rule]] = {}
            for rule in self._rules:  # buckets keep the sorted order
                index.setdefault(rule.head, []).append(rule)
            self._index = index
            self._head_lengths = tuple(sorted({len(head) for head in index}))
        self.crawl_delay = crawl_delay
        self.sitemaps = sitemaps
        self.reason = reason
        self.detail = detail

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def allow_all(cls, reason: str | None = None) -> RobotsRules:
        return cls(reason=reason)

    @classmethod
    def disallow_all(cls, reason: str | None = None, detail: str | None = None) -> RobotsRules:
        return cls([_Rule("/", allow=False)], reason=reason, detail=detail)

    @classmethod
    def parse(cls, body: bytes | str, user_agent: str, *, max_bytes: int = MAX_BYTES) -> RobotsRules:
        """Parse a robots.txt body for ``user_agent`` (a User-Agent string or a product token).

        Never raises: garbage lines are ignored. Only the first ``max_bytes`` octets are read
        (RFC 9309 2.5); a line cut by that limit is dropped rather than read half.
        """
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
        if len(data) > max_bytes:
            if data[max_bytes : max_bytes + 1] in (b"\n", b"\r"):
                data = data[:max_bytes]
            else:
                cut = max(data.rfind(b"\n", 0, max_bytes), data.rfind(b"\r", 0, max_bytes))
                data = data[: cut + 1]
        # A UTF-8 byte order mark (or, like Google, the start of one) is skipped.
        skip = 0
        while skip < 3 and skip < len(data) and data[skip] == _BOM[skip]:
            skip += 1
        if skip:
            data = data[skip:]

        ours = product_token(user_agent)
        # An invalid token (empty, "Foo Bar", non-ASCII) can only ever get the "*" group.
        token = ours.lower().encode("ascii") if _TOKEN.fullmatch(ours) else None

        specific: list[_Rule] = []
        general: list[_Rule] = []
        specific_delay: float | None = None
        general_delay: float | None = None
        sitemaps: list[str] = []
        # The state machine of Google's RobotsMatcher: the agents of the group being read
        # (global "*" and/or ours) and whether a rule has been seen since its user-agent lines.
        in_global = in_specific = seen_rule = False
        ever_specific = False

        for line in data.splitlines():
            kv = _key_value(line[:MAX_LINE_BYTES])
            if kv is None:
                continue
            key, value = kv
            lkey = key.lower()
            if lkey.startswith(_USER_AGENT_KEYS):
                if seen_rule:  # a user-agent line after rules starts a new group (RFC 9309 2.1)
                    in_global = in_specific = seen_rule = False
                # Google: "*" followed by whitespace and anything is still the global agent.
                if value[:1] == b"*" and (len(value) == 1 or value[1:2].isspace()):
                    in_global = True
                elif token is not None:
                    # The line's product token: its leading [A-Za-z_-] run ("FooBot/1.2",
                    # "Foo Bar" -> "Foo"), compared case-insensitively (2.2.1).
                    name = _TOKEN_PREFIX.match(value)
                    if name is not None and name.group().lower() == token:
                        in_specific = ever_specific = True
            elif lkey.startswith(_ALLOW_KEYS) or lkey.startswith(_DISALLOW_KEYS):
                if not (in_global or in_specific):
                    continue  # a rule outside any group
                seen_rule = True
                allow = lkey.startswith(_ALLOW_KEYS)
                for rule in _rules_from(value, allow):
                    if in_specific:
                        specific.append(rule)
                    if in_global:
                        general.append(rule)
            elif lkey.startswith(_SITEMAP_KEYS):
                # Sitemap lines belong to no group (RFC 9309 2.2.4, "other records").
                if value:
                    sitemap = value.decode("utf-8", "replace")
                    if sitemap not in sitemaps:
                        sitemaps.append(sitemap)
            elif lkey.startswith(_CRAWL_DELAY_KEYS):
                # Not in RFC 9309; read as a member of the group, like a rule (first one wins).
                if not (in_global or in_specific):
                    continue
                seen_rule = True
                delay = _parse_delay(value)
                if delay is not None:
                    if in_specific and specific_delay is None:
                        specific_delay = delay
                    if in_global and general_delay is None:
                        general_delay = delay
            # Anything else is ignored and, as in Google's parser, does not end the group.

        if ever_specific:
            rules, delay = specific, specific_delay
        else:
            rules, delay = general, general_delay
        unique: dict[tuple[str, bool], _Rule] = {}
        for rule in rules:
            unique.setdefault((rule.pattern, rule.allow), rule)
        return cls(unique.values(), crawl_delay=delay, sitemaps=tuple(sitemaps))

    # -- queries --------------------------------------------------------------------------

    def allowed(self, url: str) -> bool:
        """May ``url`` (absolute, or a path with optional query) be fetched?"""
        path = _path_and_query(url)
        # RFC 9309 2.2.2: "The /robots.txt URI is implicitly allowed."
        if path == "/robots.txt" or path.startswith("/robots.txt?"):
            return True
        rules = self._rules
        if not rules:
            return True
        if _PATH_SPECIAL.search(path):
            path = _normalise(path.encode("utf-8", "surrogatepass"), pattern=False)
        if self._index is None:
            for rule in rules:  # sorted: the first match is the longest, Allow first on ties
                if rule.matches(path):
                    return rule.allow
            return True
        return self._allowed_indexed(path, self._index)

    def _allowed_indexed(self, path: str, index: dict[str, list[_Rule]]) -> bool:
        """``allowed`` for many rules: the best match over the buckets of the path's prefixes."""
        best_priority, best_allow = 0, True  # priority 0: no match yet (patterns are not empty)
        n = len(path)
        for length in self._head_lengths:
            if length > n:
                break
            bucket = index.get(path[:length])
            if bucket is None:
                continue
            for rule in bucket:
                priority = rule.priority
                # Stop at the first rule that cannot beat the best match so far: the rest of
                # the bucket (sorted) cannot either.
                if priority < best_priority or (priority == best_priority and (best_allow or not rule.allow)):
                    break
                if rule.matches(path):
                    best_priority, best_allow = priority, rule.allow
                    break
        return best_allow

    @property
    def rules(self) -> tuple[tuple[bool, str], ...]:
        """The rules that apply, as ``(allow, pattern)``, in the order they are tried."""
        return tuple((r.allow, r.pattern) for r in self._rules)

    def __repr__(self) -> str:
        return (
            f"RobotsRules(rules={len(self._rules)}, crawl_delay={self.crawl_delay!r}, "
            f"sitemaps={len(self.sitemaps)}, reason={self.reason!r})"
        )


def _key_value(line: bytes) -> tuple[bytes, bytes] | None:
    """Split a line into (key, value) as Google's parser does, or None for a non-record."""
    comment = line.find(b"#")
    if comment != -1:
        line = line[:comment]
    line = line.strip()
    sep = line.find(b":")
    if sep == -1:
        # Google: a forgotten colon is accepted if the line is exactly "key value".
        m = _NO_COLON.fullmatch(line)
        if m is None:
            return None
        return m.group(1), m.group(2)
    key = line[:sep].strip()
    if not key:
        return None
    return key, line[sep + 1 :].strip()


def _rules_from(value: bytes, allow: bool) -> list[_Rule]:
    """The compiled rule(s) of one Allow/Disallow value; none for an empty value."""
    if not value:
        return []  # "Disallow:" with nothing after it disallows nothing.
    rules = [_Rule(_normalise(value, pattern=True), allow)]
    if allow:
        # Google: "Allow: /dir/index.htm[l]" also allows "/dir/" itself ("/dir/$").
        slash = value.rfind(b"/")
        if slash != -1 and value[slash:].startswith(b"/index.htm"):
            rules.append(_Rule(_normalise(value[: slash + 1] + b"$", pattern=True), allow))
    return rules


def _parse_delay(value: bytes) -> float | None:
    """A Crawl-delay value in seconds; None unless a finite, non-negative number."""
    words = value.split()
    if not words:
        return None
    try:
        delay = float(words[0])
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None
