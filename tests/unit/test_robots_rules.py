"""Unit and property tests of skitter.robots.rules (RFC 9309 parsing and matching)."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.robots.rules import MAX_BYTES, RobotsRules, product_token

UA = "skitter/0.1.0 (+https://example.org/bot)"


def rules(text: str | bytes, ua: str = UA) -> RobotsRules:
    return RobotsRules.parse(text, ua)


# -- product token -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ua", "token"),
    [
        ("skitter/0.1.0 (+https://x)", "skitter"),
        ("skitter", "skitter"),
        ("  FooBot/2 ", "FooBot"),
        ("Foo Bar", "Foo Bar"),
        ("", ""),
    ],
)
def test_product_token(ua: str, token: str) -> None:
    assert product_token(ua) == token


def test_full_user_agent_string_matches_its_token_case_insensitively() -> None:
    r = rules("User-agent: SKITTER\nDisallow: /a\n")
    assert not r.allowed("/a")
    assert r.allowed("/b")


def test_user_agent_line_token_is_its_leading_name() -> None:
    # "skitter/1.0" and "skitter extra words" on the robots side name the token "skitter".
    assert not rules("User-agent: skitter/1.0\nDisallow: /\n").allowed("/x")
    assert not rules("User-agent: skitter is here\nDisallow: /\n").allowed("/x")
    assert rules("User-agent: skitterbot\nDisallow: /\n").allowed("/x")


def test_invalid_token_only_gets_the_star_group() -> None:
    text = "User-agent: *\nDisallow: /\n\nUser-agent: Foo\nAllow: /\n"
    assert RobotsRules.parse(text, "Foo").allowed("/x")
    assert not RobotsRules.parse(text, "Foo Bar").allowed("/x")


# -- groups --------------------------------------------------------------------------------


def test_groups_for_the_same_agent_are_merged() -> None:
    r = rules(
        "User-agent: skitter\nDisallow: /a\n\n"
        "User-agent: other\nDisallow: /\n\n"
        "User-agent: skitter\nDisallow: /b\n"
    )
    assert not r.allowed("/a/1")
    assert not r.allowed("/b/1")
    assert r.allowed("/c")


def test_consecutive_user_agent_lines_share_a_group() -> None:
    text = "User-agent: a\nUser-agent: skitter\nUser-agent: b\nDisallow: /x\n"
    for ua in ("a", "skitter", "b"):
        assert not RobotsRules.parse(text, ua).allowed("/x")
    assert RobotsRules.parse(text, "c").allowed("/x")


def test_blank_and_unknown_lines_do_not_end_the_user_agent_list() -> None:
    text = "User-agent: other\n\nFoo: bar\nUser-agent: skitter\nDisallow: /x\n"
    assert not rules(text).allowed("/x")
    assert not RobotsRules.parse(text, "other").allowed("/x")


def test_specific_group_replaces_star_group() -> None:
    text = "User-agent: *\nDisallow: /private\n\nUser-agent: skitter\nDisallow: /tmp\n"
    r = rules(text)
    assert r.allowed("/private")
    assert not r.allowed("/tmp/1")
    other = RobotsRules.parse(text, "other")
    assert not other.allowed("/private")
    assert other.allowed("/tmp/1")


def test_empty_specific_group_allows_everything() -> None:
    assert rules("User-agent: *\nDisallow: /\n\nUser-agent: skitter\n").allowed("/x")


def test_rules_before_any_user_agent_are_ignored() -> None:
    assert rules("Disallow: /\nUser-agent: other\nDisallow: /\n").allowed("/x")


def test_star_with_trailing_text_is_still_global() -> None:
    assert not rules("User-agent: * # everyone\nDisallow: /\n").allowed("/x")
    assert not rules("User-agent: * all\nDisallow: /\n").allowed("/x")


# -- matching ------------------------------------------------------------------------------


def test_longest_match_wins_either_way() -> None:
    r = rules("User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a/b/c\n")
    assert not r.allowed("/a")
    assert r.allowed("/a/b")
    assert not r.allowed("/a/b/c/d")


def test_allow_wins_a_tie() -> None:
    assert rules("User-agent: *\nDisallow: /x\nAllow: /x\n").allowed("/x")
    assert rules("User-agent: *\nAllow: /x\nDisallow: /x\n").allowed("/x")
    # Equal pattern lengths, different patterns, both match: Allow wins.
    assert rules("User-agent: *\nDisallow: /*b\nAllow: /a*\n").allowed("/ab")


def test_dollar_anchors_the_end() -> None:
    r = rules("User-agent: *\nDisallow: /*.pdf$\n")
    assert not r.allowed("/a/b.pdf")
    assert r.allowed("/a/b.pdf?x=1")
    assert r.allowed("/a/b.pdfx")


def test_dollar_in_the_middle_is_a_literal() -> None:
    r = rules("User-agent: *\nDisallow: /a$b\n")
    assert not r.allowed("/a$b/c")
    assert r.allowed("/a")


def test_star_wildcard() -> None:
    r = rules("User-agent: *\nDisallow: /a*b*c\n")
    assert not r.allowed("/abc")
    assert not r.allowed("/a--b--c--")
    assert r.allowed("/acb")
    assert not rules("User-agent: *\nDisallow: *\n").allowed("/anything")
    assert not rules("User-agent: *\nDisallow: /**x\n").allowed("/yyx")


def test_matching_is_case_sensitive_and_covers_the_query() -> None:
    r = rules("User-agent: *\nDisallow: /A\nDisallow: /*?session=\n")
    assert r.allowed("/a")
    assert not r.allowed("/A")
    assert not r.allowed("http://h/list?session=1")
    assert r.allowed("http://h/list?x=1#session=")  # the fragment is not part of the match


@pytest.mark.parametrize(
    ("url", "path_allowed"),
    [
        ("http://example.com", False),  # empty path is "/"
        ("https://example.com:8443/p?q=1", False),
        ("//example.com/p", False),
        ("/p", False),
        ("?q", False),
        ("http://example.com/robots.txt", True),
        ("/robots.txt?x=1", True),
    ],
)
def test_urls_and_paths(url: str, path_allowed: bool) -> None:
    assert rules("User-agent: *\nDisallow: /\n").allowed(url) is path_allowed


def test_robots_txt_itself_is_always_allowed() -> None:
    assert RobotsRules.disallow_all().allowed("http://h/robots.txt")
    assert rules("User-agent: *\nDisallow: /robots.txt\n").allowed("/robots.txt")


def test_empty_disallow_allows_everything() -> None:
    assert rules("User-agent: *\nDisallow:\n").allowed("/x")


def test_allow_index_html_also_allows_the_directory() -> None:
    r = rules("User-agent: *\nDisallow: /\nAllow: /d/index.html\n")
    assert r.allowed("/d/")
    assert r.allowed("/d/index.html")
    assert not r.allowed("/d/other")


# -- percent-encoding (RFC 9309 2.2.2, 2.2.3) -----------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("/ツ", "/%E3%83%84", True),
        ("/ツ", "/%e3%83%84", True),
        ("/%E3%83%84", "/ツ", True),
        ("/%e3%83%84", "/%E3%83%84", True),
        ("/%62%61%7A", "/baz", True),  # unreserved octets are decoded
        ("/baz", "/%62%61%7a", True),
        ("/a%2Fb", "/a/b", False),  # a reserved octet is not
        ("/%2A", "/*", True),  # a literal '*' in the URL is named %2A
        ("/%24", "/$", True),
        ("/%2A", "/x", False),
        ("/a b", "/a%20b", True),
        ("/100%", "/100%", True),  # a stray '%' is compared as is
    ],
)
def test_percent_encoding(pattern: str, url: str, matches: bool) -> None:
    assert rules(f"User-agent: *\nDisallow: {pattern}\n").allowed(url) is not matches


def test_non_utf8_bytes_in_pattern_are_compared_as_octets() -> None:
    r = rules(b"User-agent: *\nDisallow: /caf\xe9\n")
    assert not r.allowed("/caf%E9")
    assert r.allowed("/caf%C3%A9")


# -- file format -----------------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_endings(eol: str) -> None:
    r = rules(
        eol.join(
            ["User-agent: *", "Disallow: /a", "Allow: /a/b", "Crawl-delay: 2", "Sitemap: https://h/s.xml"]
        )
    )
    assert not r.allowed("/a")
    assert r.allowed("/a/b")
    assert r.crawl_delay == 2.0
    assert r.sitemaps == ("https://h/s.xml",)


def test_byte_order_mark() -> None:
    assert not rules(b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n").allowed("/x")
    assert not rules("\ufeffUser-agent: *\nDisallow: /x\n").allowed("/x")


def test_comments() -> None:
    r = rules("# hello\nUser-agent: * # all\nDisallow: /x # not /y\n#Disallow: /z\n")
    assert not r.allowed("/x")
    assert r.allowed("/y")
    assert r.allowed("/z")


def test_garbage_and_typos_are_tolerated() -> None:
    r = rules(
        "\x00\x01garbage\n:::\nUSERAGENT: skitter\n"
        "dissallow: /a\nDisallow /b\nallow  /b/c\nnonsense line here\n"
    )
    assert not r.allowed("/a")
    assert not r.allowed("/b")
    assert r.allowed("/b/c")


def test_crawl_delay_from_the_group_that_applies() -> None:
    text = "User-agent: *\nCrawl-delay: 10\n\nUser-agent: skitter\nCrawl-delay: 0.5\nDisallow: /x\n"
    assert rules(text).crawl_delay == 0.5
    assert RobotsRules.parse(text, "other").crawl_delay == 10.0
    assert rules("User-agent: *\nDisallow: /\n").crawl_delay is None
    assert rules("User-agent: *\nCrawl-delay: soon\n").crawl_delay is None
    assert rules("User-agent: *\nCrawl-delay: -1\n").crawl_delay is None
    assert rules("User-agent: *\nCrawl-delay: nan\n").crawl_delay is None


def test_sitemaps_anywhere_in_the_file() -> None:
    text = "Sitemap: https://h/a.xml\nUser-agent: other\nSitemap: https://h/b.xml\nDisallow: /\nsitemap: https://h/a.xml\n"
    r = rules(text)
    assert r.sitemaps == ("https://h/a.xml", "https://h/b.xml")
    assert r.allowed("/x")


def test_500_kib_cap() -> None:
    filler = "# " + "x" * 1000 + "\n"
    head = "User-agent: *\nDisallow: /early\n"
    body = head + filler * (MAX_BYTES // len(filler) + 1)
    assert len(body.encode()) > MAX_BYTES
    r = rules(body + "Disallow: /late\n")
    assert not r.allowed("/early")
    assert r.allowed("/late")  # after 500 KiB: ignored


def test_line_cut_by_the_cap_is_dropped() -> None:
    head = "User-agent: *\n"
    pad = "#" * (MAX_BYTES - len(head) - len("Disallow: /ab")) + "\n"
    body = head + pad + "Disallow: /abc\n"
    # The cut falls inside "/abc": a half-read rule must not disallow the shorter /ab.
    assert rules(body).allowed("/ab")
    # With a smaller cap given explicitly the whole line is outside.
    assert RobotsRules.parse(body, UA, max_bytes=len(head) + len(pad)).allowed("/abc")
    # A cap landing exactly at the line's end keeps the line.
    assert not RobotsRules.parse(body, UA, max_bytes=len(body) - 1).allowed("/abc")


def test_allow_all_and_disallow_all() -> None:
    assert RobotsRules.allow_all().allowed("/x")
    assert RobotsRules.allow_all("unavailable").reason == "unavailable"
    assert not RobotsRules.disallow_all().allowed("/")
    assert RobotsRules.disallow_all("unreachable").reason == "unreachable"
    parsed = rules("User-agent: *\nDisallow: /\n")
    assert parsed.reason is None
    assert parsed.rules == ((False, "/"),)


def test_allowed_is_fast() -> None:
    lines = ["User-agent: *"] + [f"Disallow: /section{i}/*.php$" for i in range(200)] + ["Allow: /"]
    r = rules("\n".join(lines))
    start = time.perf_counter()
    for i in range(20_000):
        r.allowed(f"http://example.com/page/{i}.html?x=1")
    assert time.perf_counter() - start < 5.0


def test_hostile_pattern_does_not_blow_up() -> None:
    r = rules("User-agent: *\nDisallow: /" + "*a" * 50 + "*b\n")
    start = time.perf_counter()
    assert r.allowed("/" + "a" * 5000)
    assert time.perf_counter() - start < 1.0


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000), url=st.text(max_size=100), ua=st.text(max_size=30))
def test_never_raises_on_arbitrary_input(body: bytes, url: str, ua: str) -> None:
    r = RobotsRules.parse(body, ua)
    assert isinstance(r.allowed(url), bool)
    assert isinstance(RobotsRules.parse(body.decode("latin-1"), ua).allowed(url), bool)


_lines = st.sampled_from(
    [
        "User-agent: *",
        "User-agent: skitter",
        "User-agent: other",
        "Disallow: /a",
        "Allow: /a/b",
        "Disallow: /*.x$",
        "Crawl-delay: 1",
        "Sitemap: s",
        "",
        "# c",
        "junk",
        "Allow: /",
        "Disallow:",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(_lines, max_size=20),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    path=st.sampled_from(["/", "/a", "/a/b", "/q.x", "/a/b.x"]),
)
def test_line_endings_never_change_the_verdict(lines: list[str], eol: str, path: str) -> None:
    assert rules(eol.join(lines)).allowed(path) == rules("\n".join(lines)).allowed(path)


_segment = st.text(alphabet="abcxyz019-_/.", max_size=12)


@settings(max_examples=200, deadline=None)
@given(prefix=_segment, suffix=_segment, longer=_segment)
def test_disallow_covers_every_extension_unless_a_longer_allow(prefix: str, suffix: str, longer: str) -> None:
    p = "/" + prefix
    r = rules(f"User-agent: other\nAllow: /\n\nUser-agent: skitter\nDisallow: {p}\n")
    url = "http://h" + p + suffix  # absolute: a bare "//x" would be a scheme-relative URL
    assert not r.allowed(url)
    if longer:
        r = rules(f"User-agent: skitter\nDisallow: {p}\nAllow: {p}{longer}\n")
        assert r.allowed(url) is (p + suffix).startswith(p + longer)
    # Another agent is not affected.
    assert RobotsRules.parse(f"User-agent: skitter\nDisallow: {p}\n", "other").allowed(url)


@given(path=st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_allow_all_disallow_all(path: str) -> None:
    url = "http://h/" + path
    is_robots_txt = ("/" + path).split("#")[0].split("?")[0] == "/robots.txt"
    assert RobotsRules.allow_all().allowed(url)
    assert RobotsRules.disallow_all().allowed(url) is is_robots_txt


def _reference_match(pattern: str, path: str) -> bool:
    """Brute-force glob: '*' any run, a final '$' the end, everything else literal."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]

    def match(i: int, j: int) -> bool:  # pattern[i:] against path[j:], prefix semantics
        if i == len(pattern):
            return j == len(path) or not anchored
        if pattern[i] == "*":
            return any(match(i + 1, k) for k in range(j, len(path) + 1))
        return j < len(path) and path[j] == pattern[i] and match(i + 1, j + 1)

    return match(0, 0)


