"""skitter.sitemaps: generated sitemaps round-trip; hostile and malformed input gives a result with
an error, never an exception, a hang or an entity expansion; the protocol's limits."""

from __future__ import annotations

import gzip
import time
from datetime import datetime, timedelta, timezone, UTC
from xml.sax.saxutils import escape

from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.sitemaps import CHANGEFREQS, Sitemap, SitemapEntry, parse_sitemap, parse_w3c_datetime
from skitter.urls import canonicalize

SM = "http://example.org/sitemap.xml"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(rows: list[str], ns: str = NS) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{ns}">\n' + "\n".join(rows)
            + "\n</urlset>\n").encode()


def url_row(loc: str, lastmod: str | None = None, changefreq: str | None = None,
            priority: str | None = None) -> str:
    out = f"<url><loc>{escape(loc)}</loc>"
    if lastmod is not None:
        out += f"<lastmod>{lastmod}</lastmod>"
    if changefreq is not None:
        out += f"<changefreq>{changefreq}</changefreq>"
    if priority is not None:
        out += f"<priority>{priority}</priority>"
    return out + "</url>"


# ---------------------------------------------------------------------------------------------
# round trips

_path_chars = st.text(alphabet="abcXYZ019-._~!$'()*+,;=:@&", min_size=0, max_size=12)
_paths = st.lists(_path_chars, min_size=1, max_size=4).map(lambda ps: "/" + "/".join(ps))
_queries = st.one_of(st.just(""), st.lists(st.tuples(st.text("abc", min_size=1, max_size=3),
                                                      st.text("xyz09", max_size=3)),
                                           min_size=1, max_size=3)
                     .map(lambda kv: "?" + "&".join(f"{k}={v}" for k, v in kv)))
_times = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1),
                      timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0))
_offsets = st.integers(min_value=-12 * 60, max_value=14 * 60).map(lambda m: timedelta(minutes=m))


@st.composite
def entries(draw) -> SitemapEntry:
    # the parser gives canonical URLs: the round trip is of canonical ones
    loc = canonicalize("http://example.org" + draw(_paths) + draw(_queries))
    lastmod = draw(st.one_of(st.none(), _times))
    return SitemapEntry(loc, lastmod.timestamp() if lastmod else None,
                        draw(st.one_of(st.none(), st.sampled_from(sorted(CHANGEFREQS)))),
                        draw(st.one_of(st.none(), st.integers(0, 10).map(lambda i: i / 10))))


def w3c(ts: float, offset: timedelta) -> str:
    local = datetime.fromtimestamp(ts, timezone(offset))
    return local.isoformat()   # YYYY-MM-DDThh:mm:ss+hh:mm


@settings(max_examples=60, deadline=None)
@given(st.lists(entries(), max_size=25), _offsets, st.booleans(), st.booleans())
def test_urlset_round_trips(expected: list[SitemapEntry], offset: timedelta, gz: bool, cdata: bool) -> None:
    rows = []
    for e in expected:
        loc = f"<![CDATA[{e.loc}]]>" if cdata else escape(e.loc)
        row = f"<url>\n  <loc>\n  {loc}  </loc>"
        if e.lastmod is not None:
            row += f"<lastmod>{w3c(e.lastmod, offset)}</lastmod>"
        if e.changefreq is not None:
            row += f"<changefreq> {e.changefreq.upper()} </changefreq>"
        if e.priority is not None:
            row += f"<priority>{e.priority}</priority>"
        rows.append(row + "</url>")
    body = urlset(rows)
    result = parse_sitemap(gzip.compress(body) if gz else body, SM)
    assert result.error is None
    assert result.kind == "urlset" and result.compressed == gz
    assert list(result.entries) == expected
    assert (result.ignored, result.rejected) == (0, 0)


