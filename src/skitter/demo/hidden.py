"""The demo web's hidden site: a catalogue whose records are reachable only through a search form.

Pure: no I/O. ``server.py`` serves it as one extra loopback host when asked (``--hidden``); the
tests drive it in process. It is the fixture of the form crawler (:mod:`skitter.forms`, issue #22,
after Madhavan et al., VLDB 2008): everything is derived from ``HiddenConfig.seed``, so the same
config gives the same bytes, and ``record_urls()`` is the ground truth of what a crawler should
reach.

Layout (``base`` is the host's base URL)::

    /                       home page: a welcome text and one link, to /search
    /search                 the search form (GET, no action attribute: it submits to /search):
                            a text box ``q``, a select ``category`` ("Any category" = ""), a hidden
                            ``lang=en`` the server requires (400 without it) and an unnamed submit
                            button; the same page also holds an advanced search form whose action
                            (/search/advanced) robots.txt disallows
    /search?q=&category=&lang=en[&page=N]
                            results, newest first (year, then record number), ``per_page`` a page
                            with Previous/Next links, only the first ``cap`` matches shown (as real
                            sites do); no match: "No records match “q”." (status 200)
    /search/advanced?...    the same results with a year range (disallowed by robots.txt)
    /record/<i>.html        one record (title, maker, year, category, description); linked only
                            from result pages; carries a GET comment form
    /record/<i>/comment?... "comment received": the page a crawler must never request
    /newsletter?...         "subscribed": the footer's GET sign-up form, never to be submitted
    /account/login          the header's POST login form's action (405 to a GET)
    /robots.txt             ``Disallow: /search/advanced``

Records: a title (an adjective, a word of the category's vocabulary and a noun), a maker (one of
about ``records / 6`` invented names), a year (1950-2024), a category (one of the demo web's topic
names) and a 16-30 word description drawn from the demo web's vocabularies (``demo/web.py``): ~40 %
words of the category's topic, Zipf-weighted, the rest common English words. Search matches
records holding every word of ``q`` (case-insensitive, whole words) in any field.
"""

from __future__ import annotations

import html
import itertools
import random
import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import parse_qsl, urlencode, urlsplit

from .web import _COMMON, _TOPIC_WORDS_SPLIT, TOPIC_NAMES, Response

__all__ = ["HiddenConfig", "HiddenSite", "Record"]

_HTML = "text/html; charset=utf-8"
_YEARS = (1950, 2024)
_ADJECTIVES = ("quiet modern practical forgotten hidden simple complete early late curious small "
               "great honest patient unexpected everyday").split()
_NOUNS = ("guide notes handbook primer atlas companion almanac casebook journal letters sketches "
          "treatise manual digest").split()
_SYLLABLES = "ka to ri mu ne sa lo vi de pa zu bor tem lan fis gor wen dra pel mon tri sel var kun".split()
_RE_RECORD = re.compile(r"/record/(\d+)\.html")
_RE_COMMENT = re.compile(r"/record/(\d+)/comment")
_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class HiddenConfig:
    seed: int = 1
    records: int = 3000
    per_page: int = 10        # results per page
    cap: int = 100            # matches shown per query at most (the rest only through other queries)
    categories: int = 10      # the first N of the demo web's topic names

    def __post_init__(self) -> None:
        if self.records < 1:
            raise ValueError("records must be >= 1")
        if not 1 <= self.per_page <= self.cap:
            raise ValueError("per_page must be within [1, cap]")
        if not 1 <= self.categories <= len(TOPIC_NAMES):
            raise ValueError(f"categories must be within [1, {len(TOPIC_NAMES)}]")


@dataclass(frozen=True, slots=True)
class Record:
    number: int
    title: str
    maker: str
    year: int
    category: str
    description: str

    def words(self) -> frozenset[str]:
        """What the site's search matches against: every field's words, lower-case."""
        text = " ".join((self.title, self.maker, str(self.year), self.category, self.description))
        return frozenset(_tokens(text))


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _zipf_cum(n: int, offset: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (r + offset) for r in range(n)))