def _reference_priority(pattern: str) -> int:
    # Lengths are counted in the canonical form, where a literal '$' is written "%24".
    return len(pattern) + 2 * pattern[:-1].count("$")


def _reference_allowed(rule_list: list[tuple[bool, str]], path: str) -> bool:
    matching = [(_reference_priority(p), allow) for allow, p in rule_list if p and _reference_match(p, path)]
    return max(matching)[1] if matching else True


_pattern = st.text(alphabet="ab/*$", max_size=8).map(lambda s: "/" + s)
_path = st.text(alphabet="ab/$", max_size=10).map(lambda s: "/" + s)


@settings(max_examples=400, deadline=None)
@given(pattern=_pattern, path=_path)
def test_wildcards_agree_with_a_brute_force_matcher(pattern: str, path: str) -> None:
    r = rules(f"User-agent: *\nDisallow: {pattern}\n")
    assert r.allowed("http://h" + path) is not _reference_match(pattern, path)


@settings(max_examples=300, deadline=None)
@given(
    rule_list=st.lists(st.tuples(st.booleans(), _pattern), max_size=6), path=_path, seed=st.integers(0, 1000)
)
def test_longest_match_agrees_with_a_brute_force_decision(
    rule_list: list[tuple[bool, str]], path: str, seed: int
) -> None:
    lines = [f"{'Allow' if allow else 'Disallow'}: {p}" for allow, p in rule_list]
    expected = _reference_allowed(rule_list, path)
    url = "http://h" + path
    assert rules("User-agent: skitter\n" + "\n".join(lines)).allowed(url) is expected
    random.Random(seed).shuffle(lines)  # the order of the rules does not matter
    assert rules("User-agent: skitter\n" + "\n".join(lines)).allowed(url) is expected