@settings(max_examples=30, deadline=None)
@given(st.lists(entries(), max_size=20))
def test_index_and_text_round_trip(expected: list[SitemapEntry]) -> None:
    index = ('<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<sitemap><loc>{escape(e.loc)}</loc></sitemap>" for e in expected)
             + "</sitemapindex>").encode()
    r = parse_sitemap(index, SM)
    assert r.kind == "sitemapindex" and r.entries == ()
    assert [s.loc for s in r.sitemaps] == [e.loc for e in expected]
    text = ("\n".join(e.loc for e in expected) + "\n").encode()
    t = parse_sitemap(text, SM)
    assert [e.loc for e in t.entries] == [e.loc for e in expected]
    assert t.error is None if expected else t.error == "empty document"


def test_urls_are_canonical_and_escapes_decoded() -> None:
    r = parse_sitemap(urlset([url_row("HTTP://Example.ORG:80/a/../b?x=1&y=2#frag"),
                              "<url><loc>http://example.org/c?p=1&amp;q=&#50;</loc></url>"]), SM)
    assert [e.loc for e in r.entries] == ["http://example.org/b?x=1&y=2", "http://example.org/c?p=1&q=2"]


def test_extension_elements_and_other_namespaces_are_not_pages() -> None:
    rows = ['<url><loc>http://example.org/a</loc><image:image xmlns:image="http://www.google.com/'
            'schemas/sitemap-image/1.1"><image:loc>http://example.org/i.png</image:loc></image:image>'
            '<x:loc xmlns:x="urn:x">http://example.org/not-this</x:loc></url>']
    assert [e.loc for e in parse_sitemap(urlset(rows), SM).entries] == ["http://example.org/a"]
    # an old or misspelt sitemap namespace still works (the root's namespace is the one)
    old = urlset([url_row("http://example.org/b")], ns="http://www.google.com/schemas/sitemap/0.84")
    assert [e.loc for e in parse_sitemap(old, SM).entries] == ["http://example.org/b"]
    bare = b"<urlset><url><loc>http://example.org/c</loc></url></urlset>"
    assert [e.loc for e in parse_sitemap(bare, SM).entries] == ["http://example.org/c"]


def test_invalid_values_are_none() -> None:
    r = parse_sitemap(urlset([url_row("http://example.org/a", "yesterday", "sometimes", "2.5"),
                              url_row("http://example.org/b", "2024-02-30", "NEVER", "-0.1")]), SM)
    assert [(e.lastmod, e.changefreq, e.priority) for e in r.entries] == [(None, None, None),
                                                                          (None, "never", None)]


