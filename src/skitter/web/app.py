"""``skitter serve``: the search UI and crawl dashboard (starlette + jinja2, run by uvicorn).

Pages: ``/`` (search box), ``/search?q=…&page=N`` (10 results a page), ``/advanced`` (a form
that builds a query in skitter's query language and redirects to /search), ``/crawl`` (the
crawl summary and four plots, refreshing every 5 s; for a distributed crawl also its cluster:
workers alive, hosts each holds, queued, in flight, pages/s), ``/crawl.json`` (the same figures),
``/plot/{pages,status,hosts,queue}.png``; once the crawl has revisited (docs/recrawl.md) also
``/plot/freshness.png`` (the estimated freshness over time) and ``/plot/intervals.png`` (the
estimated change intervals, per page and per site).
With ground-truth labels (``skitter serve DIR --labels FILE [--topic NAME]``, the labels of
``skitter eval-crawl``) the crawl page also shows the crawl's evaluation (skitter.eval): harvest
rate, topic recall at budgets, the top-1% PageRank share and the average PageRank by crawl time, and
``/plot/eval-{harvest,recall,top,pagerank}.png``.

Crawled content is untrusted: every template is autoescaped, snippets and titles come from the
engine's HTML-escaped ``snippet_html``/``title_html`` (only ``<mark>`` is added), a URL becomes
an ``href`` only when it is http(s), and a Content-Security-Policy forbids inline scripts anyway.
Every database access is read-only: ``crawl.db`` is opened per request for stats and plots, and
each worker thread keeps one read-only :class:`~skitter.search.Searcher`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ..errors import QuerySyntaxError, RedisUnreachable, SkitterError
from ..store.db import DB_NAME, connect
from ..eval.crawl import BUDGETS, CRAWL_SHARES
from ..eval.plots import EVAL_PLOTS
from . import plots

PER_PAGE = 10
REFRESH_SECONDS = 5
# The crawl page asks a distributed crawl's Redis for the cluster's figures with this timeout
# (connection and each command, seconds), and once it finds Redis unreachable says so without
# asking again for REDIS_RETRY_SECONDS: a page never waits more than about a second on it.
REDIS_TIMEOUT = 1.0
REDIS_RETRY_SECONDS = 5.0
TEMPLATES = Path(__file__).parent / "templates"
CSP = ("default-src 'none'; img-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self';"
       " base-uri 'none'; frame-ancestors 'none'")


def is_http_url(url) -> bool:
    """True for an absolute http(s) URL: the only URLs rendered as links."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


# -- the advanced-search form → a query string --------------------------------------------------
def _words(text: str) -> list[str]:
    """The words of a form field, each quoted as a one-word phrase so that nothing the user
    types there (operators, parentheses, field:) is read as query syntax."""
    return [f'"{w}"' for w in (w.replace('"', "") for w in (text or "").split()) if w]


def _phrase(text: str) -> str | None:
    t = " ".join((text or "").replace('"', " ").split())
    return f'"{t}"' if t else None


# the crawl page's names of the summary's keys (skitter.stats.summary) where "_" → " " is not enough
ROW_NAMES = {"crawling_pid": "crawling process", "pages_per_second": "pages/s", "seen": "URLs seen",
             "queued": "URLs still queued", "fetched": "URLs fetched", "index": "search index"}


def build_query(form) -> str:
    """A query in skitter's language from the advanced form's fields (a mapping of str)."""
    g = lambda k: (form.get(k) or "").strip()  # noqa: E731
    parts: list[str] = []
    words = _words(g("all"))
    if words:
        parts.append(" AND ".join(words))
    if (p := _phrase(g("phrase"))):
        parts.append(p)
    anyw = _words(g("any"))
    if anyw:
        parts.append("(" + " OR ".join(anyw) + ")" if len(anyw) > 1 else anyw[0])
    xa, xb = _phrase(g("xor_a")), _phrase(g("xor_b"))
    if xa and xb:
        parts.append(f"({xa} XOR {xb})")
    elif (one := xa or xb):
        parts.append(one)
    na, nb = _phrase(g("near_a")), _phrase(g("near_b"))
    if na and nb:
        dist = "".join(g("near_k").split())   # as typed: the query's error says what is wrong with it
        op = f"NEAR/{int(dist)}" if dist.isdigit() else f"NEAR/{dist}" if dist else "NEAR"
        parts.append(f"{na} {op} {nb}")
    elif (one := na or nb):
        parts.append(one)
    if (site := g("site")):
        parts.append(f"site:{site.split()[0]}")
    for key in ("after", "before"):
        if (d := g(key)):
            parts.append(f"{key}:{d.split()[0]}")
    for w in _words(g("none")):
        parts.append(f"NOT {w}")
    if len(parts) == 1:
        return parts[0]
    return " AND ".join(parts)


