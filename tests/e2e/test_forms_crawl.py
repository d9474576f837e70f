"""``skitter crawl --forms`` end to end (issue #22): the real command line, the real crawl loop and
the demo server's hidden site over HTTP on loopback, with its access log as the witness; then what
the crawl left in crawl.db (``forms``, ``form_urls``), ``skitter stats``, ``skitter export``
(``via_form``) and ``skitter eval-forms`` (table, JSON, PNG). A second hidden site nobody tuned the
planner on (tests/hidden_variant.py), a result set that never ends, and a crawl held back by
``--host-burst`` and resumed."""

from __future__ import annotations

import html
import json
import sqlite3
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import pytest

from hidden_variant import ModelServer, VariantSite
from sites import one_error_line, skitter
from skitter.api import crawl
from skitter.demo.hidden import HiddenConfig
from skitter.demo.server import DemoServer, read_access_log
from skitter.demo.web import DemoConfig, Response
from skitter.formcrawl import RESULT_PAGES

# the model sites' fixed answers
ALLOW_ALL = Response(200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n")
NOT_FOUND = Response(404, [("Content-Type", "text/html")], b"<p>not found</p>")


def html_response(markup: str) -> Response:
    return Response(200, [("Content-Type", "text/html; charset=utf-8")], markup.encode())


FAST = ["--delay", "0", "--adaptive-delay", "0", "--allow-private", "--quiet", "--index-interval", "-1"]


@pytest.fixture(scope="module")
def hidden_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("access") / "access.jsonl"
    with DemoServer(DemoConfig(hosts=1, pages=60), hidden=HiddenConfig(records=1000), access_log=log) as srv:
        yield srv, log


def test_forms_from_the_command_line(tmp_path, hidden_server) -> None:
    srv, log = hidden_server
    site = srv.hidden_site
    host = srv.hidden_url.split("//")[1]
    before = len(read_access_log(log))
    words = tmp_path / "words.txt"
    words.write_text("quasar\nnebula\n")
    out = tmp_path / "crawl"
    res = skitter("crawl", srv.hidden_url + "/", "-o", str(out), "--forms", "--form-budget", "150",
                  "--form-words", str(words), "--topic", "galaxy", *FAST)
    assert res.returncode == 0, res.stderr

    # the server's own log: only GETs, nothing that must never be sent, nothing robots.txt disallows
    hits = [r for r in read_access_log(log)[before:] if r["host"] == host]
    assert hits and {r["method"] for r in hits} == {"GET"}
    for r in hits:
        url = srv.hidden_url + r["path"]
        assert site.robots_allowed(url) and not site.never_submit(url), url
    assert not any(r["path"].startswith("/search/advanced") for r in hits)

    # crawl.db: every form recorded, only the search form planned, within its budget
    conn = sqlite3.connect(out / "crawl.db")
    forms = {(a.rsplit("/", 1)[-1], m): (s, r, n) for a, m, s, r, n in conn.execute(
        "SELECT action, method, status, reason, submitted FROM forms")}
    assert forms[("login", "post")][0] == "never" and forms[("newsletter", "get")][0] == "never"
    comments = [s for a, s in conn.execute("SELECT action, status FROM forms") if a.endswith("/comment")]
    assert comments == ["never"]   # one a record page, its action naming the record: one form, never sent
    assert forms[("advanced", "get")][0] == "refused" and "robots" in forms[("advanced", "get")][1]
    status, _, submitted = forms[("search", "get")]
    assert status in ("done", "active") and 0 < submitted <= 150
    planned = [s for (s,) in conn.execute("SELECT status FROM forms WHERE status IN ('queued', 'active', 'done')")]
    assert planned == [status]
    never = [json.loads(f) for (f,) in conn.execute("SELECT form FROM forms WHERE status = 'never'")]
    assert any(f["method"] == "post" for f in never) and all(f["inputs"] for f in never)
    subs = [u for (u,) in conn.execute("SELECT url FROM form_urls WHERE role = 'submission' AND url = via_form"
                                       " ORDER BY id")]
    assert 0 < len(subs) <= 150 and all(urlsplit(u).path == "/search" for u in subs)
    asked = [parse_qs(urlsplit(u).query).get("q", [""])[0] for u in subs]
    assert [q for q in asked if q][:3] == ["galaxy", "quasar", "nebula"]   # --topic, --form-words, in order
    conn.close()

    # skitter stats: forms found, submitted, records reached
    stats = json.loads(skitter("stats", str(out), "--json").stdout)["forms"]
    truth = set(site.record_urls())
    assert stats["planned"] == 1 and stats["refused"] == 1 and stats["found"] >= 5
    assert 0 < stats["submitted"] <= 150 and stats["records"] >= 0.9 * len(truth)
    text = skitter("stats", str(out)).stdout
    assert "forms" in text and "records reached" in text

    # the export: via_form on what was reached through a submission, null on the rest
    rows = [json.loads(line) for line in skitter("export", str(out), "--format", "jsonl").stdout.splitlines()]
    by_url = {r["url"]: r for r in rows}
    assert by_url[srv.hidden_url + "/"]["via_form"] is None
    records = [r for u, r in by_url.items() if u in truth]
    assert len(records) >= 0.9 * len(truth)
    assert all(r["via_form"] in subs for r in records)

    # skitter eval-forms: the share reached against the submissions, as JSON, a table and a PNG
    truth_file = tmp_path / "truth.txt"
    truth_file.write_text("\n".join(sorted(truth)))
    png = tmp_path / "curve.png"
    res = skitter("eval-forms", str(out), "--truth", str(truth_file), "--json", "--plot", str(png))
    (cov,) = json.loads(res.stdout).values()
    assert cov["records"] == 1000 and cov["reached"] == len(records) and cov["share"] >= 0.9
    assert cov["submissions"] == len(subs) and cov["ninety_percent_at"] <= len(subs)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = skitter("eval-forms", str(out), "--truth", str(truth_file)).stdout
    assert "| crawl |" in table and f"{len(records):,} of 1,000" in table


def test_records_are_fetched_before_the_page_budget_is_spent(tmp_path, hidden_server) -> None:
    """``--max-pages`` far below the form's budget (500 submissions): under bfs a record (a link of
    a result page, one level below its submission) takes turns with the next submissions, so the
    pages the crawl may fetch go to records as well as submissions (before, every submission came
    first, and the crawl stopped with no record fetched and every record found still queued)."""
    srv, _ = hidden_server
    out = tmp_path / "crawl"
    res = skitter("crawl", srv.hidden_url + "/", "-o", str(out), "--forms", "--max-pages", "150", *FAST)
    assert res.returncode == 0, res.stderr
    truth = set(srv.hidden_site.record_urls())
    conn = sqlite3.connect(out / "crawl.db")
    try:
        fetched = {u for (u,) in conn.execute("SELECT url FROM fetches WHERE status = 200")}
        subs = conn.execute("SELECT count(*) FROM form_urls WHERE role = 'submission'").fetchone()[0]
    finally:
        conn.close()
    assert len(fetched) <= 150 and subs >= 5
    assert len(fetched & truth) >= 30


def test_forms_bad_input_is_one_line(tmp_path) -> None:
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"), "--forms",
                                  "--form-words", str(tmp_path / "missing.txt"), "--quiet"))
    assert line.startswith("skitter: error:") and "--form-words" in line
    assert not (tmp_path / "c").exists()
    line = one_error_line(skitter("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "c"), "--forms",
                                  "--form-budget", "0", "--quiet"))
    assert "--form-budget" in line
    (tmp_path / "empty.txt").write_text("# nothing\n")
    line = one_error_line(skitter("eval-forms", str(tmp_path), "--truth", str(tmp_path / "empty.txt")))
    assert "--truth" in line
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)))
    line = one_error_line(skitter("eval-forms", str(tmp_path), "--truth", str(tmp_path / "binary.txt")))
    assert "--truth" in line and "not UTF-8" in line