def test_w3c_datetime_forms() -> None:
    base = datetime(1997, 7, 16, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("1997") == datetime(1997, 1, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("1997-07") == datetime(1997, 7, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("1997-07-16") == base
    assert parse_w3c_datetime("1997-07-16T19:20+01:00") == base + 18 * 3600 + 20 * 60
    assert parse_w3c_datetime("1997-07-16T19:20:30+01:00") == base + 18 * 3600 + 20 * 60 + 30
    assert parse_w3c_datetime("1997-07-16T19:20:30.45+01:00") == base + 18 * 3600 + 20 * 60 + 30.45
    assert parse_w3c_datetime("1997-07-16T19:20:30Z") == base + 19 * 3600 + 20 * 60 + 30
    assert parse_w3c_datetime("1997-07-16T19:20:30 +0100") == base + 18 * 3600 + 20 * 60 + 30
    assert parse_w3c_datetime(" 1997-07-16T19:20:30 ") == base + 19 * 3600 + 20 * 60 + 30
    for bad in ("", "97-07-16", "1997-13-01", "1997-07-16T25:00Z", "1997-07-16T10:00+25:00", "now"):
        assert parse_w3c_datetime(bad) is None, bad


def test_feeds() -> None:
    rss = (b'<?xml version="1.0"?><rss version="2.0"><channel><link>http://example.org/</link>'
           b"<item><title>a</title><link>http://example.org/p/1</link>"
           b"<pubDate>Mon, 06 Sep 2021 16:45:00 +0200</pubDate></item>"
           b"<item><link>/p/2</link></item><item><link>http://elsewhere.net/x</link></item>"
           b"</channel></rss>")
    r = parse_sitemap(rss, "http://example.org/feed.xml")
    assert r.kind == "rss" and r.rejected == 1
    assert [(e.loc, e.lastmod) for e in r.entries] == [
        ("http://example.org/p/1", datetime(2021, 9, 6, 14, 45, tzinfo=UTC).timestamp()),
        ("http://example.org/p/2", None)]
    atom = (b'<feed xmlns="http://www.w3.org/2005/Atom"><updated>2020-01-01T00:00:00Z</updated>'
            b'<entry><link rel="edit" href="http://example.org/edit/1"/><link href="http://example.org/e/1"/>'
            b"<published>2019-01-01T00:00:00Z</published></entry>"
            b'<entry><link rel="alternate" href="e/2"/><updated>2021-01-01T00:00:00Z</updated></entry></feed>')
    a = parse_sitemap(atom, "http://example.org/feed.atom")
    assert a.kind == "atom"
    assert [(e.loc, e.lastmod) for e in a.entries] == [
        ("http://example.org/e/1", datetime(2019, 1, 1, tzinfo=UTC).timestamp()),
        ("http://example.org/e/2", datetime(2021, 1, 1, tzinfo=UTC).timestamp())]


# ---------------------------------------------------------------------------------------------
# the host rule


def test_only_the_sitemaps_origin_unless_cross_host() -> None:
    locs = ["http://example.org/a", "https://example.org/b", "http://example.org:8080/c",
            "http://sub.example.org/d", "http://example.org.evil.net/e", "ftp://example.org/f",
            "/relative", "http://[bad"]
    body = urlset([url_row(u) for u in locs])
    r = parse_sitemap(body, SM)
    assert [e.loc for e in r.entries] == ["http://example.org/a"] and r.rejected == 7
    x = parse_sitemap(body, SM, cross_host=True)
    assert [e.loc for e in x.entries] == locs[:5] and x.rejected == 3
    assert parse_sitemap(body, "not a url").error.startswith("not an http(s) sitemap URL")


# ---------------------------------------------------------------------------------------------
# limits


def test_50000_url_limit_extra_entries_counted() -> None:
    rows = [url_row(f"http://example.org/{i}") for i in range(50_010)]
    r = parse_sitemap(urlset(rows), SM)
    assert len(r.entries) == 50_000 and r.ignored == 10 and r.error is None
    assert r.entries[-1].loc == "http://example.org/49999"
    small = parse_sitemap(urlset(rows[:30]), SM, max_urls=20)
    assert len(small.entries) == 20 and small.ignored == 10


def test_decompressed_size_cap_and_gzip_bombs_are_cheap() -> None:
    bomb = gzip.compress(b"\0" * (100 << 20))        # 100 MiB of zeros, about 100 KB
    t0 = time.perf_counter()
    r = parse_sitemap(bomb, SM)
    assert r.error and r.compressed and r.entries == ()
    xml_bomb = gzip.compress(b"<urlset>" + b" " * (60 << 20) + b"</urlset>")   # valid XML, too large
    r2 = parse_sitemap(xml_bomb, SM)
    assert r2.error == f"larger than {50 << 20} bytes decompressed"
    assert time.perf_counter() - t0 < 5
    # the cap counts decompressed bytes; a plain document over it stops there too
    rows = [url_row(f"http://example.org/{i}") for i in range(100)]
    r3 = parse_sitemap(gzip.compress(urlset(rows)), SM, max_bytes=2000)
    assert r3.error == "larger than 2000 bytes decompressed" and 0 < len(r3.entries) < 100
    assert parse_sitemap(urlset(rows), SM, max_bytes=2000).error == "larger than 2000 bytes"


def test_gzip_detected_by_magic_not_name_and_multi_member() -> None:
    body = urlset([url_row("http://example.org/a")])
    assert parse_sitemap(gzip.compress(body), "http://example.org/sitemap.xml").entries
    assert parse_sitemap(body, "http://example.org/sitemap.xml.gz").entries
    half = len(body) // 2
    two = gzip.compress(body[:half]) + gzip.compress(body[half:])
    r = parse_sitemap(two, SM)
    assert r.error is None and [e.loc for e in r.entries] == ["http://example.org/a"]
    t = parse_sitemap(gzip.compress(body)[:-12], SM)
    assert t.error == "gzip: truncated stream"
    assert parse_sitemap(b"\x1f\x8b" + b"garbage" * 10, SM).error.startswith("gzip:")


# ---------------------------------------------------------------------------------------------
# hostile and malformed input


def test_dtds_and_entities_are_refused() -> None:
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"".join(b"&lol%d;" % (i - 1) if i > 1 else b"&lol;"
                                                                 for _ in range(10))) for i in range(1, 10))
              + b']><urlset><url><loc>http://example.org/&lol9;</loc></url></urlset>')
    external = (b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                b"<urlset><url><loc>http://example.org/&x;</loc></url></urlset>")
    public = (b'<!DOCTYPE urlset PUBLIC "-//x//y" "http://example.org/x.dtd">'
              b"<urlset><url><loc>http://example.org/a</loc></url></urlset>")
    for body in (laughs, external, public):
        t0 = time.perf_counter()
        r = parse_sitemap(body, SM)
        assert r.error.startswith("refused:") and r.entries == (), r
        assert time.perf_counter() - t0 < 0.5
    undeclared = parse_sitemap(b"<urlset><url><loc>http://example.org/&x;</loc></url></urlset>", SM)
    assert undeclared.error.startswith("xml: undefined entity")


