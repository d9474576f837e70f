"""Tests for skitter.parse: decoding, robots directives and HTML → Page."""

from __future__ import annotations

import codecs
from dataclasses import replace
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skitter import urls
from skitter.models import Link, Page
from skitter.parse import decode_body, parse_html, parse_robots_directives, parse_with_main_text, refresh_url

DATA = Path(__file__).resolve().parent.parent / "data" / "html"
URL = "https://www.example.com/dir/page.html"


def parse(html: str | bytes, url: str = URL, **kw) -> Page:
    body = html.encode("utf-8") if isinstance(html, str) else html
    return parse_html(body, url, **kw)


def link_map(page: Page) -> dict[str, Link]:
    return {link.url: link for link in page.links}


def doc(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


# --------------------------------------------------------------------------- decode_body

CP1252 = b"<p>caf\xe9 \x93quoted\x94</p>"
CP1252_TEXT = "<p>café “quoted”</p>"
JAPANESE = "日本語のテキストです。東京都の天気は晴れ、ウェブクローラーは文字コードを判定します。"


class TestDecodeBody:
    def test_header_charset_windows_1252(self):
        assert decode_body(CP1252, "text/html; charset=windows-1252") == (CP1252_TEXT, "cp1252")

    @pytest.mark.parametrize("label", ["ISO-8859-1", "latin1", "us-ascii", '"iso-8859-1"', "l1"])
    def test_whatwg_aliases_for_latin1_mean_cp1252(self, label):
        text, enc = decode_body(CP1252, f"text/html; charset={label}")
        assert (text, enc) == (CP1252_TEXT, "cp1252")

    def test_meta_charset(self):
        body = b'<html><head><meta charset="windows-1252"></head>' + CP1252
        text, enc = decode_body(body, "text/html")
        assert enc == "cp1252"
        assert text.endswith(CP1252_TEXT)

    def test_meta_http_equiv_content_type(self):
        body = (b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
                + CP1252)
        text, enc = decode_body(body, None)
        assert enc == "cp1252"
        assert text.endswith(CP1252_TEXT)

    def test_meta_beyond_first_4k_is_ignored(self):
        body = b"<!--" + b"x" * 5000 + b'--><meta charset="shift_jis"><p>plain</p>'
        assert decode_body(body, None)[1] == "utf-8"

    def test_header_wins_over_meta(self):
        body = b'<meta charset="shift_jis">' + CP1252
        assert decode_body(body, "text/html; charset=windows-1252")[1] == "cp1252"

    def test_shift_jis_declared_in_meta(self):
        body = b'<html><head><meta charset="Shift_JIS"></head><body><p>' + JAPANESE.encode(
            "shift_jis") + b"</p></body></html>"
        text, enc = decode_body(body, None)
        assert enc == "cp932"
        assert JAPANESE in text

    def test_shift_jis_undeclared_is_detected(self):
        html = ("<html><head><title>ニュース</title></head><body>"
                + f"<p>{JAPANESE}</p>" * 4 + "</body></html>")
        text, enc = decode_body(html.encode("shift_jis"), None)
        assert enc in ("cp932", "shift_jis", "shift_jisx0213", "shift_jis_2004")
        assert JAPANESE in text

    @pytest.mark.parametrize("codec, words", [
        ("koi8_r", "Привет мир, это проверка кодировки текста на русском языке."),
        ("gbk", "这是一个用于测试编码检测的中文句子。"),
    ])
    def test_other_undeclared_encodings_are_detected(self, codec, words):
        text, enc = decode_body(f"<html><body><p>{words}</p></body></html>".encode(codec) * 8, None)
        assert words in text and enc != "utf-8"

    def test_undeclared_western_bytes_decode_as_cp1252(self):
        body = b"<p>Un caf\xe9 tr\xe8s \x93bon\x94, d\xe9j\xe0 vu et \xe0 bient\xf4t.</p>" * 5
        text, enc = decode_body(body, None)
        assert enc == "cp1252"
        assert "très “bon”, déjà vu et à bientôt" in text

    def test_utf8_cut_short_by_body_cap_stays_utf8(self):
        body = "<p>naïve “quoted” text</p><p>日本".encode()[:-2]
        text, enc = decode_body(body, None)
        assert enc == "utf-8"
        assert text.startswith("<p>naïve “quoted” text</p><p>日") and text.endswith("\ufffd")

    def test_utf8_with_a_stray_bad_byte_stays_utf8(self):
        good = f"<p>{JAPANESE}</p>".encode()
        text, enc = decode_body(good[:20] + b"\xff" + good[20:], None)
        assert enc == "utf-8"
        assert "\ufffd" in text and JAPANESE[10:] in text

    def test_utf8_bom(self):
        body = b"\xef\xbb\xbf<p>caf\xc3\xa9</p>"
        assert decode_body(body, None) == ("<p>café</p>", "utf-8")

    def test_bom_wins_over_header(self):
        body = b"\xef\xbb\xbf<p>caf\xc3\xa9</p>"
        assert decode_body(body, "text/html; charset=iso-8859-1") == ("<p>café</p>", "utf-8")

    @pytest.mark.parametrize("codec,bom", [("utf-16-le", codecs.BOM_UTF16_LE),
                                           ("utf-16-be", codecs.BOM_UTF16_BE)])
    def test_utf16_bom(self, codec, bom):
        body = bom + "<p>café “x” 日本</p>".encode(codec)
        assert decode_body(body, None) == ("<p>café “x” 日本</p>", codec)

    def test_unknown_header_charset_falls_through(self):
        body = b'<meta charset="windows-1252">' + CP1252
        text, enc = decode_body(body, "text/html; charset=x-no-such-codec")
        assert enc == "cp1252"
        assert text.endswith(CP1252_TEXT)

    @pytest.mark.parametrize("label", ["utf-7", "base64", "rot13", "undefined", "", "zlib"])
    def test_unusable_header_charsets_are_ignored(self, label):
        assert decode_body("héllo".encode(), f"text/html; charset={label}") == ("héllo", "utf-8")

    def test_meta_utf16_means_utf8(self):
        body = '<meta charset="utf-16"><p>café</p>'.encode()
        assert decode_body(body, None) == ('<meta charset="utf-16"><p>café</p>', "utf-8")

    def test_plain_utf8_without_declaration(self):
        html = "<p>naïve “x”</p>"
        assert decode_body(html.encode(), None) == (html, "utf-8")

    def test_invalid_utf8_with_utf8_header_gets_replacement_chars(self):
        text, enc = decode_body(b"ab\xff\xfecd\xc3", "text/html; charset=utf-8")
        assert enc == "utf-8"
        assert text.startswith("ab") and "cd" in text and "\ufffd" in text

    @pytest.mark.parametrize("body", [b"", b"\x00", bytes(range(256)) * 4, b"\xff" * 10,
                                      b"\x80\x81\x8d\x8f\x90\x9d" * 50, b"\xfe\xff\xd8"])
    def test_garbage_never_raises(self, body):
        text, enc = decode_body(body, None)
        assert isinstance(text, str) and isinstance(enc, str)
        codecs.lookup(enc)

    @given(st.binary(max_size=300), st.one_of(st.none(), st.text(max_size=40)))
    @settings(max_examples=150, deadline=None)
    def test_never_raises(self, body, content_type):
        text, enc = decode_body(body, content_type)
        assert isinstance(text, str)
        codecs.lookup(enc)


# --------------------------------------------------------------------------- robots


class TestRobotsDirectives:
    @pytest.mark.parametrize("value,expected", [
        (None, (False, False)),
        ("", (False, False)),
        ("index, follow", (False, False)),
        ("all", (False, False)),
        ("noindex", (True, False)),
        ("nofollow", (False, True)),
        ("noindex, nofollow", (True, True)),
        ("NOINDEX,NOFOLLOW", (True, True)),
        ("none", (True, True)),
        ("None", (True, True)),
        ("noindex nofollow", (True, True)),
        ("noarchive, nosnippet", (False, False)),
        ("max-snippet: -1, noindex", (True, False)),
        ("unavailable_after: 25 Jun 2030 15:00:00 PST", (False, False)),
        ("googlebot: noindex", (True, False)),
        ("otherbot: nofollow, noindex", (True, True)),
        ("skitter: none", (True, True)),
        ("nofollowers, noindexing", (False, False)),
    ])
    def test_values(self, value, expected):
        assert parse_robots_directives(value) == expected

    @given(st.text(max_size=60))
    def test_never_raises(self, value):
        ni, nf = parse_robots_directives(value)
        assert isinstance(ni, bool) and isinstance(nf, bool)


# --------------------------------------------------------------------------- page fields


FULL = """<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>  The   Skitter
     Test Page </title>
  <meta name="description" content="A page   for testing.">
  <meta name="Keywords" content="crawler, parser">
  <link rel="stylesheet" href="/s.css">
  <link rel="canonical" href="/dir/canonical.html?b=2#frag">
  <style>body { color: red } .x::after { content: "STYLE" }</style>
  <script>var s = "<a href='/script-link'>SCRIPT</a>";</script>
</head>
<body>
  <header><h1>Main <em>title</em></h1></header>
  <nav><ul><li><a href="/">Home</a></li><li><a href="about.html">About us</a></li></ul></nav>
  <main>
    <h2>First section</h2>
    <p>Some text with a <a href="https://other.example.org/x">foreign link</a> inside.</p>
    <h3>Second</h3><div>More<br>lines</div>
    <noscript><a href="/noscript-link">NOSCRIPT</a></noscript>
    <template><a href="/template-link">TEMPLATE</a></template>
  </main>
  <footer><h6>Foot</h6></footer>
</body>
</html>"""


class TestPageFields:
    def test_full_document(self):
        page = parse(FULL, "https://www.example.com/dir/page.html", content_type="text/html")
        assert page.title == "The Skitter Test Page"
        assert page.description == "A page for testing."
        assert page.keywords == "crawler, parser"
        assert page.headings == ["Main title", "First section", "Second", "Foot"]
        assert page.lang == "en-gb"
        assert page.encoding == "utf-8"
        assert page.canonical == "https://www.example.com/dir/canonical.html?b=2"
        assert page.noindex is False and page.nofollow is False
        assert page.text == ("Main title Home About us First section Some text with a foreign "
                             "link inside. Second More lines Foot")
        assert [link.url for link in page.links] == [
            "https://www.example.com/",
            "https://www.example.com/dir/about.html",
            "https://other.example.org/x",
        ]
        assert [link.anchor for link in page.links] == ["Home", "About us", "foreign link"]
        assert page.outlinks == 3

    def test_script_style_noscript_template_skipped(self):
        page = parse(FULL)
        for word in ("SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "color"):
            assert word not in page.text
        assert not any("link" in link.url for link in page.links)

    def test_words_not_glued_across_blocks(self):
        assert parse("<p>a</p><p>b</p>").text == "a b"
        assert parse("<div>one</div>two<div>three</div>").text == "one two three"
        assert parse("<ul><li>x</li><li>y</li></ul><table><tr><td>1</td><td>2</td></tr>"
                     "</table>").text == "x y 1 2"
        assert parse("<h1>Title</h1><p>Body</p>").text == "Title Body"
        assert parse("line<br>break<hr>rule").text == "line break rule"

    def test_inline_elements_do_not_split_words(self):
        assert parse("<p>He<b>ll</b>o wor<span>ld</span>, <i>x</i>y</p>").text == "Hello world, xy"
        assert parse("<p>super<wbr>long</p>").text == "superlong"

    def test_whitespace_collapsed(self):
        page = parse("<p>  a \n\t b\u00a0\u00a0c  </p>\n\n<p>\u2003d</p>")
        assert page.text == "a b c d"

    def test_entities_decoded(self):
        assert parse("<p>caf&eacute; &amp; &lt;tag&gt; &#x201C;q&#8221;</p>").text == \
            "café & <tag> “q”"

    def test_missing_fields(self):
        page = parse("<p>only text</p>")
        assert page.title == "" and page.description == "" and page.keywords == ""
        assert page.headings == [] and page.canonical is None and page.lang is None
        assert page.links == []

    def test_first_title_and_meta_win(self):
        page = parse(doc("<p>x</p>", '<title>One</title><title>Two</title>'
                         '<meta name="description" content="d1">'
                         '<meta name="description" content="d2">'))
        assert page.title == "One"
        assert page.description == "d1"

    def test_title_with_entities(self):
        assert parse(doc("", "<title>A &amp; B &mdash; C</title>")).title == "A & B — C"

    def test_lang_from_content_language_meta(self):
        page = parse(doc("x", '<meta http-equiv="Content-Language" content="de-DE, en">'))
        assert page.lang == "de-de"

    def test_encoding_field_follows_decode(self):
        body = b'<meta charset="windows-1252"><p>caf\xe9</p>'
        page = parse_html(body, URL)
        assert page.encoding == "cp1252"
        assert page.text == "café"
        page = parse_html(CP1252, URL, "text/html; charset=iso-8859-1")
        assert page.encoding == "cp1252" and page.text == "café “quoted”"

    def test_shift_jis_page(self):
        body = (f'<html><head><meta charset="shift_jis"><title>{JAPANESE[:5]}</title></head>'
                f'<body><p>{JAPANESE} <a href="/jp">日本語リンク</a></p></body></html>'
                ).encode("shift_jis")
        page = parse_html(body, URL)
        assert page.encoding == "cp932"
        assert page.title == JAPANESE[:5]
        assert JAPANESE in page.text
        assert page.links[0].anchor == "日本語リンク"

    def test_utf16_page(self):
        body = codecs.BOM_UTF16_LE + doc('<p>x <a href="/u">ü</a></p>').encode("utf-16-le")
        page = parse_html(body, URL)
        assert page.encoding == "utf-16-le"
        assert page.text == "x ü"
        assert page.links[0].url == "https://www.example.com/u"


class TestCanonical:
    def test_relative_canonical_resolved(self):
        page = parse(doc("", '<link rel="canonical" href="other.html#x">'))
        assert page.canonical == "https://www.example.com/dir/other.html"

    def test_canonical_case_and_rel_list(self):
        page = parse(doc("", '<link rel="Alternate Canonical" href="HTTPS://WWW.Example.com/a">'))
        assert page.canonical == "https://www.example.com/a"

    def test_canonical_against_base(self):
        page = parse(doc("", '<base href="https://cdn.example.net/b/">'
                             '<link rel=canonical href="c">'))
        assert page.canonical == "https://cdn.example.net/b/c"

    @pytest.mark.parametrize("href", ["http://[bad", "mailto:a@b.c", "javascript:x()",
                                      "https://x.com/" + "a" * 3000])
    def test_bad_canonical_is_none(self, href):
        assert parse(doc("", f'<link rel="canonical" href="{href}">')).canonical is None

    def test_canonical_without_href(self):
        assert parse(doc("", '<link rel="canonical">')).canonical is None


class TestRobotsInPage:
    @pytest.mark.parametrize("meta,expected", [
        ('<meta name="robots" content="noindex">', (True, False)),
        ('<meta name="robots" content="nofollow">', (False, True)),
        ('<meta name="ROBOTS" content="NoIndex, NoFollow">', (True, True)),
        ('<meta name="robots" content="none">', (True, True)),
        ('<meta name="robots" content="index, follow">', (False, False)),
        ('<meta name="skitter" content="noindex">', (True, False)),
        ('<meta name="Skitter" content="none">', (True, True)),
        ('<meta name="googlebot" content="noindex, nofollow">', (False, False)),
        ('<meta name="robots" content="noindex"><meta name="skitter" content="nofollow">',
         (True, True)),
        ('<meta content="noindex">', (False, False)),
    ])
    def test_meta(self, meta, expected):
        page = parse(doc('<a href="/x">x</a>', meta))
        assert (page.noindex, page.nofollow) == expected
        assert page.links and all(link.nofollow == expected[1] for link in page.links)

    def test_custom_user_agent_token(self):
        html = doc('<a href="/x">x</a>', '<meta name="mybot" content="nofollow">')
        assert parse(html).nofollow is False
        assert parse(html, user_agent_token="MyBot").nofollow is True

    @pytest.mark.parametrize("header,expected", [
        ("noindex", (True, False)),
        ("nofollow", (False, True)),
        ("none", (True, True)),
        ("googlebot: noindex, nofollow", (False, False)),   # for another crawler (Google's rules)
        ("skitter: noindex", (True, False)),
        ("SKITTER: nofollow", (False, True)),
        ("nofollow, otherbot: noindex", (False, True)),
        ("otherbot: noindex, skitter: nofollow", (False, True)),
        ("max-snippet: 20, noindex", (True, False)),
        ("unavailable_after: Wed, 25 Jun 2030 15:00:00 PST, noindex", (True, False)),   # a date's comma
        ("unavailable_after: 25-Jun-2030 15:00:00 GMT\nnofollow", (False, True)),
        ("noarchive\nnofollow", (False, True)),             # two header lines: both count
        ("otherbot: noindex\nnofollow", (False, True)),     # a prefix holds within its line
        ("noarchive", (False, False)),
        (None, (False, False)),
    ])
    def test_x_robots_tag(self, header, expected):
        page = parse(doc('<a href="/x">x</a>'), x_robots_tag=header)
        assert (page.noindex, page.nofollow) == expected
        assert [link.nofollow for link in page.links] == [expected[1]]

    def test_header_and_meta_combine(self):
        page = parse(doc("", '<meta name="robots" content="nofollow">'), x_robots_tag="noindex")
        assert (page.noindex, page.nofollow) == (True, True)

    def test_meta_robots_in_body_still_counts(self):
        page = parse('<p>x</p><meta name="robots" content="noindex">')
        assert page.noindex is True


# --------------------------------------------------------------------------- links


class TestLinkUrls:
    def test_relative_links(self):
        page = parse('<a href="a.html">1</a><a href="../up">2</a><a href="/root">3</a>'
                     '<a href="?q=1">4</a><a href="//cdn.example.org/x">5</a>'
                     '<a href="HTTP://WWW.EXAMPLE.COM:80/%7Euser/">6</a>',
                     "https://www.example.com/dir/sub/page.html")
        assert [link.url for link in page.links] == [
            "https://www.example.com/dir/sub/a.html",
            "https://www.example.com/dir/up",
            "https://www.example.com/root",
            "https://www.example.com/dir/sub/page.html?q=1",
            "https://cdn.example.org/x",
            "http://www.example.com/~user/",
        ]

    def test_base_href(self):
        page = parse(doc('<a href="x.html">x</a><a href="/abs">a</a><a href="#frag">f</a>',
                         '<base href="/other/dir/">'))
        assert [link.url for link in page.links] == [
            "https://www.example.com/other/dir/x.html",
            "https://www.example.com/abs",
            "https://www.example.com/other/dir/",
        ]

    def test_absolute_base_href_on_other_host(self):
        page = parse(doc('<a href="x">x</a>', '<base href="https://cdn.example.net/b/">'))
        assert page.links[0].url == "https://cdn.example.net/b/x"
        assert page.links[0].distance == 5

    def test_first_base_wins_and_bad_base_is_ignored(self):
        page = parse(doc('<a href="x">x</a>', '<base href="/one/"><base href="/two/">'))
        assert page.links[0].url == "https://www.example.com/one/x"
        page = parse(doc('<a href="x">x</a>', '<base href="javascript:alert(1)">'))
        assert page.links[0].url == "https://www.example.com/dir/x"
        page = parse(doc('<a href="x">x</a>', '<base target="_blank">'))
        assert page.links[0].url == "https://www.example.com/dir/x"

    def test_fragment_dropped_and_duplicates_removed(self):
        page = parse('<a href="/a#one">first</a><a href="/a#two">second</a>'
                     '<a href="https://www.example.com/a">third</a><a href="/b">b</a>')
        assert [(link.url, link.anchor) for link in page.links] == [
            ("https://www.example.com/a", "first"), ("https://www.example.com/b", "b")]

    def test_self_links_dropped(self):
        page = parse('<a href="#top">top</a><a href="">empty</a><a href="page.html">me</a>'
                     '<a href="page.html?x=1">not me</a>', URL + "#frag")
        assert [link.url for link in page.links] == [URL + "?x=1"]

    @pytest.mark.parametrize("href", [
        "mailto:someone@example.com", "javascript:void(0)", "JavaScript:alert(1)",
        "tel:+123", "data:text/html,<p>x</p>", "ftp://ftp.example.com/f", "about:blank",
        "http://[bad", "http://", "https://exa mple.com/", "  javascript:x()",
        "http://x.com/" + "a" * 3000,
    ])
    def test_unusable_links_skipped(self, href):
        page = parse(f'<a href="{href}">bad</a><a href="/good">good</a>')
        assert [link.url for link in page.links] == ["https://www.example.com/good"]

    def test_whitespace_around_href_is_stripped(self):
        page = parse('<a href="  /spaced\n ">s</a><a href="\n/x\ty">t</a>')
        assert [link.url for link in page.links] == [
            "https://www.example.com/spaced", "https://www.example.com/xy"]

    def test_tab_does_not_hide_scheme_relative_url(self):
        page = parse('<a href="/\t/evil.example.net/p">x</a>')
        assert page.links[0].url == "https://evil.example.net/p"
        page = parse('<a href="/\\evil.example.net/p">x</a>')
        assert page.links[0].url == "https://evil.example.net/p"

    def test_a_without_href_is_not_a_link(self):
        page = parse('<p><a name="x">anchor</a> <a href="/y">y</a></p>')
        assert [link.url for link in page.links] == ["https://www.example.com/y"]
        assert page.text == "anchor y"

    def test_area_links(self):
        page = parse('<img usemap="#m"><map name="m">'
                     '<area shape="rect" href="/area1" alt="First area">'
                     '<area href="/area2" title="Second area"><area alt="no href"></map>')
        assert [(link.url, link.anchor) for link in page.links] == [
            ("https://www.example.com/area1", "First area"),
            ("https://www.example.com/area2", "Second area"),
        ]

    def test_image_link_anchor_is_alt_then_title(self):
        page = parse('<a href="/i1"><img src="x.png" alt=" Logo  alt "></a>'
                     '<a href="/i2" title="Link title"><img src="y.png"></a>'
                     '<a href="/i3"><img src="z.png"></a>'
                     '<a href="/i4">Text <img src="w.png" alt="ignored"></a>')
        assert [link.anchor for link in page.links] == ["Logo alt", "Link title", "", "Text"]

    def test_links_in_document_order(self):
        page = parse("<div>" + "".join(f'<p><a href="/p{i}">{i}</a></p>' for i in range(50))
                     + "</div>")
        assert [link.url for link in page.links] == [
            f"https://www.example.com/p{i}" for i in range(50)]

    def test_svg_and_custom_elements_do_not_break_walk(self):
        page = parse('<my-widget><a href="/in-custom">c</a></my-widget>'
                     '<svg><a href="/in-svg"><text>s</text></a></svg><p>after</p>')
        assert "https://www.example.com/in-custom" in link_map(page)
        assert page.text.endswith("after")


def test_fast_link_constructor_builds_real_links():
    from skitter.parse import _make_link

    link = _make_link("https://a.example/", "anchor", "ctx", 2, 1, 5, True)
    assert link == Link("https://a.example/", "anchor", "ctx", 2, 1, 5, True)
    assert hash(link) == hash(Link("https://a.example/", "anchor", "ctx", 2, 1, 5, True))
    assert repr(link) == repr(Link("https://a.example/", "anchor", "ctx", 2, 1, 5, True))
    with pytest.raises(AttributeError):
        link.url = "x"  # still frozen


class TestLinkAttributes:
    def test_anchor_text_collapsed(self):
        page = parse('<a href="/x">\n  Read   <span>the</span>\tdocs\n</a>')
        assert page.links[0].anchor == "Read the docs"

    @pytest.mark.parametrize("html,expected", [
        ('<a href="/x">plain</a>', 1),
        ('<a href="/x"><b>bold</b></a>', 2),
        ('<a href="/x"><strong>bold</strong></a>', 2),
        ('<b><a href="/x">bold around</a></b>', 2),
        ('<strong><span><a href="/x">deep bold</a></span></strong>', 2),
        ('<a href="/x"><i>it</i></a>', 2),
        ('<a href="/x"><em>em</em></a>', 2),
        ('<em><a href="/x">em around</a></em>', 2),
        ('<a href="/x"><b><i>both</i></b></a>', 3),
        ('<b><a href="/x"><em>bold around, em inside</em></a></b>', 3),
        ('<i><strong><a href="/x">both around</a></strong></i>', 3),
        ('<a href="/x"><strong>b</strong> and <em>i</em></a>', 3),
        ('<b>bold</b><a href="/x">after bold</a><i>it</i>', 1),
        ('<p><b>bold <i>closed</i></b> <a href="/x">later</a></p>', 1),
        ('<h1><a href="/x">heading</a></h1>', 1),
    ])
    def test_visibility(self, html, expected):
        page = parse(html)
        assert page.links[0].visibility == expected

    def test_visibility_per_link(self):
        page = parse('<p><b><a href="/1">b</a></b> <a href="/2">plain</a> '
                     '<i><a href="/3"><b>bi</b></a></i> <a href="/4">plain</a></p>')
        assert [link.visibility for link in page.links] == [2, 1, 3, 1]

    def test_position_thirds(self):
        words = " ".join(f"w{i:03d}" for i in range(300))  # about 1200 characters
        html = (f'<p><a href="/first">start</a> {words} {words} <a href="/middle">middle</a> '
                f'{words} {words} <a href="/last">end</a> {words}</p>'
                f'<p><a href="/very-last">final</a></p>')
        page = parse(html)
        assert [link.position for link in page.links] == [3, 2, 1, 1]

    @pytest.mark.parametrize("offset,expected", [
        (2, 3), (99, 3), (100, 2), (150, 2), (199, 2), (200, 1), (297, 1)])
    def test_position_boundaries(self, offset, expected):
        # a 300-character text whose only link's first word starts at `offset`
        html = f'<p>{"x" * (offset - 1)} <a href="/l">L</a> {"y" * (300 - offset - 2)}</p>'
        page = parse(html)
        assert len(page.text) == 300 and page.text.index("L") == offset
        assert page.links[0].position == expected

    def test_position_of_link_at_start(self):
        page = parse(f'<a href="/l">L</a> {"y" * 100}')
        assert page.links[0].position == 3

    def test_position_when_page_has_no_text(self):
        html = "".join(f'<a href="/{i}"><img src="{i}.png"></a>' for i in range(9))
        page = parse(html)
        assert [link.position for link in page.links] == [3, 3, 3, 2, 2, 2, 1, 1, 1]

    def test_distance(self):
        page = parse('<a href="/same">s</a><a href="https://www.example.com:8443/port">p</a>'
                     '<a href="http://www.example.com/http">h</a>'
                     '<a href="https://example.com/apex">a</a>'
                     '<a href="https://other.org/">o</a><a href="//WWW.EXAMPLE.COM/up">u</a>',
                     "https://www.example.com/")
        assert {link.url: link.distance for link in page.links} == {
            "https://www.example.com/same": 1,
            "https://www.example.com:8443/port": 1,
            "http://www.example.com/http": 1,
            "https://example.com/apex": 5,
            "https://other.org/": 5,
            "https://www.example.com/up": 1,
        }

    def test_distance_matches_urls_host_of(self):
        page = parse(Path(DATA / "article_30k.html").read_bytes(),
                     "https://www.example.com/articles/focused-crawling.html")
        page_host = urls.host_of("https://www.example.com/articles/focused-crawling.html")
        for link in page.links:
            assert link.distance == (1 if urls.host_of(link.url) == page_host else 5)

    def test_distance_ipv6_and_ports(self):
        page = parse('<a href="http://[::1]:8080/a">v6</a><a href="http://[::2]/b">v6b</a>',
                     "http://[::1]/")
        assert [link.distance for link in page.links] == [1, 5]

    def test_nofollow_rel(self):
        page = parse('<a href="/1" rel="nofollow">n</a><a href="/2" rel="UGC">u</a>'
                     '<a href="/3" rel="noopener sponsored">s</a><a href="/4" rel="noopener">o</a>'
                     '<a href="/5">p</a><a href="/6" rel="nofollowme">x</a>'
                     '<area href="/7" rel="nofollow">')
        assert [link.nofollow for link in page.links] == [True, True, True, False, False, False,
                                                          True]

    def test_context_words(self):
        before = " ".join(f"b{i}" for i in range(20))
        after = " ".join(f"a{i}" for i in range(20))
        page = parse(f'<div><p>{before} <a href="/x">the anchor</a> {after}</p></div>')
        ctx = page.links[0].context
        assert ctx == " ".join([f"b{i}" for i in range(10, 20)] + [f"a{i}" for i in range(10)])
        assert "anchor" not in ctx

    def test_context_stays_in_nearest_block(self):
        page = parse('<p>Other paragraph words.</p><ul><li>Before <a href="/x">link</a> after.</li>'
                     '<li>Next item</li></ul><td>cell</td>')
        assert page.links[0].context == "Before after."

    def test_context_uses_enclosing_block_across_inline_markup(self):
        page = parse('<p>See <em>the <b>very</b></em> <a href="/x">docs</a> <span>for</span> '
                     'more.</p>')
        assert page.links[0].context == "See the very for more."

    def test_context_empty_when_link_is_whole_block(self):
        page = parse('<ul><li><a href="/x">Only</a></li></ul>')
        assert page.links[0].context == ""

    def test_context_with_long_words(self):
        long_words = " ".join(f"w{i}" * 30 for i in range(12))
        page = parse(f'<p>{long_words} <a href="/x">x</a> tail</p>')
        ctx = page.links[0].context.split()
        assert len(ctx) == 11 and ctx[-1] == "tail"
        assert ctx[0] == "w2" * 30

    def test_context_in_huge_block_is_bounded(self):
        text = " ".join(f"t{i}" for i in range(20000))
        page = parse(f"<div>{text} <a href='/x'>x</a> {text}</div>")
        assert page.links[0].context.split() == [f"t{i}" for i in range(19990, 20000)] + [
            f"t{i}" for i in range(10)]

    def test_context_is_left_out_on_request(self):
        before = " ".join(f"b{i}" for i in range(20))
        page = parse(f'<div><p>{before} <a href="/x">the anchor</a> after</p></div>', link_context=False)
        assert page.links[0].context == "" and page.links[0].anchor == "the anchor"

    def test_page_nofollow_marks_every_link(self):
        page = parse(doc('<a href="/1">1</a><a href="/2" rel="follow">2</a>',
                         '<meta name="robots" content="nofollow">'))
        assert [link.nofollow for link in page.links] == [True, True]


# --------------------------------------------------------------------------- robustness


class TestRobustness:
    @pytest.mark.parametrize("body", [
        b"", b" ", b"\x00", b"<", b"<a href=", b"<<<<>>>>", b"</p></div></a>",
        b"<a href='/x'", b"<html><body><a href=/ok>ok", b"\xff\xfe\x00<",
        b"<!--", b"<script>", b"<table><a href=/t>t</a><tr><td>x",
        b"<a href=/1><a href=/2>nested</a></a>", b"<frameset><frame src=/f></frameset>",
        bytes(range(256)), b"<p>" * 1000, b"<select><option>a<option>b</select>",
    ])
    def test_broken_html_never_raises(self, body):
        page = parse_html(body, URL)
        assert isinstance(page, Page)

    def test_empty_body(self):
        page = parse_html(b"", URL)
        assert page == Page(encoding="utf-8")

    def test_bad_page_url(self):
        page = parse_html(b'<a href="/x">x</a><a href="https://ok.example/">ok</a>', "not a url")
        assert isinstance(page, Page)
        assert all(link.url.startswith("https://") for link in page.links)

    def test_unclosed_nested_links(self):
        page = parse('<a href="/1">one <a href="/2">two</a>')
        assert [(link.url, link.anchor) for link in page.links] == [
            ("https://www.example.com/1", "one"), ("https://www.example.com/2", "two")]

    def test_deep_nesting_is_fast(self):
        for body in (b"<div>" * 100_000 + b"<a href=/deep>deep</a>",
                     b"<section><b><i><a href=/x>x</a>" * 30_000):
            t0 = time.perf_counter()
            page = parse_html(body, URL)
            assert time.perf_counter() - t0 < 5
            assert page.links and page.links[0].anchor in ("deep", "x")

    def test_deep_nesting_keeps_words_apart(self):
        page = parse_html(b"<div>w" * 6000, URL)
        assert page.text.split() == ["w"] * 6000

    def test_select_options_are_not_text(self):
        page = parse("<p>Pick<select><button><selectedcontent></selectedcontent></button>"
                     "<option selected>France</option><option>Spain</option></select>one</p>")
        assert page.text == "Pick one"

    def test_fixture_article(self):
        page = parse_html((DATA / "article_30k.html").read_bytes(),
                          "https://www.example.com/articles/focused-crawling.html",
                          "text/html; charset=utf-8")
        assert page.title == "Focused crawling with link attributes | Example News"
        assert page.canonical == "https://www.example.com/articles/focused-crawling.html"
        assert page.headings[0] == "Focused crawling with link attributes"
        assert page.lang == "en"
        assert len(page.links) >= 90
        assert {link.position for link in page.links} == {1, 2, 3}
        assert {link.distance for link in page.links} == {1, 5}
        assert {link.visibility for link in page.links} >= {1, 2}
        assert any(link.nofollow for link in page.links)
        assert "dataLayer" not in page.text and "font-family" not in page.text
        assert len({link.url for link in page.links}) == len(page.links)

    def test_speed_smoke(self):
        """Generous bound (real figure: ~1000 pages/s); catches accidental quadratic work."""
        body = (DATA / "article_30k.html").read_bytes()
        parse_html(body, URL)
        t0 = time.perf_counter()
        for _ in range(20):
            parse_html(body, URL)
        assert (time.perf_counter() - t0) / 20 < 0.05


# --------------------------------------------------------------------------- properties


def check_page(page: Page, url: str) -> None:
    assert isinstance(page, Page)
    page_canon = None
    try:
        page_canon = urls.canonicalize(url)
    except ValueError:
        pass
    seen = set()
    for link in page.links:
        assert link.url.startswith(("http://", "https://"))
        assert urls.canonicalize(link.url) == link.url
        assert link.url != page_canon
        assert link.url not in seen
        seen.add(link.url)
        assert link.visibility in (1, 2, 3)
        assert link.position in (1, 2, 3)
        assert link.distance in (1, 5)
        assert isinstance(link.nofollow, bool)
        assert link.anchor == link.anchor.strip()
        assert "  " not in link.context
    assert "  " not in page.text and page.text == page.text.strip()


HREFS = st.sampled_from([
    "/", "/a", "a/b", "../c", "?q=1", "#f", "", " ", "//h.example/x", "http://x.example",
    "https://X.EXAMPLE:443/%7e?a=%41", "mailto:x", "javascript:0", "http://[::1]/", "http://[",
    "http://a b/", "\t/t\n", "http://1.2.3.4/", "https://xn--nxasmq6b.example/", "/é ü",
    "HTTP://www.example.com/dir/page.html", "data:,x", "//", "\\\\evil", "http:/relative",
])
TAGS = st.sampled_from(["p", "div", "b", "i", "em", "strong", "a", "span", "li", "ul", "td",
                        "table", "h1", "h3", "script", "style", "template", "noscript", "area",
                        "img", "br", "base", "meta", "link", "title", "select", "option", "svg"])
WORDS = st.sampled_from(["alpha", "beta", " ", "\n", "gamma delta", "é", "&amp;", "&lt;", "<",
                         ">", "\u00a0", "日本", "\x00", "x" * 50, "&#0;", "&bogus;"])


@st.composite
def html_documents(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            parts.append(draw(WORDS))
        elif kind == 1:
            tag = draw(TAGS)
            attrs = ""
            if draw(st.booleans()):
                attrs += f' href="{draw(HREFS)}"'
            if draw(st.booleans()):
                attrs += f' rel="{draw(st.sampled_from(["nofollow", "ugc", "canonical", "x"]))}"'
            if draw(st.booleans()):
                attrs += f' alt="{draw(WORDS)}" name="robots" content="noindex"'
            parts.append(f"<{tag}{attrs}>")
        elif kind == 2:
            parts.append(f"</{draw(TAGS)}>")
        else:
            parts.append(draw(st.text(max_size=10)))
    return "".join(parts)


PAGE_URLS = st.sampled_from([URL, "http://[::1]:8080/x/", "https://xn--nxasmq6b.example/",
                             "not a url", "http://1.2.3.4/a?b#c"])


class TestProperties:
    @given(st.binary(max_size=2000), PAGE_URLS, st.one_of(st.none(), st.text(max_size=30)))
    @settings(max_examples=150, deadline=None)
    def test_arbitrary_bytes(self, body, url, content_type):
        check_page(parse_html(body, url, content_type), url)

    @given(html_documents(), PAGE_URLS)
    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    def test_arbitrary_markup(self, html, url):
        page = parse_html(html.encode("utf-8", "surrogatepass"), url)
        check_page(page, url)
        for word in ("alpha", "beta", "gamma"):
            if word in html and "<" not in html and "&" not in html:
                assert word in page.text

    @given(html_documents(), PAGE_URLS)
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def test_without_link_context_only_the_context_is_left_out(self, html, url):
        """``link_context=False`` (every strategy but SharkSearch): the same page, the same links,
        each with an empty ``context``; the main text too."""
        body = html.encode("utf-8", "surrogatepass")
        full, main = parse_with_main_text(body, url)
        lean, lean_main = parse_with_main_text(body, url, link_context=False)
        assert [replace(link, context="") for link in full.links] == lean.links
        assert replace(full, links=lean.links) == lean and main == lean_main
        # (parse_html does not look for the main text: no main_start)
        assert parse_html(body, url, link_context=False) == replace(lean, main_start=None)

    @given(st.text(max_size=300), PAGE_URLS, st.one_of(st.none(), st.text(max_size=40)))
    @settings(max_examples=100, deadline=None)
    def test_arbitrary_text(self, text, url, robots):
        page = parse_html(text.encode("utf-8", "surrogatepass"), url, x_robots_tag=robots)
        check_page(page, url)


# --------------------------------------------------------------------------- meta refresh

class TestMetaRefresh:
    @pytest.mark.parametrize("content,expected", [
        ("0; url=/next", "/next"),
        ("0;URL=/next", "/next"),
        ("5, url = 'quoted page.html' trailing", "quoted page.html"),
        ('3;url="/q"', "/q"),
        ("0; /bare", "/bare"),
        ("  2.5 ; url=http://a.test/", "http://a.test/"),
        ("10", None),          # a plain reload
        ("0;", None),
        ("url=/x", None),      # no time: not a refresh (HTML standard)
        ("0x; url=/x", None),
        ("", None),
    ])
    def test_refresh_url(self, content, expected):
        assert refresh_url(content) == expected

    @given(st.text(max_size=40))
    def test_never_raises(self, content):
        refresh_url(content)

    def test_the_refresh_target_is_a_link(self):
        page = parse(doc('<a href="/a">a</a>', '<meta http-equiv="Refresh" content="0; URL=moved.html">'))
        assert [link.url for link in page.links] == [urls.canonicalize("https://www.example.com/a"),
                                                     urls.canonicalize("https://www.example.com/dir/moved.html")]

    def test_a_refresh_to_itself_or_to_a_link_already_there_adds_nothing(self):
        assert len(parse(doc('<a href="/a">a</a>', '<meta http-equiv="refresh" content="0; url=/a">')).links) == 1
        assert parse(doc("", '<meta http-equiv="refresh" content="30">')).links == []

    def test_nofollow_holds_for_the_refresh_target(self):
        page = parse(doc("", '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/b">'))
        assert [link.nofollow for link in page.links] == [True]


def test_a_page_keeps_its_first_ten_thousand_links() -> None:
    """A hold-out page of 200,000 links held the crawl's event loop for 5 s while the frontier took
    them in: the analysis keeps the first MAX_LINKS, in document order."""
    from skitter.analyse import MAX_LINKS, analyse
    from skitter.models import FetchResult

    body = ("<html><body>" + "".join(f'<a href="/l{i}">l{i}</a>' for i in range(MAX_LINKS + 2000))
            + "</body></html>").encode()
    result = FetchResult("http://h.example/", status=200, headers=[("Content-Type", "text/html")], body=body,
                         raw_body=body)
    page = analyse(result, "http://h.example/", "skitter").page
    assert MAX_LINKS == 10_000 and len(page.links) == MAX_LINKS
    assert page.links[0].url == "http://h.example/l0" and page.links[-1].url == f"http://h.example/l{MAX_LINKS - 1}"
