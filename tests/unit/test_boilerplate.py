"""Main text: the parser's body text without boilerplate (skitter.boilerplate), from one parse."""

from __future__ import annotations

from dataclasses import replace

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.parse import parse_html, parse_with_main_text

ARTICLE = " ".join(["The article body is here and it is long enough to be the main content."] * 4)


def page(body: str) -> str:
    return f"<!doctype html><html><head><title>T</title></head><body>{body}</body></html>"


def main_of(body: str) -> str:
    return parse_with_main_text(page(body).encode(), "http://example.com/a", "text/html; charset=utf-8")[1]


def test_site_chrome_stays_in_the_page_text_and_its_links_but_not_in_the_main_text() -> None:
    html = page("<header class='site'><nav><a href='/topics'>Topics</a></nav></header>"
                f"<main><article><h2>Heading</h2><p>{ARTICLE}</p></article></main>"
                "<aside><a href='/popular'>Popular stories</a></aside>"
                "<footer><p>Copyright footer line</p></footer>")
    page_, main = parse_with_main_text(html.encode(), "http://example.com/a", "text/html")
    assert "article body is here" in main and "Heading" in main
    for chrome in ("Topics", "Popular stories", "Copyright"):
        assert chrome not in main and chrome in page_.text
    assert {l.url for l in page_.links} == {"http://example.com/topics", "http://example.com/popular"}
    # the same page either way, but where the main text starts, which only the one looks for
    assert page_.main_start == page_.text.index("Heading")
    assert parse_html(html.encode(), "http://example.com/a", "text/html") == replace(page_, main_start=None)


def test_landmarks_near_the_top_of_body_go_deep_ones_stay() -> None:
    deep = "<div><div><div>{}</div></div></div>"
    for tag in ("nav", "ul", "aside", "header"):
        inner = f"<{tag}><li>Landmark words</li></{tag}>" if tag == "ul" else f"<{tag}>Landmark words</{tag}>"
        assert "Landmark" not in main_of(f"<div>{inner}</div><p>{ARTICLE}</p>"), tag
        assert "Landmark" in main_of(deep.format(inner) + f"<p>{ARTICLE}</p>"), tag


def test_a_list_or_a_header_inside_main_or_article_is_content() -> None:
    """A search result page's records in ``<main><ul>``, an article's own ``<header>``: content
    (a form's result pages told apart by their main text, skitter.forms.result_signature); site
    navigation in ``<main>`` stays boilerplate, and so does a list beside ``<main>``."""
    results = "<ul><li><a href='/r/1'>Record words one</a></li><li>Record words two</li></ul>"
    for wrap in ("<main>{}</main>", "<div><main>{}</main></div>", "<article>{}</article>",
                 "<div role='main'>{}</div>"):
        assert "Record words two" in main_of(wrap.format(results) + f"<p>{ARTICLE}</p>"), wrap
    assert "Byline words" in main_of(f"<article><header>Byline words</header><p>{ARTICLE}</p></article>")
    assert "Menu words" not in main_of(f"<main><nav>Menu words</nav><p>{ARTICLE}</p></main>")
    assert "Side words" not in main_of(f"<ul><li>Side words</li></ul><main><p>{ARTICLE}</p></main>")


def test_a_footer_is_boilerplate_near_body_or_at_the_end_of_the_page() -> None:
    deep_last = "<div><div><div><p>{}</p><footer>Footer words</footer></div></div></div>"
    assert "Footer" not in main_of(deep_last.format(ARTICLE))
    spaced = "<div><div><div><p>{}</p><footer>Footer words</footer>\n<!-- end -->\n</div>\n</div></div>"
    assert "Footer" not in main_of(spaced.format(ARTICLE))     # white space and comments after it
    deep_inside = "<div><div><div><footer>Footer words</footer><p>{}</p></div></div></div>"
    assert "Footer" in main_of(deep_inside.format(ARTICLE))
    assert "Footer" not in main_of(f"<p>{ARTICLE}</p><div class='site-footer'>Footer words</div>")