def test_without_forms_no_form_is_submitted(tmp_path, hidden_server) -> None:
    srv, log = hidden_server
    host = srv.hidden_url.split("//")[1]
    before = len(read_access_log(log))
    summary = crawl([srv.hidden_url + "/"], tmp_path / "c", delay=0, adaptive_delay=0, allow_private=True,
                    index_interval=-1)
    hits = [r for r in read_access_log(log)[before:] if r["host"] == host]
    assert {r["path"].split("?")[0] for r in hits} == {"/robots.txt", "/", "/search"}
    assert summary.get("forms") is None


def test_a_second_hidden_site(tmp_path) -> None:
    """The film archive (tests/hidden_variant.py): radio, select, checkbox and a search box, AND
    semantics, 45 results a query, a robots.txt rule inside the query string, vote, report and
    list forms on every record page."""
    with ModelServer(None) as srv:
        site = srv.model = VariantSite(srv.base, films=1500)
        summary = crawl(site.seeds(), tmp_path / "c", forms=True, form_budget=300, delay=0, adaptive_delay=0,
                        allow_private=True, index_interval=-1)
        log = list(srv.log)
    assert {h.method for h in log} == {"GET"}
    for h in log:
        url = srv.base + h.path
        assert site.robots_allowed(url) and not site.never_submit(url), url
    reached = {srv.base + h.path for h in log if h.status == 200} & set(site.record_urls())
    assert len(reached) >= 0.85 * 1500, len(reached)
    # the checkbox submission robots.txt disallows (a rule inside the query): decided, never requested
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    refused = [u for (u,) in conn.execute("SELECT url FROM fetches WHERE error LIKE 'robots%'")]
    assert any("subtitled=1" in u for u in refused) and not any("subtitled=" in h.path for h in log)
    f = summary["forms"]
    assert f["submissions"] <= 300 * f["planned"]
    assert set(f["never"]) and all(b["action"] == srv.base + "/find" for b in f["by_form"])