@settings(max_examples=200, deadline=None)
@given(
    rule_list=st.lists(st.tuples(st.booleans(), _pattern), min_size=20, max_size=60),
    paths=st.lists(_path, min_size=1, max_size=10),
)
def test_many_rules_indexed_agree_with_a_brute_force_decision(
    rule_list: list[tuple[bool, str]], paths: list[str]
) -> None:
    # Above a few dozen rules `allowed` goes through a head index instead of a linear scan.
    r = rules(
        "User-agent: skitter\n" + "\n".join(f"{'Allow' if a else 'Disallow'}: {p}" for a, p in rule_list)
    )
    for path in paths:
        assert r.allowed("http://h" + path) is _reference_allowed(rule_list, path)


def test_many_rules_tie_and_longest() -> None:
    lines = [f"Disallow: /d{i}/" for i in range(100)] + [
        "Disallow: /x",
        "Allow: /x",
        "Allow: /d7/ok",
        "Disallow: /*.gif$",
    ]
    r = rules("User-agent: *\n" + "\n".join(lines))
    assert r.allowed("/x")
    assert not r.allowed("/d7/no")
    assert r.allowed("/d7/ok")
    assert not r.allowed("/d7/ok.gif")
    assert not r.allowed("/y.gif")
    assert r.allowed("/y.gif?z")


def test_rules_module_is_pure() -> None:
    import ast
    import inspect

    import skitter.robots.rules as module

    tree = ast.parse(inspect.getsource(module))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"__future__", "collections", "math", "re"}