class HiddenSite:
    """The hidden catalogue for one config, served at ``base_url`` (``http://host:port``)."""

    def __init__(self, config: HiddenConfig, base_url: str) -> None:
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.categories = TOPIC_NAMES[:config.categories]
        rng = random.Random(f"{config.seed}:hidden:makers")
        makers: set[str] = set()
        while len(makers) < max(1, config.records // 6):
            makers.add(f"{self._name(rng)} {self._name(rng)}")
        self._makers = sorted(makers)
        self._topic_cum = [_zipf_cum(len(_TOPIC_WORDS_SPLIT[t]), 4.0) for t in range(config.categories)]
        self._common_cum = _zipf_cum(len(_COMMON), 3.0)
        self.records = [self._record(i) for i in range(config.records)]
        # result order: newest first, then by record number; and the same by category
        self._order = sorted(range(config.records), key=lambda i: (-self.records[i].year, i))
        self._in_category = {c: [i for i in self._order if self.records[i].category == c]
                             for c in self.categories}

    # ------------------------------------------------------------------ records

    @staticmethod
    def _name(rng: random.Random) -> str:
        return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

    def _record(self, i: int) -> Record:
        rng = random.Random(f"{self.config.seed}:hidden:record:{i}")
        t = rng.randrange(self.config.categories)
        topic, topic_cum = _TOPIC_WORDS_SPLIT[t], self._topic_cum[t]
        words = [rng.choices(topic, cum_weights=topic_cum)[0] if rng.random() < 0.4
                 else rng.choices(_COMMON, cum_weights=self._common_cum)[0]
                 for _ in range(rng.randint(16, 30))]
        title = (f"{rng.choice(_ADJECTIVES)} {rng.choices(topic, cum_weights=topic_cum)[0]} "
                 f"{rng.choice(_NOUNS)}")
        return Record(number=i, title=title.title(), maker=rng.choice(self._makers),
                      year=rng.randint(*_YEARS), category=self.categories[t],
                      description=" ".join(words).capitalize() + ".")

    @cached_property
    def _postings(self) -> dict[str, list[int]]:
        """word -> record numbers holding it, in result order."""
        index: dict[str, list[int]] = {}
        for i in self._order:
            for w in self.records[i].words():
                index.setdefault(w, []).append(i)
        return index

    # ------------------------------------------------------------------ ground truth

    def seeds(self) -> list[str]:
        return [self.base_url + "/"]

    def record_url(self, i: int) -> str:
        return f"{self.base_url}/record/{i}.html"

    def record_urls(self) -> list[str]:
        """Every record page: what a form crawler should reach (and nothing links to but results)."""
        return [self.record_url(i) for i in range(self.config.records)]

    def search(self, q: str, category: str = "", years: tuple[int, int] = _YEARS) -> list[int]:
        """Every record number matching (uncapped), in result order."""
        if category and category not in self.categories:
            return []
        words = _tokens(q)
        if not words:
            hits = self._in_category[category] if category else self._order
        else:   # filter the first word's list (in result order) by the others'
            others = [set(self._postings.get(w, ())) for w in words[1:]]
            hits = [i for i in self._postings.get(words[0], ()) if all(i in s for s in others)
                    and (not category or self.records[i].category == category)]
        if years == _YEARS:
            return list(hits)
        return [i for i in hits if years[0] <= self.records[i].year <= years[1]]

    def robots_txt(self) -> str:
        return "User-agent: *\nDisallow: /search/advanced\n"

    def robots_allowed(self, url: str) -> bool:
        return not urlsplit(url).path.startswith("/search/advanced")

    def never_submit(self, url: str) -> bool:
        """Whether ``url`` submits one of the forms a crawler must never submit (login, newsletter
        sign-up, comment)."""
        path = urlsplit(url).path
        return (path in ("/account/login", "/newsletter") or _RE_COMMENT.fullmatch(path) is not None)

    # ------------------------------------------------------------------ responses

    def respond(self, path_qs: str) -> Response:
        """The response to GET ``path_qs`` (deterministic, no I/O)."""
        path, _, query = path_qs.partition("?")
        params = dict(parse_qsl(query, keep_blank_values=True))
        if path == "/robots.txt":
            return Response(200, [("Content-Type", "text/plain; charset=utf-8")], self.robots_txt().encode())
        if path == "/" and not query:
            return self._page(200, "Welcome", "<h1>The Lantern Catalogue</h1><p>Thousands of books, "
                              "instruments and curiosities, described by our librarians. Everything is in "
                              "the catalogue: <a href=\"/search\">search it</a>.</p>")
        if path in ("/search", "/search/advanced"):
            return self._search_page(path, params)
        m = _RE_RECORD.fullmatch(path)
        if m and not query and int(m.group(1)) < self.config.records:
            return self._record_page(int(m.group(1)))
        m = _RE_COMMENT.fullmatch(path)
        if m and int(m.group(1)) < self.config.records:
            return self._page(200, "Thank you", "<p>Your comment awaits moderation.</p>")
        if path == "/newsletter":
            return self._page(200, "Subscribed", "<p>Thank you: you are subscribed to our newsletter.</p>")
        if path == "/account/login":
            return Response(405, [("Content-Type", _HTML), ("Allow", "POST")], b"<p>Method not allowed</p>\n")
        return Response(404, [("Content-Type", _HTML)], b"<!DOCTYPE html>\n<title>404 Not Found</title>"
                        b"<h1>Not Found</h1>\n")

    def _search_page(self, path: str, params: dict[str, str]) -> Response:
        advanced = path == "/search/advanced"
        if not params:
            return self._page(200, "Advanced search" if advanced else "Search",
                              self._advanced_form() if advanced else self._search_forms())
        if params.get("lang") != "en":
            return self._page(400, "Bad request", "<p>Bad request: missing or unknown language.</p>")
        q, category = params.get("q", ""), params.get("category", "")
        years = _YEARS
        if advanced:
            years = (_int(params.get("from"), _YEARS[0]), _int(params.get("to"), _YEARS[1]))
        hits = self.search(q, category, years)
        page = _int(params.get("page"), 1)
        return self._page(200, "Search results", self._results(path, q, category, hits, page, params)
                          + self._search_form(q, category))

    def _results(self, path: str, q: str, category: str, hits: list[int], page: int,
                 params: dict[str, str]) -> str:
        per, cap = self.config.per_page, self.config.cap
        shown = hits[:cap]
        last = (len(shown) + per - 1) // per
        if not 1 <= page <= last:
            return (f"<h1>No records match “{html.escape(q)}”.</h1>"
                    "<p>Try other words or another category.</p>")
        rows = []
        for i in shown[(page - 1) * per: page * per]:
            r = self.records[i]
            snippet = " ".join(r.description.split()[:12])
            rows.append(f'<li><a href="/record/{i}.html">{html.escape(r.title)}</a> by '
                        f"{html.escape(r.maker)}, {r.year}, {r.category}.<p>{html.escape(snippet)} …</p></li>")
        more = f"; only the first {cap} are shown" if len(hits) > cap else ""
        head = (f"<h1>Results for “{html.escape(q)}”</h1><p>Showing {(page - 1) * per + 1}–"
                f"{min(page * per, len(shown))} of {len(hits)} matching records{more}.</p>")
        keep = {k: v for k, v in params.items() if k != "page"}   # the query as it came
        nav = []
        if page > 1:   # page 1 is the query without a page number
            prev = urlencode(keep | ({"page": str(page - 1)} if page > 2 else {}))
            nav.append(f'<a rel="prev" href="{path}?{html.escape(prev)}">Previous</a>')
        if page < last:
            nxt = urlencode(keep | {"page": str(page + 1)})
            nav.append(f'<a rel="next" href="{path}?{html.escape(nxt)}">Next</a>')
        return (head + '<ol class="results">' + "".join(rows) + '</ol><p class="pages">'
                + " ".join(nav) + "</p>")

    def _record_page(self, i: int) -> Response:
        r = self.records[i]
        body = (f"<h1>{html.escape(r.title)}</h1><dl><dt>Maker</dt><dd>{html.escape(r.maker)}</dd>"
                f"<dt>Year</dt><dd>{r.year}</dd><dt>Category</dt><dd>{r.category}</dd></dl>"
                f"<p>{html.escape(r.description)}</p><p><a href=\"/search\">Back to the search</a></p>"
                f'<form action="/record/{i}/comment" method="get" class="comments"><h2>Leave a comment</h2>'
                '<label>Your name <input type="text" name="author"></label>'
                '<textarea name="comment" rows="4"></textarea><input type="submit" value="Post comment">'
                "</form>")
        return self._page(200, r.title, body)

    def _search_form(self, q: str = "", category: str = "") -> str:
        options = "".join(f'<option value="{c}"{" selected" if c == category else ""}>'
                          f"{c.capitalize()}</option>" for c in self.categories)
        return ('<form class="catalogue-search"><label>Words <input type="text" name="q" '
                f'value="{html.escape(q, quote=True)}"></label> <label>Category <select name="category">'
                f'<option value="">Any category</option>{options}</select></label>'
                '<input type="hidden" name="lang" value="en"> <input type="submit" value="Search"></form>')

    def _search_forms(self) -> str:
        return ("<h1>Search the catalogue</h1><p>Find records by title, maker, year or description.</p>"
                + self._search_form() + "<h2>Advanced search</h2>" + self._advanced_form())

    def _advanced_form(self) -> str:
        years = "".join(f'<option value="{y}">{y}</option>' for y in range(_YEARS[0], _YEARS[1] + 1, 10))
        return ('<form action="/search/advanced" method="get"><input type="text" name="q">'
                f'<select name="from">{years}</select><select name="to">{years}</select>'
                '<input type="hidden" name="lang" value="en"><input type="submit" value="Search"></form>')

    def _page(self, status: int, title: str, main: str) -> Response:
        body = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(title)} — The Lantern Catalogue</title></head><body>"
                '<header class="site-header"><a href="/">The Lantern Catalogue</a>'
                '<form action="/account/login" method="post" id="login">'
                '<input type="text" name="username"><input type="password" name="password">'
                '<button type="submit">Sign in</button></form></header>'
                f"<main>{main}</main>"
                '<footer class="site-footer"><form action="/newsletter" method="get" class="signup">'
                '<input type="text" name="address" placeholder="Your e-mail address">'
                '<input type="submit" value="Subscribe"></form><p>© The Lantern Catalogue</p></footer>'
                "</body></html>\n")
        return Response(status, [("Content-Type", _HTML)], body.encode())


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