class EndlessResults:
    """A search whose results never end: every page of every query links to the next one, and
    to one record."""

    def respond(self, path_qs: str) -> Response:
        path, _, query = path_qs.partition("?")
        p = dict(parse_qsl(query))
        if path == "/robots.txt":
            return ALLOW_ALL
        form = ('<form action="/s"><input type="text" name="q"><select name="c"><option value="">any</option>'
                '<option value="a">A</option><option value="b">B</option></select></form>')
        if path == "/":
            body = f"<h1>Endless</h1>{form}"
        elif path == "/s":
            n = int(p.get("page", "1"))
            nxt = urlencode(p | {"page": str(n + 1)})
            body = (f"<h1>Results for {html.escape(p.get('q', ''))} {html.escape(p.get('c', ''))} page {n}</h1>"
                    f'<a href="/r/{abs(hash(query)) % 10**9}">record {n}</a> <a href="/s?{html.escape(nxt)}">Next</a>'
                    + form)
        elif path.startswith("/r/"):
            body = f"<p>record {path[3:]} lorem ipsum words here</p>"
        else:
            return Response(404, [("Content-Type", "text/html")], b"no")
        return Response(200, [("Content-Type", "text/html")], f"<html><body>{body}</body></html>".encode())


def test_a_result_set_is_bounded(tmp_path) -> None:
    with ModelServer(EndlessResults()) as srv:
        crawl([srv.base + "/"], tmp_path / "c", forms=True, form_budget=6, delay=0, adaptive_delay=0,
              allow_private=True, index_interval=-1, max_depth=100)
        log = list(srv.log)
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    subs = [u for (u,) in conn.execute("SELECT url FROM form_urls WHERE role = 'submission'")]
    assert 0 < len(subs) <= 6
    pages = [h for h in log if h.path.startswith("/s?")]
    # each submission, then at most RESULT_PAGES further pages of its results
    assert len(pages) <= len(subs) * (1 + RESULT_PAGES)
    per = conn.execute("SELECT via_form, count(*) FROM form_urls WHERE role = 'results' GROUP BY via_form").fetchall()
    assert per and max(n for _, n in per) == RESULT_PAGES