def test_malformed_documents_give_errors_and_keep_what_came_before() -> None:
    good = url_row("http://example.org/a")
    cases = {
        b"": "empty document",
        b"  \n\t ": "empty document",
        b"<html><body>Not found</body></html>": "not a sitemap: root element <html>",
        b"<?xml version='1.0'?><urlset><url><loc>http://example.org/a</loc></url>": "xml: ",
        ("<urlset>" + good + "<url><loc>http://example.org/b</url></urlset>").encode(): "xml: ",
        b"Not Found": "not a sitemap: neither XML nor a URL per line",
        b"<a>" * 100_000: "not a sitemap: root element <a>",
        b"<urlset>" + b"<x>" * 100_000: "elements nested deeper than 64",
        bytes(range(256)) * 10: "not a sitemap",
    }
    for body, error in cases.items():
        r = parse_sitemap(body, SM)
        assert isinstance(r, Sitemap) and r.error is not None and r.error.startswith(error), (body[:40], r.error)
    truncated = parse_sitemap(("<urlset>" + good + "<url><loc>http://exa").encode(), SM)
    assert truncated.error.startswith("xml: ") and [e.loc for e in truncated.entries] == ["http://example.org/a"]


def test_leading_white_space_bom_and_encodings() -> None:
    body = urlset([url_row("http://example.org/caf\u00e9")])
    assert parse_sitemap(b"\n\n  " + body, SM).entries
    assert parse_sitemap(b"\xef\xbb\xbf" + body, SM).entries
    latin = body.replace(b"UTF-8", b"ISO-8859-1").replace("é".encode(), b"\xe9")
    assert [e.loc for e in parse_sitemap(latin, SM).entries] == ["http://example.org/caf%C3%A9"]
    utf16 = body.decode().replace("UTF-8", "UTF-16").encode("utf-16")
    assert [e.loc for e in parse_sitemap(utf16, SM).entries] == ["http://example.org/caf%C3%A9"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    for candidate in (body, b"<urlset>" + body, gzip.compress(body)):
        r = parse_sitemap(candidate, SM)
        assert isinstance(r, Sitemap)
        assert all(e.loc.startswith("http://example.org/") for e in r.entries)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["<urlset>", "</urlset>", "<url>", "</url>", "<loc>", "</loc>",
                                 "http://example.org/x", "&amp;", "&bad;", "<![CDATA[", "]]>",
                                 "<lastmod>", "</lastmod>", "2024-01-01", "<!DOCTYPE x>", "<?pi?>",
                                 "<!-- c -->", "\x00", "<sitemapindex>", "<sitemap>"]), max_size=40))
def test_shuffled_xml_tokens_never_raise(tokens: list[str]) -> None:
    r = parse_sitemap("".join(tokens).encode(), SM)
    assert isinstance(r, Sitemap)