def test_attribute_rules() -> None:
    cases = {
        "<div role='navigation'>Drop words</div>": False,
        "<span aria-hidden='true'>Drop words</span>": False,
        "<p hidden>Drop words</p>": False,
        "<span style='display: none'>Drop words</span>": False,
        "<div class='is-hidden'>Drop words</div>": False,
        "<div class='google-ad'>Drop words</div>": False,
        "<div class='ad-3f9a'>Drop words</div>": False,
        "<div class='share'>Drop words</div>": False,
        "<div id='sidebar'>Drop words</div>": False,
        "<div class='sidebar'><small>Drop words: 4672 online</small></div>": False,   # (a hold-out page's)
        "<div class='col sidebar-right'>Drop words</div>": False,
        "<div class='has-sidebar'>Keep words</div>": True,
        "<section class='site-search'>Drop words</section>": False,
        "<div class='modal'>Drop words</div>": False,
        "<a class='skip-link' href='#c'>Drop words</a>": False,
        "<button>Drop words</button>": False,
        "<textarea>Drop words</textarea>": False,
        "<div class='header-shadow'>Keep words</div>": True,      # "ad" inside a word is not an ad
        "<div class='navigator-help'>Keep words</div>": True,
        "<div style='border: none'>Keep words</div>": True,
        "<span aria-hidden='false'>Keep words</span>": True,
        "<main class='nav'>Keep words</main>": True,               # <main> is content
    }
    for html, kept in cases.items():
        main = main_of(f"<div><div><div><p>{ARTICLE}</p>{html}<p>{ARTICLE}</p></div></div></div>")
        assert (("Keep words" in main) if kept else ("Drop words" not in main)), html


def test_a_counter_in_a_side_bar_after_main_is_no_change_of_the_main_text() -> None:
    """A hold-out recrawl counted a "Visitors online: N" side bar after </main> as a change at every
    visit (7,300 changes a day estimated for pages that never changed); inside an article a side
    bar is the article's."""
    def html(n: int) -> bytes:
        return page(f"<main><article><p>{ARTICLE}</p></article></main>"
                    f"<div class='sidebar'><small>Visitors online: {n}</small></div>").encode()
    mains = {parse_with_main_text(html(n), "http://example.com/", "text/html")[1] for n in (4672, 4673)}
    assert len(mains) == 1 and "Visitors" not in mains.pop()
    inside = main_of(f"<article><p>{ARTICLE}</p><div class='sidebar'>Keep words</div></article>")
    assert "Keep words" in inside


def test_a_wrapper_is_looked_into_not_dropped() -> None:
    main = main_of(f"<div class='page-wrapper menu'><div><div><p>{ARTICLE}</p></div></div></div>")
    assert "article body" in main


def test_a_page_that_is_all_boilerplate_keeps_its_whole_text() -> None:
    page_, main = parse_with_main_text(page("<nav><a href='/x'>Only navigation here</a></nav>").encode(),
                                       "http://example.com/", "text/html")
    assert main == page_.text == "Only navigation here"


_TAGS = ["div", "nav", "ul", "li", "aside", "header", "footer", "main", "p", "span", "a", "button", "b"]
_ATTRS = ["", " class='nav'", " hidden", " role='navigation'", " class='x-wrapper'", " aria-hidden='true'"]


@st.composite
def html_soup(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            parts.append(f"<{draw(st.sampled_from(_TAGS))}{draw(st.sampled_from(_ATTRS))}>")
        elif kind == 1:
            parts.append(f"</{draw(st.sampled_from(_TAGS))}>")
        else:
            parts.append(draw(st.text(alphabet="abc xyz\n", max_size=12)))
    return "".join(parts)


@settings(max_examples=150, deadline=None)
@given(html_soup())
def test_the_main_text_is_the_page_text_with_parts_left_out(soup: str) -> None:
    page_, main = parse_with_main_text(page(soup).encode(), "http://example.com/", "text/html")
    assert replace(page_, main_start=None) == parse_html(page(soup).encode(), "http://example.com/", "text/html")
    text = iter(page_.text.replace(" ", ""))
    assert all(ch in text for ch in main.replace(" ", ""))   # a subsequence of the page's text
    # main_start is where the main text's first letter is in the page's text
    first = next((c for c in (main or "") if c.isalnum()), None)
    assert page_.main_start is not None
    assert page_.text[page_.main_start] == first if first is not None else page_.main_start == 0


def test_a_hidden_body_is_still_the_page_and_a_hidden_main_is_not() -> None:
    html = page(f"<nav>Site navigation words</nav><p>{ARTICLE}</p>").replace("<body>", "<body style='display:none'>")
    page_, main = parse_with_main_text(html.encode(), "http://example.com/", "text/html")
    assert "article body" in main and "Site navigation" not in main
    assert "Hidden main words" not in main_of(f"<p>{ARTICLE}</p><main hidden>Hidden main words</main>")


def test_nested_boilerplate_candidates_stay_linear() -> None:
    # each of these is checked by the rules; climbing to <body> from every one was quadratic
    for body in (b"<div class=footer>x" * 4000 + b"<p>end</p>",
                 b"<span style='color:red' class=footer>x" * 20_000 + b"<p>end</p>"):
        t0 = time.perf_counter()
        page_, main = parse_with_main_text(page(body.decode()).encode(), "http://example.com/", "text/html")
        assert time.perf_counter() - t0 < 5
        assert page_.text.endswith("end") and main