def test_held_back_by_host_burst_then_resumed(tmp_path, hidden_server) -> None:
    """--host-burst holds submissions back (they wait, the planner is not told they failed); a
    later run goes on where the planner stopped."""
    srv, _ = hidden_server
    out = tmp_path / "c"
    settings = dict(forms=True, delay=0, adaptive_delay=0, allow_private=True, index_interval=-1)
    crawl([srv.hidden_url + "/"], out, host_burst=20, host_window=50, **settings)
    conn = sqlite3.connect(out / "crawl.db")
    (status, submitted), = conn.execute("SELECT status, submitted FROM forms WHERE action LIKE '%/search'")
    assert status == "active" and submitted < 20   # not done: not dropped on refusals it never earned
    conn.close()
    summary = crawl([srv.hidden_url + "/"], out, **settings)
    assert summary["forms"]["records"] >= 900


def test_skitter_demo_forms(tmp_path) -> None:
    out = tmp_path / "demo"
    res = skitter("demo", "--forms", "--pages", "200", "--hosts", "2", "-o", str(out))
    assert res.returncode == 0, res.stderr
    truth = [line for line in (out / "hidden-records.txt").read_text().splitlines() if not line.startswith("#")]
    assert len(truth) == 3000 and all(u.endswith(".html") and "/record/" in u for u in truth)
    assert f"skitter eval-forms {out} --truth {out}/hidden-records.txt" in res.stdout
    (cov,) = json.loads(skitter("eval-forms", str(out), "--truth", str(out / "hidden-records.txt"),
                                "--json").stdout).values()
    assert cov["share"] >= 0.9 and cov["submissions"] <= 500 and cov["by_links"] == 0


class Page:
    def __init__(self, body: str) -> None:
        self.body = body

    def respond(self, path_qs: str) -> Response:
        if path_qs == "/robots.txt":
            return Response(404, [("Content-Type", "text/plain")], b"")
        return Response(200, [("Content-Type", "text/html")], f"<html><body>{self.body}</body></html>".encode())


def test_an_action_outside_the_scope_is_never_submitted(tmp_path) -> None:
    with ModelServer(Page("<p>results</p>")) as other, ModelServer(None) as srv:
        srv.model = Page(f'<form action="http://localhost:{other.port}/search"><input name="q"><select name="c">'
                         '<option>a</option><option>b</option></select></form>')
        summary = crawl([srv.base + "/"], tmp_path / "c", forms=True, delay=0, adaptive_delay=0,
                        allow_private=True, index_interval=-1)
        assert other.log == [], other.log
    (form,) = summary["forms"]["by_form"]
    assert form["status"] == "refused" and "scope" in form["reason"] and form["submitted"] == 0


class ManyForms:
    """A front page with twelve search forms (``/s0`` ... ``/s11``, one text box each) and links to
    five record pages, each with a form of its own whose action names the record
    (``/rec/N/notes``); every action answers with two links new to the crawl."""

    def respond(self, path_qs: str) -> Response:
        path = urlsplit(path_qs).path
        if path == "/robots.txt":
            return Response(404, [("Content-Type", "text/plain")], b"")
        if path == "/":
            forms = "".join(f'<form action="/s{i}"><input name="q"></form>' for i in range(12))
            recs = "".join(f'<a href="/rec/{i}">record {i}</a> ' for i in range(5))
            body = f"<main>{forms}<p>{recs}</p></main>"
        elif path.startswith("/rec/") and path.count("/") == 2:
            body = f'<main><p>Record</p><form action="{path}/notes"><input name="q"></form></main>'
        elif path.startswith("/r/"):
            body = "<main><p>A record reached through a form.</p></main>"
        else:
            tag = "".join(c if c.isalnum() else "_" for c in path_qs)
            body = f'<main><ul><li><a href="/r/{tag}/a">a</a></li><li><a href="/r/{tag}/b">b</a></li></ul></main>'
        return Response(200, [("Content-Type", "text/html")], f"<html><body>{body}</body></html>".encode())


