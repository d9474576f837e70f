"""The form crawler driven against the demo's hidden site as the crawl loop will drive it: robots.txt
is fetched first and every request is checked against it, a URL-seen set decides what is new, every
page is parsed by skitter.parse and its forms extracted and classified, a searchable form gets a
FormPlanner, and each submission's result pages are followed through their next-page links and
reported to the planner. Record pages are counted as reached when their links are found (the crawl
would fetch them). Used by tests/unit/test_forms_sim.py, tests/e2e/test_demo_hidden_server.py and
bench/forms_curve.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from urllib.parse import urlsplit

from skitter.demo.hidden import HiddenSite
from skitter.forms import DEFAULT_BUDGET, Form, FormPlanner, classify, extract_forms, result_signature
from skitter.parse import decode_body, parse_with_main_text
from skitter.robots.rules import RobotsRules

#: GET a URL: (status, content type, body).
Getter = Callable[[str], tuple[int, str | None, bytes]]


def model_getter(site: HiddenSite) -> Getter:
    """GET through the site model, no HTTP."""
    def get(url: str) -> tuple[int, str | None, bytes]:
        parts = urlsplit(url)
        resp = site.respond(parts.path + ("?" + parts.query if parts.query else ""))
        return resp.status, resp.header("content-type"), resp.body
    return get


@dataclass
class Simulation:
    curve: list[tuple[int, int]] = field(default_factory=list)   # (submissions made, records reached)
    requested: list[str] = field(default_factory=list)           # every URL fetched, in order
    refused: list[str] = field(default_factory=list)             # URLs robots.txt kept us from
    forms: dict[str, tuple[Form, bool, str]] = field(default_factory=dict)   # key -> classification
    planners: dict[str, FormPlanner] = field(default_factory=dict)
    records: set[str] = field(default_factory=set)


class _Crawl:
    def __init__(self, site: HiddenSite, get: Getter, sim: Simulation) -> None:
        self.get = get
        self.sim = sim
        status, _, body = get(site.base_url + "/robots.txt")
        sim.requested.append(site.base_url + "/robots.txt")
        self.robots = (RobotsRules.parse(body, "skitter") if status == 200
                       else RobotsRules.allow_all("unavailable"))
        self.seen: set[str] = set()
        self.truth = set(site.record_urls())

    def fetch(self, url: str, forms: bool = True):
        """(Page, main text) of ``url``, or None when robots.txt disallows it or it is not a 200.
        ``forms``: extract and classify its forms (a further result page repeats the first's)."""
        if not self.robots.allowed(url):
            self.sim.refused.append(url)
            return None
        self.sim.requested.append(url)
        status, ctype, body = self.get(url)
        if status != 200:
            return None
        page, main = parse_with_main_text(body, url, ctype)
        for form in extract_forms(decode_body(body, ctype)[0], url) if forms else ():
            self.sim.forms.setdefault(form.key, (form, *classify(form)))
        return page, main

    def discover(self, page) -> list[str]:
        """The page's links new to the crawl (now seen); record pages among them are reached."""
        new = [link.url for link in page.links if link.url not in self.seen]
        self.seen.update(new)
        self.sim.records.update(u for u in new if u in self.truth)
        return new


def simulate(site: HiddenSite, *, get: Getter | None = None, budget: int = DEFAULT_BUDGET,
             seed_words: tuple[str, ...] = (), batch: int = 4, max_pages: int = 20) -> Simulation:
    """Crawl the hidden site from its home page with forms on: at most ``budget`` submissions a
    form, ``batch`` asked for at a time, each followed through at most ``max_pages`` result pages.
    ``get``: the transport (default: the site model, no HTTP)."""
    sim = Simulation()
    crawl = _Crawl(site, get or model_getter(site), sim)
    home = site.seeds()[0]
    crawl.seen.add(home)
    fetched = crawl.fetch(home)
    assert fetched is not None
    for url in crawl.discover(fetched[0]):   # the pages the home page links to, and their forms
        got = crawl.fetch(url)
        if got is None:
            continue
        for key, (form, ok, _) in list(sim.forms.items()):
            if ok and key not in sim.planners and form.page_url == url and crawl.robots.allowed(form.action):
                sim.planners[key] = FormPlanner(form, budget=budget, seed_words=seed_words,
                                                page_words=[got[0].text])
    for planner in sim.planners.values():
        _run(crawl, planner, batch, max_pages)
    record = min(sim.records, default=None)
    if record is not None:   # one record page, for its (comment) form
        crawl.fetch(record)
    return sim


def _run(crawl: _Crawl, planner: FormPlanner, batch: int, max_pages: int) -> None:
    action_path = urlsplit(planner.form.action).path
    while urls := planner.next_submissions(batch):
        for url in urls:
            crawl.seen.add(url)
            got = crawl.fetch(url)
            if got is None:
                planner.report(url, signature="refused")
                continue
            page, main = got
            new = crawl.discover(page)
            planner.report(url, signature=result_signature(main, url), words=[page.text],
                           links=[link.url for link in page.links],
                           new_links=sum(urlsplit(u).path != action_path for u in new))
            _follow(crawl, planner, url, new, action_path, max_pages)
            crawl.sim.curve.append((len(crawl.sim.curve) + 1, len(crawl.sim.records)))


def _follow(crawl: _Crawl, planner: FormPlanner, submission: str, new: list[str], action_path: str,
            max_pages: int) -> None:
    """Fetch the submission's further result pages (new links on the action's path), as the crawl
    would, and report each to the planner."""
    queue = [u for u in new if urlsplit(u).path == action_path]
    pages = 1
    while queue and pages < max_pages:
        got = crawl.fetch(queue.pop(0), forms=False)
        pages += 1
        if got is None:
            continue
        found = crawl.discover(got[0])
        planner.report_more(submission, words=[got[0].text],
                            new_links=sum(urlsplit(u).path != action_path for u in found))
        queue += [u for u in found if urlsplit(u).path == action_path]
