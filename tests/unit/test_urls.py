"""Unit and property tests of skitter.urls (resolution, canonical form, fingerprints, hosts)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
import xxhash
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from skitter.urls import (
    URLError,
    canonicalize,
    fingerprint,
    host_key,
    host_of,
    in_scope,
    origin,
    path_depth_and_repeats,
    registrable_domain,
    resolve,
)

# -- purity ---------------------------------------------------------------------------------


def test_module_does_no_io_imports() -> None:
    code = (
        "import sys, skitter.urls\n"
        "bad = [m for m in ('asyncio', 'sqlite3', 'aiohttp', 'redis', 'socket') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_urlerror_is_a_valueerror() -> None:
    assert issubclass(URLError, ValueError)


# -- resolve --------------------------------------------------------------------------------

BASE = "http://example.com/a/b/c.html?x=1#frag"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("d.html", "http://example.com/a/b/d.html"),
        ("../d.html", "http://example.com/a/d.html"),
        ("../../../../d", "http://example.com/d"),
        ("/root", "http://example.com/root"),
        ("?q=2", "http://example.com/a/b/c.html?q=2"),
        ("#top", "http://example.com/a/b/c.html?x=1#top"),
        ("", "http://example.com/a/b/c.html?x=1"),
        ("//other.org/p", "http://other.org/p"),
        ("https://Secure.ORG", "https://secure.org/"),
        ("  \t d.html \n ", "http://example.com/a/b/d.html"),  # C0/space stripped
        ("d\t.h\ntml", "http://example.com/a/b/d.html"),  # tab/newline removed inside
        ("\\\\other.org\\x", "http://other.org/x"),  # backslashes are slashes in http
        ("mailto:a@b.c", "mailto:a@b.c"),  # other schemes resolve too
        ("javascript:void(0)", "javascript:void(0)"),
    ],
)
def test_resolve(href: str, expected: str) -> None:
    assert resolve(BASE, href) == expected


@pytest.mark.parametrize(
    ("base", "href"),
    [
        (BASE, "http://[::1"),
        (BASE, "http://exa mple.com/"),
        (BASE, "https://a:99999/"),
        ("not a url", "x"),
        ("", "x"),
        (BASE, "\ud800"),  # a lone surrogate cannot be UTF-8 encoded
        ("http://\udfff/", "x"),
    ],
)
def test_resolve_failure_returns_none(base: str, href: str) -> None:
    assert resolve(base, href) is None


def test_resolve_without_base_parses_absolute() -> None:
    assert resolve(None, "HTTP://Example.COM:80/a/./b/../c") == "http://example.com/a/c"
    assert resolve(None, "http:foo.com") == "http://foo.com/"  # no base: not relative
    assert resolve(None, "relative/path") is None
    assert resolve(None, "") is None


# -- canonicalize: the rules, one at a time ---------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # scheme and host lower-cased, empty path -> "/"
        ("HTTP://WWW.Example.COM", "http://www.example.com/"),
        ("HtTpS://Example.com/Path/CASE", "https://example.com/Path/CASE"),  # path case kept
        # IDNA to punycode
        ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
        ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://ＥＸＡＭＰＬＥ．ｃｏｍ/", "http://example.com/"),  # full-width, UTS 46 mapped
        ("http://faß.de/", "http://xn--fa-hia.de/"),  # nontransitional processing
        # IP addresses
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
        # ports: defaults dropped, others kept
        ("http://example.com:80/", "http://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:8080/", "http://example.com:8080/"),
        ("http://example.com:/", "http://example.com/"),
        ("http://example.com:0080/", "http://example.com/"),
        # fragments dropped
        ("http://example.com/a#section", "http://example.com/a"),
        ("http://example.com/a#", "http://example.com/a"),
        ("http://example.com/a?q=1#f?g=2", "http://example.com/a?q=1"),
        ("http://example.com/a#%41%7e", "http://example.com/a"),
        # userinfo dropped
        ("http://user:pass@example.com/a", "http://example.com/a"),
        ("http://user@example.com:8080/a", "http://example.com:8080/a"),
        ("http://a%40b:c@example.com/", "http://example.com/"),
        ("http://:@example.com/", "http://example.com/"),
        # dot segments
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/../../a", "http://example.com/a"),
        ("http://example.com/a/%2e%2E/b/%2E/c", "http://example.com/b/c"),
        ("http://example.com/a/.%2e/b", "http://example.com/b"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        # backslashes and whitespace, as WHATWG
        ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
        ("  http://example.com/a b\t\n  ", "http://example.com/a%20b"),
        # what is NOT normalised: index pages, www., trailing slash, path case
        ("http://example.com/index.html", "http://example.com/index.html"),
        ("http://example.com/dir/", "http://example.com/dir/"),
        ("http://example.com/dir", "http://example.com/dir"),
        ("http://www.example.com/", "http://www.example.com/"),
        ("http://example.com//a//b", "http://example.com//a//b"),
    ],
)
def test_canonicalize(url: str, expected: str) -> None:
    assert canonicalize(url) == expected
    assert canonicalize(expected) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # hex digits upper-cased
        ("http://e.com/a%2fb", "http://e.com/a%2Fb"),
        ("http://e.com/%c3%a9", "http://e.com/%C3%A9"),
        ("http://e.com/?q=%c3%a9%3d", "http://e.com/?q=%C3%A9%3D"),
        # unreserved characters decoded: ALPHA DIGIT - . _ ~
        ("http://e.com/%41%62%30%2D%2e%5F%7e", "http://e.com/Ab0-._~"),
        ("http://e.com/%7Euser/", "http://e.com/~user/"),
        ("http://e.com/?a=%7e%41&%62=1", "http://e.com/?a=~A&b=1"),
        ("http://e.com/a%2Eb", "http://e.com/a.b"),
        # reserved and other escapes kept: %2F is not a separator, %25 not double-decoded
        ("http://e.com/a%2Fb", "http://e.com/a%2Fb"),
        ("http://e.com/%2F%3F%23%25%26%3D%2B%20%40%3A", "http://e.com/%2F%3F%23%25%26%3D%2B%20%40%3A"),
        ("http://e.com/%252F", "http://e.com/%252F"),
        ("http://e.com/?a=%26b%3Dc&d=%2B", "http://e.com/?a=%26b%3Dc&d=%2B"),
        # not escapes: left alone
        ("http://e.com/100%", "http://e.com/100%"),
        ("http://e.com/%zz/%4/%%4a%%4g", "http://e.com/%zz/%4/%J%%4g"),
        ("http://e.com/?p=50%&q=%g0", "http://e.com/?p=50%&q=%g0"),
        # a decoded hex digit would complete a stray "%" into a new escape: kept encoded
        ("http://e.com/%2%61", "http://e.com/%2%61"),
        ("http://e.com/%%61%62", "http://e.com/%%61b"),
        ("http://e.com/?%%41%7e", "http://e.com/?%%41~"),
        ("http://e.com/%%7E%%67", "http://e.com/%~%g"),
        ("http://e.com/%2%7e", "http://e.com/%2~"),
        # what WHATWG encodes, canonicalize keeps encoded (upper-case)
        ("http://e.com/é?é", "http://e.com/%C3%A9?%C3%A9"),
        ("http://e.com/a b?c d", "http://e.com/a%20b?c%20d"),
        ("http://e.com/?a='", "http://e.com/?a=%27"),
        # "+" untouched
        ("http://e.com/a+b?c=d+e", "http://e.com/a+b?c=d+e"),
    ],
)
def test_canonicalize_percent_encoding(url: str, expected: str) -> None:
    assert canonicalize(url) == expected
    assert canonicalize(expected) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://e.com/a?", "http://e.com/a"),
        ("http://e.com/?", "http://e.com/"),
        ("http://e.com/a?#frag", "http://e.com/a"),
        ("http://u@e.com/a%41?", "http://e.com/aA"),
        ("http://e.com/a??", "http://e.com/a??"),  # a query that is "?" is not empty
        ("http://e.com/a?=", "http://e.com/a?="),
        ("http://e.com/a?&", "http://e.com/a?&"),
    ],
)
def test_canonicalize_lone_question_mark(url: str, expected: str) -> None:
    assert canonicalize(url) == expected


def test_query_order_kept_by_default() -> None:
    assert canonicalize("http://e.com/?b=2&a=1&b=1") == "http://e.com/?b=2&a=1&b=1"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://e.com/?b=2&a=1", "http://e.com/?a=1&b=2"),
        ("http://e.com/?b=2&a=9&b=1&a=3", "http://e.com/?a=9&a=3&b=2&b=1"),  # stable
        ("http://e.com/?z&y=&x=1", "http://e.com/?x=1&y=&z"),
        ("http://e.com/?b=1&&a=2&", "http://e.com/?a=2&b=1"),  # empty parameters dropped
        ("http://e.com/?&&", "http://e.com/"),
        ("http://e.com/?", "http://e.com/"),
        ("http://e.com/?%62=1&a=2", "http://e.com/?a=2&b=1"),  # sorted after decoding
        ("http://e.com/?a=1#b=0", "http://e.com/?a=1"),
        ("http://e.com/p", "http://e.com/p"),
    ],
)
def test_sort_query(url: str, expected: str) -> None:
    assert canonicalize(url, sort_query=True) == expected
    assert canonicalize(expected, sort_query=True) == expected


def test_length_limit_applies_after_canonicalisation() -> None:
    head = "http://e.com/"
    exact = head + "a" * (100 - len(head))
    assert canonicalize(exact, max_length=100) == exact
    with pytest.raises(URLError):
        canonicalize(exact + "b", max_length=100)
    # long input whose canonical form fits: the fragment and userinfo do not count
    assert canonicalize("http://user:pw@e.com/a#" + "f" * 500, max_length=100) == "http://e.com/a"
    assert canonicalize(head + "%7E" * 30, max_length=50) == head + "~" * 30
    # short input whose canonical form does not fit: percent-encoding grows it
    with pytest.raises(URLError):
        canonicalize(head + "é" * 15, max_length=50)
    # the default limit is 2048
    assert canonicalize(head + "a" * (2048 - len(head))) == head + "a" * (2048 - len(head))
    with pytest.raises(URLError):
        canonicalize(head + "a" * (2049 - len(head)))


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "mailto:someone@example.com",
        "javascript:alert(1)",
        "data:text/html,hi",
        "ws://example.com/",
        "wss://example.com/",
        "tel:+15555555",
        "urn:isbn:0451450523",
        "foo://example.com/",
        "about:blank",
    ],
)
def test_non_http_schemes_rejected(url: str) -> None:
    with pytest.raises(URLError, match="http"):
        canonicalize(url)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "/relative/path",
        "example.com/no-scheme",
        "http://",
        "https:///",
        "http://exa mple.com/",
        "http://[::1/",
        "http://example.com:65536/",
        "http://ex%00ample.com/",
        "http://1.2.3.4.5/",
        "http://\ud800/",
    ],
)
def test_unparseable_rejected(url: str) -> None:
    with pytest.raises(URLError):
        canonicalize(url)


def test_non_string_rejected() -> None:
    with pytest.raises(URLError):
        canonicalize(None)  # type: ignore[arg-type]


def test_canonical_forms_merge_equivalent_urls() -> None:
    variants = [
        "HTTP://User:Pw@WWW.Example.COM:80/a/./b/../%7Euser/%c3%A9?q=%41#top",
        "http://www.example.com/a/~user/%C3%A9?q=A",
        "http://www.example.com/a/%7euser/é?q=A#",
        "http://www.EXAMPLE.com:80/a/c/../~user/%C3%a9?q=A",
    ]
    forms = {canonicalize(v) for v in variants}
    assert forms == {"http://www.example.com/a/~user/%C3%A9?q=A"}
    assert len({fingerprint(f) for f in forms}) == 1


# -- fingerprint ------------------------------------------------------------------------------


def test_fingerprint_is_signed_xxh3_64() -> None:
    url = "http://example.com/"
    unsigned = xxhash.xxh3_64_intdigest(url.encode())
    fp = fingerprint(url)
    assert fp % 2**64 == unsigned
    assert -(2**63) <= fp < 2**63
    assert fingerprint(url) == fp  # stable


def test_fingerprint_covers_negative_and_positive() -> None:
    fps = [fingerprint(f"http://example.com/{i}") for i in range(200)]
    assert all(-(2**63) <= f < 2**63 for f in fps)
    assert any(f < 0 for f in fps) and any(f >= 0 for f in fps)
    assert len(set(fps)) == len(fps)


def test_fingerprint_fits_sqlite_integer() -> None:
    fps = [fingerprint(f"http://example.com/{i}") for i in range(200)]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (fp INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO t VALUES (?)", [(f,) for f in fps])
    assert sorted(r[0] for r in db.execute("SELECT fp FROM t")) == sorted(fps)


def test_fingerprint_of_unicode_uses_utf8() -> None:
    s = "http://e.com/é"
    assert fingerprint(s) % 2**64 == xxhash.xxh3_64_intdigest(s.encode("utf-8"))


# -- hosts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key", "host"),
    [
        ("http://example.com/a", "example.com", "example.com"),
        ("http://Example.COM:80/a", "example.com", "example.com"),
        ("https://example.com:443/", "example.com", "example.com"),
        ("http://example.com:443/", "example.com:443", "example.com"),
        ("https://example.com:8443/x", "example.com:8443", "example.com"),
        ("http://user:pw@example.com:81/", "example.com:81", "example.com"),
        ("http://u@ex.com/a@b?c@d#e@f", "ex.com", "ex.com"),
        ("http://[::1]:8080/", "[::1]:8080", "[::1]"),
        ("http://[::1]/", "[::1]", "[::1]"),
        ("http://127.0.0.1:5000/", "127.0.0.1:5000", "127.0.0.1"),
        ("http://bücher.de/", "xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("ws://Example.com:81/", "example.com:81", "example.com"),
    ],
)
def test_host_key_and_host_of(url: str, key: str, host: str) -> None:
    assert host_key(url) == key
    assert host_of(url) == host
    if url.startswith("http"):
        assert host_key(canonicalize(url)) == key


@pytest.mark.parametrize("url", ["", "/relative", "mailto:a@b.c", "file:///x", "http://"])
def test_host_functions_reject_hostless(url: str) -> None:
    with pytest.raises(URLError):
        host_key(url)
    with pytest.raises(URLError):
        host_of(url)


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("a.b.c.example.com", "example.com"),
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("WWW.Example.CO.UK", "example.co.uk"),
        ("example.com.", "example.com"),
        ("foo.github.io", "foo.github.io"),  # private section of the list
        ("www.xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("co.uk", "co.uk"),  # a public suffix is its own "domain"
        ("com", "com"),
        ("localhost", "localhost"),  # single label
        ("intranet", "intranet"),
        ("127.0.0.1", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("[::1]", "[::1]"),
        ("[2001:db8::1]", "[2001:db8::1]"),
        ("", ""),
    ],
)
def test_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def test_in_scope() -> None:
    hosts = frozenset({"example.com", "docs.python.org"})
    domains = frozenset({registrable_domain(h) for h in hosts})
    assert domains == {"example.com", "python.org"}
    assert in_scope("http://example.com/x", "host", hosts, domains)
    assert in_scope("https://EXAMPLE.com:8443/x", "host", hosts, domains)  # port: same host
    assert not in_scope("http://www.example.com/x", "host", hosts, domains)
    assert in_scope("http://www.example.com/x", "domain", hosts, domains)
    assert in_scope("http://wiki.python.org/", "domain", hosts, domains)
    assert not in_scope("http://python.org.evil.com/", "domain", hosts, domains)
    assert not in_scope("http://other.org/", "domain", hosts, domains)
    assert in_scope("http://other.org/", "any", hosts, domains)
    with pytest.raises(ValueError, match="scope"):
        in_scope("http://example.com/", "planet", hosts, domains)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://e.com/", (0, 0)),
        ("http://e.com", (0, 0)),
        ("http://e.com/a", (1, 1)),
        ("http://e.com/a/", (1, 1)),
        ("http://e.com/a/b/c", (3, 1)),
        ("http://e.com/a/b/c/?x=/a/a/a#/a/a", (3, 1)),
        ("http://e.com/a/b/a/b/a", (5, 3)),
        ("http://e.com/a//b/", (3, 1)),
        ("http://e.com/cal/2024/01/cal/2024/01/cal/x.html", (8, 3)),
        ("http://e.com/x/../y/./z", (2, 1)),
        ("http://e.com///", (2, 0)),
        ("http://e.com/" + "/".join(["x", "y"] * 50), (100, 50)),  # long paths take another way
        ("http://e.com/" + "/".join(f"s{i}" for i in range(80)) + "/s1", (81, 2)),
    ],
)
def test_path_depth_and_repeats(url: str, expected: tuple[int, int]) -> None:
    assert path_depth_and_repeats(url) == expected


# -- properties -------------------------------------------------------------------------------

_HEX = "0123456789abcdefABCDEF"
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_escape = st.builds(lambda a, b: "%" + a + b, st.sampled_from(_HEX), st.sampled_from(_HEX))
_unicode = st.characters(min_codepoint=0xA0, max_codepoint=0x2FFFF, exclude_categories=("Cs",))
_plain = st.sampled_from("abcXYZ019-._~!$&'()*+,;=:@ \"<>[]^`{|}\\\t")
_path_char = st.one_of(_plain, _escape, _unicode, st.sampled_from(["%", "%2", "%zz", "?", "#"]))
_segment = st.one_of(
    st.sampled_from([".", "..", "%2e", "%2E%2e", ".%2E", "", "index.html", "%2F", "%252F"]),
    st.lists(_path_char, max_size=8).map("".join),
)
_label = st.one_of(
    st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?", fullmatch=True),
    st.text(alphabet=st.one_of(st.sampled_from("abcxyz0-"), _unicode), min_size=1, max_size=6),
    st.sampled_from(["xn--bcher-kva", "XN--BCHER-KVA", "www", "WWW", "Bücher", "例え", "ß"]),
)
_host = st.one_of(
    st.lists(_label, min_size=1, max_size=4).map(".".join),
    st.sampled_from(["127.0.0.1", "0x7f.1", "[::1]", "[2001:DB8::1]", "192.168.0.1."]),
)
_port = st.one_of(
    st.just(""), st.sampled_from([":", ":80", ":443", ":8080", ":0080"]), st.integers(0, 65535).map(lambda p: f":{p}")
)
_query = st.one_of(
    st.just(""),
    st.just("?"),
    st.lists(
        st.tuples(
            st.lists(_path_char, max_size=4).map("".join),
            st.sampled_from(["=", ""]),
            st.lists(_path_char, max_size=4).map("".join),
        ).map("".join),
        max_size=5,
    ).map(lambda ps: "?" + "&".join(ps)),
)
_fragment = st.one_of(st.just(""), st.lists(_path_char, max_size=6).map(lambda cs: "#" + "".join(cs)))
_userinfo = st.one_of(st.just(""), st.sampled_from(["user@", "user:pw@", ":@", "a%40b:c@"]))
_scheme = st.sampled_from(["http", "https", "HTTP", "HtTpS"])

urls = st.builds(
    lambda scheme, user, host, port, segs, query, frag: (
        f"{scheme}://{user}{host}{port}/{'/'.join(segs)}{query}{frag}"
    ),
    _scheme,
    _userinfo,
    _host,
    _port,
    st.lists(_segment, max_size=6),
    _query,
    _fragment,
)

_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(urls, st.booleans())
def test_canonicalize_is_idempotent(url: str, sort_query: bool) -> None:
    try:
        once = canonicalize(url, sort_query=sort_query)
    except URLError:
        assume(False)
        return
    assert canonicalize(once, sort_query=sort_query) == once
    assert resolve(None, once) == once  # a fixed point of WHATWG parsing too
    # and the canonical form has the promised shape
    assert once.startswith(("http://", "https://"))
    assert "#" not in once
    assert "@" not in once.split("/")[2]
    assert once.find("?") != len(once) - 1  # no lone "?" (a query of "?" itself may end so)
    parts = once.split("%")
    for prev, part in zip(parts, parts[1:]):
        if len(part) >= 2 and all(c in _HEX for c in part[:2]):
            assert part[:2] == part[:2].upper()
            char = chr(int(part[:2], 16))
            # unreserved escapes are decoded, except a hex digit right after a stray "%"
            stray_before = prev == "" or (len(prev) == 1 and prev in _HEX)
            assert char not in _UNRESERVED or (stray_before and char in _HEX)


@_settings
@given(st.text(alphabet="%%%2aA1f7eE.~/?&=#gz", max_size=30), st.booleans())
def test_canonicalize_is_idempotent_on_escape_soup(tail: str, sort_query: bool) -> None:
    """Stray '%', hex digits and escapes of hex digits next to each other."""
    once = canonicalize("http://h/" + tail, sort_query=sort_query)
    assert canonicalize(once, sort_query=sort_query) == once
    assert resolve(None, once) == once


def test_generated_urls_mostly_parse() -> None:
    ok = 0
    examples: list[str] = []

    @settings(max_examples=200, deadline=None, database=None)
    @given(urls)
    def collect(url: str) -> None:
        examples.append(url)

    collect()
    for url in examples:
        try:
            canonicalize(url)
            ok += 1
        except URLError:
            pass
    assert ok >= len(examples) // 3


@_settings
@given(st.one_of(urls, st.text(max_size=60), st.binary(max_size=40).map(lambda b: b.decode("latin-1"))))
def test_canonicalize_raises_only_urlerror(url: str) -> None:
    try:
        result = canonicalize(url)
    except URLError:
        return
    assert isinstance(result, str)


@_settings
@given(urls)
def test_fingerprint_stable_and_equal_for_equal_forms(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except URLError:
        assume(False)
        return
    fp = fingerprint(canonical)
    assert -(2**63) <= fp < 2**63
    assert fingerprint(canonical) == fp
    assert fingerprint(canonicalize(canonical)) == fp  # equal canonical forms, equal prints
    # the same page reached through other spellings has the same fingerprint
    assert fingerprint(canonicalize(canonical + "#another-fragment")) == fp
    scheme, rest = canonical.split("://", 1)
    assert fingerprint(canonicalize(scheme.upper() + "://user:pw@" + rest)) == fp


@_settings
@given(
    st.one_of(urls, st.text(max_size=40), st.just("http://example.com/a/b")),
    st.one_of(urls, st.text(max_size=40), _segment, _query, _fragment),
)
def test_resolve_never_raises(base: str, href: str) -> None:
    result = resolve(base, href)
    assert result is None or isinstance(result, str)
    assert resolve(None, href) is None or isinstance(resolve(None, href), str)


@_settings
@given(urls)
def test_host_functions_agree_with_canonical_form(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except URLError:
        assume(False)
        return
    key = host_key(canonical)
    host = host_of(canonical)
    assert key == host_key(url)
    assert key == host or key.startswith(host + ":")
    assert key == key.lower()
    assert canonical.split("/")[2] == key
    depth, repeats = path_depth_and_repeats(canonical)
    assert 0 <= repeats <= depth


@given(urls)
def test_origin_agrees_with_ada(url: str) -> None:
    """The robots.txt origin (scheme, host, port) of any http(s) URL equals what ada-url's
    attribute getters say, with the default port filled in and IPv6 brackets removed."""
    import ada_url

    try:
        parsed = ada_url.URL(url)
    except ValueError:
        with pytest.raises(URLError):
            origin(url)
        return
    scheme = parsed.protocol[:-1]
    port = int(parsed.port) if parsed.port else {"http": 80, "https": 443}[scheme]
    assert origin(url) == (scheme, parsed.hostname.strip("[]"), port)


@pytest.mark.parametrize("url", ["ws://example.com/", "ftp://example.com/x", "/relative"])
def test_origin_is_for_http_only(url: str) -> None:
    with pytest.raises(URLError):
        origin(url)