def test_forms_planned_per_host_are_bounded_and_a_record_form_is_one_form(tmp_path, monkeypatch) -> None:
    """A host that offers a search form with every page gets FORMS_PER_HOST planners at a time and
    FORMS_TRIED_PER_HOST in all (here 4 and 10), and the form each record page has for itself is
    planned once (Form.key), not once a record."""
    from skitter import formcrawl

    monkeypatch.setattr(formcrawl, "FORMS_PER_HOST", 4)
    monkeypatch.setattr(formcrawl, "FORMS_TRIED_PER_HOST", 10)
    running: list[int] = []
    activate = formcrawl.FormCrawl._activate

    def counted(self, *args, **kw):   # how many planners run at once
        activate(self, *args, **kw)
        running.append(len(self.active))

    monkeypatch.setattr(formcrawl.FormCrawl, "_activate", counted)
    with ModelServer(ManyForms()) as srv:
        crawl([srv.base + "/"], tmp_path / "c", forms=True, form_budget=2, delay=0, adaptive_delay=0,
              allow_private=True, index_interval=-1, max_pages=400)
        actions = {urlsplit(h.path).path for h in srv.log if "?" in h.path}
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    rows = conn.execute("SELECT action, status, reason FROM forms").fetchall()
    conn.close()
    planned = [a for a, s, _ in rows if s in ("queued", "active", "done")]
    refused = [(a, r) for a, s, r in rows if s == "refused"]
    assert len(planned) == 10 and max(running) == 4
    assert len(refused) == 3 and all("were planned already" in r for _, r in refused)
    assert sum("/notes" in a for a, _, _ in rows) == 1          # five record pages: one form
    assert actions <= {urlsplit(a).path for a in planned} and len(actions) >= 2   # only planned ones sent


class FruitlessForms(ManyForms):
    """Twelve search forms whose every query finds nothing (no link on the result page)."""

    def respond(self, path_qs: str) -> Response:
        if urlsplit(path_qs).path.startswith("/s"):
            return Response(200, [("Content-Type", "text/html")], b"<html><body><main><p>No results.</p></main></body></html>")
        return super().respond(path_qs)


def test_forms_beyond_the_hosts_running_planners_wait_their_turn(tmp_path) -> None:
    """Twelve forms found at once on one host (every query finding nothing): ten planners run, the
    two others wait (queued) and run as those end, none refused for the ten before them."""
    with ModelServer(FruitlessForms()) as srv:
        crawl([srv.base + "/"], tmp_path / "c", forms=True, form_budget=2, delay=0, adaptive_delay=0,
              allow_private=True, index_interval=-1, max_pages=400)
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    rows = conn.execute("SELECT action, status FROM forms WHERE action LIKE '%/s%'").fetchall()
    conn.close()
    assert len(rows) == 12 and {s for _, s in rows} == {"done"}


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_hidden_sites_a_hold_out_tester_wrote(tmp_path, name):
    """Three sites of other shapes (tests/hidden_holdout.py): a search page apart from the home
    page whose empty query is refused, a required hidden field and a table, noise forms on every
    page. The default crawl reached 0 % of A's and C's records: ten words from a "nothing found"
    page and from the sign-up and log-in forms had the text box dropped. Now their pages' words
    (those of the page's other forms left out) and the words of result pages that found records
    lead to the records; none of the noise forms is sent."""
    from hidden_holdout import HiddenSite, truth

    # site A with the user's adaptive delay (10 x the response time, 14 s on one host); B and C
    # without it (25 s for C): what the planner submits does not depend on the pace
    pace = [] if name == "a" else ["--adaptive-delay", "0"]
    with HiddenSite(name) as site:
        out = tmp_path / "c"
        res = skitter("crawl", f"{site.base}/", "-o", str(out), "--forms", "--delay", "0", *pace, "--form-budget", "100",
                      "--quiet", "--index-interval", "-1")
        assert res.returncode == 0, res.stderr
        log = list(site.log)
    (tmp_path / "truth.txt").write_text(truth(name, site.base))
    ev = skitter("eval-forms", str(out), "--truth", str(tmp_path / "truth.txt"), "--json")
    assert ev.returncode == 0, ev.stderr
    got, = json.loads(ev.stdout).values()
    assert got["share"] >= 0.9, got
    assert all(method == "GET" for method, _ in log)
    assert not [p for _, p in log if p.startswith(("/signup", "/account/enter", "/rate"))]


