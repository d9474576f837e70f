"""A second hidden site for the form crawler's tests, built apart from ``skitter.demo.hidden`` so that
the crawler is not judged only on the fixture its planner was tuned on: "The Harbour Film Archive".

What differs from the demo's hidden site (on purpose):

- the search form is on the home page, its action is ``/find``; a search box ``kw`` (type=search),
  a radio group ``kind`` (six kinds, "All" checked), a select ``decade``, a checkbox ``subtitled``,
  a hidden ``v=2`` the server requires (else 400), and a *named* submit button (``go=1``);
- an empty search without a filter is refused with a page asking for a word (status 200), as is a
  word of fewer than three letters; words must all match (AND) in the title, director or synopsis;
- results are sorted by title, 15 a page, only the first 45 of a query shown, paginated by offset
  (``start=15``) with "More results »" and "« Earlier" links (``start=0`` is a second URL of the
  first page); result pages carry a GET sort form (a select of three orders and the query in
  hidden inputs), which changes the 45 shown;
- records are ``/item?id=NNNNN`` (a query URL on another path; ids are not consecutive); the words
  are invented (no English), drawn with Zipf weights;
- every page has browse links (``/find?kind=...&v=2``): some records are reachable by links alone;
- record pages carry a rating form (GET ``/rate``, radio ``stars``, button "Vote"), a "Report a
  problem" form (GET ``/report``, a textarea and a subject line) and an "Add to my list" form
  (GET ``/list/add``, a hidden id): none may ever be sent (``never_submit``);
- robots.txt disallows ``/list/`` and any URL with ``subtitled=`` (a pattern inside the query:
  each submission is checked, not only the form's action).

Pure: ``respond(path_qs)`` gives a ``skitter.demo.web.Response``; ``ModelServer`` serves any such
model over HTTP on 127.0.0.1 in a thread, with an access log (method, path, status).
"""

from __future__ import annotations

import html
import itertools
import random
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from sites import ThreadedServer
from skitter.demo.web import Response
from skitter.robots.rules import RobotsRules

_HTML = "text/html; charset=utf-8"
KINDS = ("film", "documentary", "newsreel", "animation", "interview", "trailer")
_KIND_WEIGHTS = (40, 20, 15, 10, 10, 5)
DECADES = tuple(range(1920, 2020, 10))
_ONSETS = "b d f g k l m n p r s t v z br dr gr kr pl st tr sk".split()
_VOWELS = "a e i o u ai ou ei".split()
_CODAS = ["", "", "n", "r", "l", "s", "m", "th"]
PER_PAGE, CAP = 15, 45


@dataclass(frozen=True, slots=True)
class Film:
    id: int
    title: str
    director: str
    kind: str
    decade: int
    subtitled: bool
    synopsis: str

    def words(self) -> set[str]:
        return set(f"{self.title} {self.director} {self.synopsis}".lower().split())