# -- the application -------------------------------------------------------------------------
class _Searchers(threading.local):
    searcher = None


def make_env() -> jinja2.Environment:
    """The templates' environment: autoescape on for every template, whatever its name."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.tests["http_url"] = is_http_url
    return env


def create_app(directory: Path | str | None, labels=None, topic: str | None = None,
               redis: tuple[str, str] | None = None) -> Starlette:
    """The application; ``labels`` (a :class:`~skitter.eval.crawl.Labels` or a labels file) adds
    the crawl's evaluation to /crawl, on ``topic`` (default: guessed from the crawl's --topic).

    ``redis``: (URL, crawl id) of a distributed crawl, whose cluster the crawl page then shows (as
    ``skitter stats --redis``); without it, a worker's directory names its cluster itself (the
    Redis URL without its password). ``directory`` None: the cluster only, nothing to search."""
    directory = None if directory is None else Path(directory)
    if labels is not None and not hasattr(labels, "topics"):
        from ..eval.files import load_labels

        labels = load_labels(labels)
    templates = Jinja2Templates(env=make_env())
    local = _Searchers()
    unreachable: dict[tuple[str, str], tuple[float, str]] = {}   # (URL, crawl id) -> (when, why)
    unreachable_lock = threading.Lock()

    def searcher():
        if directory is None:
            raise SkitterError("no crawl directory is served (skitter serve DIR to search one)")
        if local.searcher is None:
            from ..search import Searcher

            local.searcher = Searcher(directory)
        return local.searcher

    def page(request: Request, name: str, status: int = 200, **ctx) -> Response:
        ctx.setdefault("q", "")
        ctx["crawl_name"] = directory.name if directory is not None else f"crawl {redis[1] if redis else ''}"
        resp = templates.TemplateResponse(request, name, ctx, status_code=status)
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        return resp

    def home(request: Request) -> Response:
        return page(request, "index.html")

    def search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        if not q.strip():
            return RedirectResponse("/", status_code=303)
        raw = request.query_params.get("page", "1").strip()
        if not (raw.isascii() and raw.isdigit() and len(raw) < 10) or int(raw) < 1:
            return page(request, "search.html", 400, q=q, res=None,
                        error=f"page {raw!r}: pages are numbered 1, 2, 3, …")
        n = int(raw)
        try:
            res = searcher().search(q, limit=PER_PAGE, page=n)
        except QuerySyntaxError as exc:
            return page(request, "search.html", 400, q=q, res=None, error=str(exc))
        except (SkitterError, sqlite3.Error) as exc:
            local.searcher = None
            return page(request, "search.html", 503, q=q, res=None, error=str(exc))
        if n > 1 and n > res.pages:   # past the last page (a stale link): the last one
            return RedirectResponse("/search?" + urlencode({"q": q, "page": max(1, res.pages)}), status_code=303)
        first = max(1, min(res.page - 4, res.pages - 8))
        nav = list(range(first, min(res.pages, first + 8) + 1))
        link = lambda p: "/search?" + urlencode({"q": q, "page": p})  # noqa: E731
        sugg = "/search?" + urlencode({"q": res.suggestion}) if res.suggestion else None
        return page(request, "search.html", q=q, res=res, error=None, nav=nav, link=link, suggestion_link=sugg,
                    lag=index_lag())

    def index_lag() -> str | None:
        """The CLI's note on an index behind the crawl (skitter.index.indexer.lag_note), or None."""
        from ..index.indexer import Indexer, lag_note

        assert directory is not None
        try:
            return lag_note(Indexer(directory).status(), directory)
        except (SkitterError, sqlite3.Error):
            return None

    def advanced(request: Request) -> Response:
        params = request.query_params
        if params.get("go"):
            q = build_query(params)
            if q:
                return RedirectResponse("/search?" + urlencode({"q": q}), status_code=303)
            return page(request, "advanced.html", f=params, error="fill in at least one field")
        return page(request, "advanced.html", f=params, error=None)

    def cluster() -> tuple[dict | None, str | None]:
        """The cluster of a distributed crawl (skitter stats --redis's figures), or why not; (None,
        None) for a local crawl."""
        import asyncio

        from ..cli_distributed import cluster_stats, recorded_cluster

        where = redis
        hint = ""
        if where is None and directory is not None:
            try:
                recorded = recorded_cluster(directory)
            except (SkitterError, sqlite3.Error):
                recorded = None
            if recorded is None:
                return None, None
            where = (recorded["redis"], recorded["crawl_id"])
            if recorded.get("password"):
                hint = " (this directory does not keep the Redis password: serve it with --redis URL)"
        assert where is not None
        with unreachable_lock:
            known = unreachable.get(where)
        if known is not None and time.monotonic() - known[0] < REDIS_RETRY_SECONDS:
            return None, known[1]
        try:
            # a handler runs in a thread of its own: a loop of its own for the Redis client
            figures = asyncio.run(cluster_stats(*where, timeout=REDIS_TIMEOUT))
        except RedisUnreachable as exc:
            why = f"Redis unreachable: {' '.join(str(exc).split())} (asked again every {REDIS_RETRY_SECONDS:g} s)"
            with unreachable_lock:
                unreachable[where] = (time.monotonic(), why)
            return None, why
        except SkitterError as exc:
            return None, f"the cluster: {exc}{hint}"
        with unreachable_lock:
            unreachable.pop(where, None)
        return figures, None

    def summary() -> tuple[dict, str | None]:
        from ..stats import load_summary

        if directory is None:
            return {}, None
        try:
            return load_summary(directory), None
        except (SkitterError, sqlite3.Error) as exc:
            return {}, str(exc)

    def crawl_json(request: Request) -> Response:
        """What the crawl page shows, as JSON: the directory's summary, the cluster's figures."""
        s, error = summary()
        c, cluster_error = cluster()
        return JSONResponse({"crawl": s or None, "error": error, "cluster": c, "cluster_error": cluster_error},
                            headers={"Cache-Control": "no-store"})

    def crawl(request: Request) -> Response:
        from ..cli_distributed import cluster_lines
        from ..stats import duration

        s, error = summary()
        c, cluster_error = cluster()
        recrawl = s.pop("recrawl", None)
        from ..stats import index_line

        rows = [(ROW_NAMES.get(k, k.replace("_", " ")),
                 index_line(v) if k == "index" else str(v) if k.endswith("_pid") and v else _fmt(v))
                for k, v in s.items()]   # (a pid is no count: no thousands separator)
        if recrawl:   # the incremental crawler's collection (docs/recrawl.md), a row each
            for k in ("change_interval_quartiles", "change_interval_deciles"):   # seconds, shown as durations
                v = recrawl.get(k)
                recrawl[k] = ([duration(x) for x in v] if isinstance(v, list)
                              else {q: duration(x) for q, x in v.items()} if isinstance(v, dict) else v)
            rows += [(f"recrawl: {k.replace('_', ' ')}", _fmt(v)) for k, v in recrawl.items() if k != "sites"]
            rows.append(("recrawl: sites", ", ".join(f"{x['host']} ({x['changing']} of {x['pages']} changing)"
                                                     for x in recrawl["sites"]) or "-"))
            rows += [(f"recrawl: intervals on {x['host']}", _fmt(x["intervals"])) for x in recrawl["sites"]]
        ev = None
        if labels is not None and not error:
            try:
                ev = eval_view(evaluation(), labels)
            except (SkitterError, sqlite3.Error) as exc:
                error = f"cannot evaluate the crawl: {exc}"
        shown = [] if directory is None else list(plots.PLOTS) + (list(plots.RECRAWL_PLOTS) if recrawl else [])
        # a crawl that is over no longer changes: the page refreshes only while it runs (or a
        # cluster's crawl is still on)
        # (a summary that could not be read, the crawl.db not made yet or busy: as running)
        live = (s or {}).get("state") == "running" or bool(c and not c.get("finished")) or bool(cluster_error) \
            or bool(error and not s)
        return page(request, "crawl.html", rows=rows, error=error, refresh=REFRESH_SECONDS if live else None,
                    plots=shown, ev=ev,
                    cluster=c, cluster_line=cluster_lines(c)[0] if c else None, cluster_error=cluster_error)

    def evaluation():
        from ..eval.crawl import evaluate, guess_topic
        from ..eval.files import crawl_order

        urls, config = crawl_order(directory)
        return evaluate(urls, labels, topic or guess_topic(config, labels))

    def plot(request: Request) -> Response:
        name = request.path_params["name"]
        fn = plots.PLOTS.get(name) or plots.RECRAWL_PLOTS.get(name)
        ev_fn, needs_topic = EVAL_PLOTS.get(name, (None, False)) if labels is not None else (None, False)
        if (fn is None and ev_fn is None) or directory is None:
            return Response("no such plot", status_code=404, media_type="text/plain")
        try:
            if ev_fn is not None:
                ev = evaluation()
                if needs_topic and ev.topic is None:
                    return Response("no topic: serve with --topic NAME", status_code=404, media_type="text/plain")
                png = ev_fn(ev)
            else:
                assert fn is not None
                conn = connect(directory / DB_NAME, readonly=True)
                try:
                    png = fn(conn)
                finally:
                    conn.close()
        except (SkitterError, sqlite3.Error) as exc:
            return Response(f"cannot open the crawl: {exc}", status_code=503, media_type="text/plain")
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})

    routes = [
        Route("/", home),
        Route("/search", search),
        Route("/advanced", advanced),
        Route("/crawl", crawl),
        Route("/crawl.json", crawl_json),
        Route("/plot/{name}.png", plot),
    ]
    return Starlette(routes=routes)


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def eval_view(ev, labels) -> dict:
    """What the crawl page shows of an :class:`~skitter.eval.crawl.Evaluation` (strings)."""
    budgets = [(f"{b:.0%} ({int(round(b * ev.pages)):,} fetches)", _pct(ev.recall_at.get(b)))
               for b in BUDGETS]
    return {
        "topic": ev.topic,
        "topics": ", ".join(sorted(labels.topics)),
        "fetched": f"{ev.fetched:,}",
        "pages": f"{ev.pages:,}",
        "relevant": f"{round((ev.harvest_rate or 0) * ev.fetched):,} of {ev.relevant_total:,}",
        "harvest_rate": _pct(ev.harvest_rate),
        "recall": _pct(ev.recall_curve[-1] if ev.recall_curve else None),
        "budgets": budgets,
        "top_k": ev.top_k,
        "top_share": [(f"{s:.0%}", _pct(ev.top_share_at.get(s))) for s in CRAWL_SHARES],
        "avg_pagerank": [(f"{d * 10}–{(d + 1) * 10}%", f"{v:.2f}") for d, v in enumerate(ev.avg_pagerank)],
        "has_pagerank": bool(labels.pagerank),
        "plots": [n for n, (_, needs_topic) in EVAL_PLOTS.items()
                  if (ev.topic is not None or not needs_topic) and (labels.pagerank or needs_topic)],
    }


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {x}" for k, x in v.items()) or "-"
    if isinstance(v, (list, tuple)):
        return ", ".join(f"{x[0]} ({', '.join(str(y) for y in x[1:])})" if isinstance(x, (list, tuple)) else str(x)
                         for x in v) or "-"
    return str(v)


def listen(host: str, port: int):
    """The server's listening socket, or a UsageError saying why there is none (a port in use, an
    address this machine does not have, a name that does not resolve): one line, before
    ``skitter serve`` says it serves."""
    import socket

    from ..errors import UsageError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(128)
        except BaseException:
            sock.close()
            raise
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    return sock


def serve(directory: Path | str | None, host: str = "127.0.0.1", port: int = 8000, labels=None,
          topic: str | None = None, redis: tuple[str, str] | None = None, sock=None) -> None:
    """Serve the UI (on ``sock``, a socket from :func:`listen`, when given) until interrupted."""
    import uvicorn

    app = create_app(directory, labels, topic, redis)
    if sock is None:
        uvicorn.run(app, host=host, port=port, log_level="warning")
        return
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