class QuietBlog:
    """A blog whose search is the only way to its posts (a static front page, no archive links),
    with a text box ``s`` and nothing else, on the front page itself (``/?s=``, as WordPress).
    None of the front page's words is in a post (the posts' words are invented), so probing with
    them finds nothing; the empty query lists every post, ten a page (``&paged=2``), as WordPress
    does."""

    def __init__(self, n: int = 57) -> None:
        import random

        rng = random.Random(5)
        syll = ["ka", "lo", "mi", "nu", "re", "sa", "to", "vi", "ze", "qu"]
        vocab = ["".join(rng.choice(syll) for _ in range(3)) for _ in range(300)]
        self.posts = {f"/{2020 + i % 5}/{i:03d}-{vocab[i]}/": " ".join(rng.choices(vocab, k=40)) for i in range(n)}

    def respond(self, path_qs: str) -> Response:
        path, _, query = path_qs.partition("?")
        p = dict(parse_qsl(query, keep_blank_values=True))
        form = '<form role="search" action="/" method="get"><input type="search" name="s" placeholder="Search …"></form>'
        if path == "/robots.txt":
            return ALLOW_ALL
        if path == "/" and "s" in p:
            q = p["s"].strip().lower()
            hits = [u for u, text in self.posts.items() if not q or q in text.split()]
            page = int(p.get("paged", "1"))
            shown = hits[(page - 1) * 10:page * 10]
            more = (f'<a href="/?{html.escape(urlencode({"s": p["s"], "paged": page + 1}))}">Older posts</a>'
                    if page * 10 < len(hits) else "")
            items = "".join(f'<li><a href="{u}">{u.strip("/")}</a></li>' for u in shown)
            body = f"<ul>{items}</ul>{more}" if shown else "<p>Nothing matched your search terms.</p>"
        elif path == "/":
            body = "<p>Hello and welcome to my little corner. Use the box below.</p>"
        elif path in self.posts:
            body = f"<article><p>{self.posts[path]}</p></article>"
        else:
            return NOT_FOUND
        page_html = f"<html><head><title>Journal</title></head><body><h1>Journal</h1>{body}{form}</body></html>"
        return html_response(page_html)


def test_a_search_whose_words_are_nowhere_on_the_site_is_probed_empty(tmp_path) -> None:
    """The front page's words find no post; the empty query lists them all: the planner submits
    it (after any --form-words, before the page's words) and reaches every post through its
    result pages."""
    blog = QuietBlog()
    with ModelServer(blog) as srv:
        crawl([srv.base + "/"], tmp_path / "c", forms=True, delay=0, adaptive_delay=0, allow_private=True,
              index_interval=-1)
        log = [h.path for h in srv.log]
    assert "/?s=" in log
    fetched = {h for h in log if h in blog.posts}
    assert fetched == set(blog.posts)