class VariantSite:
    def __init__(self, base_url: str, *, films: int = 4000, seed: int = 7) -> None:
        self.base_url = base_url.rstrip("/")
        rng = random.Random(f"variant:{seed}")
        vocab: list[str] = []
        seen: set[str] = set()
        while len(vocab) < 3000:
            w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                        for _ in range(rng.choice((1, 2, 2, 3))))
            if len(w) >= 4 and w not in seen:
                seen.add(w)
                vocab.append(w)
        cum = list(itertools.accumulate(1.0 / (r + 2) ** 1.05 for r in range(len(vocab))))
        names = sorted({(vocab[rng.randrange(len(vocab))] + " " + vocab[rng.randrange(len(vocab))]).title()
                        for _ in range(films // 8)})
        ids = rng.sample(range(10000, 99999), films)
        self.films = []
        for i in ids:
            title = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(2, 4))).title()
            synopsis = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(10, 25))).capitalize() + "."
            self.films.append(Film(i, title, rng.choice(names), rng.choices(KINDS, _KIND_WEIGHTS)[0],
                                   rng.choices(DECADES, range(1, len(DECADES) + 1))[0], rng.random() < 0.3,
                                   synopsis))
        self.by_id = {f.id: f for f in self.films}
        self._postings: dict[str, set[int]] = {}
        for f in self.films:
            for w in f.words():
                self._postings.setdefault(w, set()).add(f.id)
        self.intro = ("The Harbour Film Archive keeps films, newsreels and interviews from a century of the "
                      "harbour city. Search the catalogue by title, director or what the film shows.")
        self.robots = RobotsRules.parse(self.robots_txt().encode(), "skitter")

    # -- ground truth --------------------------------------------------------------------------
    def seeds(self) -> list[str]:
        return [self.base_url + "/"]

    def record_urls(self) -> list[str]:
        return [f"{self.base_url}/item?id={f.id}" for f in self.films]

    def robots_txt(self) -> str:
        return "User-agent: *\nDisallow: /list/\nDisallow: /*subtitled=\n"

    def robots_allowed(self, url: str) -> bool:
        return self.robots.allowed(url)

    def never_submit(self, url: str) -> bool:
        return urlsplit(url).path in ("/rate", "/report", "/list/add")

    def search(self, kw: str, kind: str = "", decade: str = "", subtitled: bool = False,
               sort: str = "title") -> list[Film]:
        words = kw.lower().split()
        ids = set.intersection(*(self._postings.get(w, set()) for w in words)) if words else None
        hits = [f for f in self.films if (ids is None or f.id in ids) and (not kind or f.kind == kind)
                and (not decade or str(f.decade) == decade) and (not subtitled or f.subtitled)]
        key = {"year": lambda f: (f.decade, f.title, f.id), "director": lambda f: (f.director, f.title, f.id)}.get(
            sort, lambda f: (f.title, f.id))
        return sorted(hits, key=key)

    # -- responses ---------------------------------------------------------------------------------
    def respond(self, path_qs: str) -> Response:
        path, _, query = path_qs.partition("?")
        params = dict(parse_qsl(query, keep_blank_values=True))
        if path == "/robots.txt":
            return Response(200, [("Content-Type", "text/plain")], self.robots_txt().encode())
        if path == "/" and not query:
            return self._page("The Harbour Film Archive", f"<h1>The Harbour Film Archive</h1><p>{self.intro}</p>"
                              + self._form())
        if path == "/find":
            return self._find(params)
        if path == "/item" and params.get("id", "").isdigit() and int(params["id"]) in self.by_id:
            return self._item(self.by_id[int(params["id"])])
        if path in ("/rate", "/report", "/list/add"):
            return self._page("Thank you", "<p>Thank you: we have recorded it.</p>")
        return Response(404, [("Content-Type", _HTML)], b"<h1>Not found</h1>")

    def _find(self, p: dict[str, str]) -> Response:
        if p.get("v") != "2":
            return self._page("Outdated form", "<p>This search form is out of date.</p>", status=400)
        kw, kind, decade = p.get("kw", "").strip(), p.get("kind", ""), p.get("decade", "")
        if not kw and not kind and not decade and not p.get("subtitled"):
            return self._page("Search", "<h1>Please enter a word or choose a filter.</h1>" + self._form())
        if kw and min(len(w) for w in kw.split()) < 3:
            return self._page("Search", "<h1>Search words need at least three letters.</h1>" + self._form(kw))
        hits = self.search(kw, kind, decade, bool(p.get("subtitled")), p.get("sort", "title"))
        start = int(p["start"]) if p.get("start", "").isdigit() else 0
        shown = hits[:CAP]
        if not shown or start >= len(shown):
            return self._page("No films", f"<h1>Nothing in the archive matches “{html.escape(kw)}”.</h1>"
                              "<p>Check the spelling or remove a filter.</p>" + self._form(kw))
        rows = "".join(
            f'<div class="hit"><h3><a href="/item?id={f.id}">{html.escape(f.title)}</a></h3>'
            f"<span>{html.escape(f.director)} · {f.kind} · {f.decade}s</span>"
            f"<p>{html.escape(' '.join(f.synopsis.split()[:8]))}…</p></div>"
            for f in shown[start:start + PER_PAGE])
        keep = {k: v for k, v in p.items() if k != "start"}
        nav = []
        if start > 0:
            nav.append(f'<a href="/find?{html.escape(urlencode(keep | {"start": str(start - PER_PAGE)}))}">'
                       "« Earlier</a>")
        if start + PER_PAGE < len(shown):
            nav.append(f'<a href="/find?{html.escape(urlencode(keep | {"start": str(start + PER_PAGE)}))}">'
                       "More results »</a>")
        hidden = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v, quote=True)}">'
                         for k, v in keep.items() if k != "sort")
        sort = ('<form action="/find" class="sorter"><label>Order by <select name="sort">'
                '<option value="title">title</option><option value="year">year</option>'
                f'<option value="director">director</option></select></label>{hidden}'
                '<input type="submit" value="Sort"></form>')
        more = f" (the first {CAP} are listed)" if len(hits) > CAP else ""
        return self._page("Results", f"<h1>{len(hits)} films found{more}</h1>{sort}{rows}"
                          f'<p class="nav">{" ".join(nav)}</p>' + self._form(kw))

    def _item(self, f: Film) -> Response:
        body = (f"<h1>{html.escape(f.title)}</h1><p>{html.escape(f.director)}, {f.decade}s, {f.kind}"
                f"{', subtitled' if f.subtitled else ''}.</p><p>{html.escape(f.synopsis)}</p>"
                '<form action="/rate" method="get" class="rating"><fieldset><legend>Rate this film</legend>'
                + "".join(f'<label><input type="radio" name="stars" value="{i}">{i}</label>' for i in range(1, 6))
                + f'<input type="hidden" name="id" value="{f.id}"><button type="submit">Vote</button></fieldset>'
                '</form><form action="/report" method="get" class="problem"><h2>Something wrong here?</h2>'
                '<input type="text" name="subject" placeholder="Subject">'
                '<textarea name="details" placeholder="What is wrong?"></textarea>'
                f'<input type="hidden" name="id" value="{f.id}"><input type="submit" value="Send"></form>'
                f'<form action="/list/add" method="get"><input type="hidden" name="id" value="{f.id}">'
                '<input type="submit" value="Add to my list"></form>')
        return self._page(f.title, body)

    def _form(self, kw: str = "") -> str:
        kinds = '<label><input type="radio" name="kind" value="" checked> All</label>' + "".join(
            f'<label><input type="radio" name="kind" value="{k}"> {k.title()}s</label>' for k in KINDS)
        decades = '<option value="">Any decade</option>' + "".join(
            f'<option value="{d}">{d}s</option>' for d in DECADES)
        return ('<form action="/find" role="search" class="finder"><input type="search" name="kw" '
                f'value="{html.escape(kw, quote=True)}" placeholder="Title, director or subject">'
                f'<div>{kinds}</div><select name="decade">{decades}</select>'
                '<label><input type="checkbox" name="subtitled" value="1"> subtitled only</label>'
                '<input type="hidden" name="v" value="2">'
                '<button type="submit" name="go" value="1">Find</button></form>')

    def _page(self, title: str, main: str, status: int = 200) -> Response:
        browse = " · ".join(f'<a href="/find?kind={k}&amp;v=2">{k.title()}s</a>' for k in KINDS)
        body = (f"<!DOCTYPE html><html><head><title>{html.escape(title)} | Harbour Film Archive</title></head>"
                f'<body><nav><a href="/">Archive</a> · Browse: {browse}</nav><main>{main}</main>'
                "<footer>Harbour Film Archive · open Tuesday to Sunday</footer></body></html>")
        return Response(status, [("Content-Type", _HTML)], body.encode())


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    status: int
    t: float


class ModelServer(ThreadedServer):
    """Serves ``model.respond`` on 127.0.0.1 (a free port) in a thread; :attr:`log` holds every
    request (method, path with query, status)."""

    methods = "*"
    what = "model server"

    def __init__(self, model) -> None:
        self.model = model
        super().__init__()

    async def _handle(self, request):
        from aiohttp import web

        if request.method != "GET":
            resp = web.Response(status=405)
        else:
            r = self.model.respond(request.path_qs)
            resp = web.Response(status=r.status, body=r.body, headers=dict(r.headers))
        with self._lock:
            self.log.append(Hit(request.method, request.path_qs, resp.status, time.time()))
        return resp