class QuietArchive:
    """An oral-history archive (after a hold-out tester's): the search page says nothing of the
    records and the site refuses the empty query ("Please enter one or more keywords"); the home
    and about pages describe the collection in the records' own words. Results go on by path, as
    WordPress's do (``/search/results/page/2/?keywords=...``), 5 a page."""

    MENU = '<nav><a href="/">Home</a> <a href="/about/">About</a> <a href="/search/">Search the archive</a></nav>'

    def __init__(self, n: int = 60) -> None:
        import random

        rng = random.Random(11)
        topics = ["herring", "lugger", "flood", "chapel", "saltmarsh", "sailmaker", "oyster", "smokehouse"]
        syll = ["ba", "de", "fi", "go", "ku", "la", "me", "no", "pi", "ru"]
        filler = ["".join(rng.choice(syll) for _ in range(3)) for _ in range(200)]
        self.records = {f"/interview/{i:03d}/": " ".join([topics[i % len(topics)], *rng.choices(filler, k=30)])
                        for i in range(n)}

    def respond(self, path_qs: str) -> Response:
        path, _, query = path_qs.partition("?")
        p = dict(parse_qsl(query, keep_blank_values=True))
        if path == "/robots.txt":
            return ALLOW_ALL
        results = path.startswith("/search/results/")
        if path == "/":
            body = ("<p>Voices of the coast: fishermen and their families remember the herring seasons, "
                    "the lugger crews, the chapel on the quay and the great flood.</p>")
        elif path == "/about/":
            body = ("<p>Recorded in the villages of the estuary: the saltmarsh, the sailmaker's loft, "
                    "the oyster beds and the smokehouse yards.</p>")
        elif path == "/search/":
            body = ('<form action="/search/results/" method="get"><label>Keywords <input name="keywords"></label>'
                    '<select name="sort"><option>relevance</option><option>date</option></select>'
                    '<button>Go</button></form>')
        elif results:
            q = p.get("keywords", "").strip().lower()
            rest = path[len("/search/results/"):].strip("/")
            page = int(rest.split("/")[1]) if rest.startswith("page/") else 1
            if not q:
                body = "<p>Please enter one or more keywords.</p>"
            else:
                hits = [u for u, text in self.records.items() if q in text.split()]
                shown = hits[(page - 1) * 5:page * 5]
                more = (f'<a href="/search/results/page/{page + 1}/?{html.escape(query)}">Next</a>'
                        if page * 5 < len(hits) else "")
                items = "".join(f'<tr><td><a href="{u}">{u}</a></td></tr>' for u in shown)
                body = f"<table>{items}</table>{more}" if shown else f"<p>No interviews match {html.escape(q)}.</p>"
        elif path in self.records:
            body = f"<article><p>{self.records[path]}</p></article>"
        else:
            return NOT_FOUND
        page_html = f"<html><head><title>Coast Voices</title></head><body>{self.MENU}{body}</body></html>"
        return html_response(page_html)


def test_a_search_is_probed_with_the_words_of_the_sites_other_pages(tmp_path) -> None:
    """No word of the search page is a record's and the empty query is refused: the words of the
    home and about pages (the first pages crawled of the host) reach the records, and the further
    result pages, numbered in the path, are read as the submission's results, at its depth."""
    site = QuietArchive()
    with ModelServer(site) as srv:
        crawl([srv.base + "/"], tmp_path / "c", forms=True, delay=0, adaptive_delay=0, allow_private=True,
              index_interval=-1)
        log = [h.path for h in srv.log]
    assert {h for h in log if h in site.records} == set(site.records)
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    try:
        roles = dict(conn.execute("SELECT url, role FROM form_urls"))
        depth = dict(conn.execute("SELECT url, depth FROM fetches"))
    finally:
        conn.close()
    paged = [u for u in roles if "/search/results/page/" in u]
    assert paged and all(roles[u] == "results" for u in paged)
    subs = {u: depth[u] for u, r in roles.items() if r == "submission"}
    assert all(depth[u] == next(iter(subs.values())) for u in paged)   # the submissions' depth
