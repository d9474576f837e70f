"""Forms in the crawl loop (issue #22, ``--forms``): the component :func:`skitter.api.build_crawler`
hands the loop when forms are on. It connects the pure form planner (:mod:`skitter.forms`) to the
crawl: which pages are results of a submission, what the planner is told about them, and which
submissions go into the frontier, where they are candidates like links (robots.txt, scope, trap
limits, URL-seen, politeness: docs/forms.md).

What the loop does with it (a few named lines in :mod:`skitter.loop`):

1. ``fetched(cand, record, analysis, new)``: every fetch with its outcome, in the same synchronous
   block as the fetch's store writes. A submission's first result page is reported to its
   planner (the signature of its main text, its words, links and how many of its links were new
   to the crawl); a further page of its results (a next-page link) with ``report_more``; a failed
   submission with its error as the signature. The new links of a result page are marked as
   reached through the submission (``form_urls``: the export's ``via_form``). The forms of the
   page (extracted by the analysis processes) are recorded, and a searchable one whose action is in
   scope and allowed by robots.txt gets a planner.
2. ``skipped(cand)``: a URL decided without a request (robots.txt): a submission is reported
   refused.
3. ``result_links(cand, links)``: a result page's links before they go to the frontier: a further
   page of the same results keeps the submission's depth (a result set is one level, however many
   pages it has, so ``--max-depth`` does not cut it short) and a priority a hair above it (a result
   set is read before the next submission, as the planner expects), and at most ``RESULT_PAGES``
   of them are followed per submission (the trap bound of a result set); under bfs its other links
   (records) get the submission's priority (``_RECORDS_WITH_SUBMISSIONS``).
4. ``submissions()`` / ``enqueued(cands, new)``: after each URL (and at the start) the loop asks
   for the planners' next submissions and puts them in the frontier; those the URL-seen test
   rejects are reported at once.

Crash safety: the planners' states are written by a hook the store calls first in every commit
(``CrawlStore.before_commit``), so a planner's state always commits with the fetch records, the
frontier rows and the ``form_urls`` rows it describes; after ``kill -9`` the planner goes on where
the last commit left it, and its submissions that were in flight are fetched again (they are still
leased in the frontier) and reported.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from collections.abc import Iterable
from urllib.parse import urlsplit

from .config import CrawlConfig
from .errors import UsageError
from .forms import Form, FormPlanner, classify, is_result_page
from .linkfilter import LinkFilter
from .models import Candidate, Page, new_link
from .robots.cache import RobotsCache
from .store.crawlstore import CrawlStore, iso
from .store.forms import RECORD, RESULTS, SUBMISSION, FormRecords
from .strategies import ParentContext, Scorer
from .urls import host_key, in_scope

log = logging.getLogger(__name__)

#: Further result pages followed per submission (its next-page links): the bound that keeps a
#: result set finite whatever the site's pagination does.
RESULT_PAGES = 20
#: Planners kept in memory at once; forms found beyond wait in the database (status ``queued``) and
#: start as earlier ones finish.
ACTIVE = 32
#: Planners of one host's forms running at once, at most (more wait, queued, and start as earlier
#: ones end); and forms of one host ever planned, at most (more are refused). A site's searches are
#: a few forms; one that offers a new form with every page (what the form key's id rule does not
#: catch) costs at most FORMS_PER_HOST planners at a time and FORMS_TRIED_PER_HOST in all.
FORMS_PER_HOST = 10
FORMS_TRIED_PER_HOST = 50
#: Submissions asked of a planner at a time (it keeps at most 8 unreported: ``max_pending``).
BATCH = 4
#: How much a further result page's priority exceeds its submission's: enough to come first.
_PAGE_BONUS = 1e-6
#: Strategies that rank by depth alone. Under them a record (a link of a result page: one level
#: below its submission) would wait behind every submission of every form, so none is fetched
#: before the budgets are spent; it gets its submission's priority (its depth stays one more), and
#: takes turns with the next submissions in discovery order. The other strategies rank records
#: their own way: dfs has them before the next submission already, the focused ones by relevance
#: (the tunnel's band travels in the priority), the importance ones by their importance.
_RECORDS_WITH_SUBMISSIONS = frozenset({"bfs"})
#: The site's words for its forms' text boxes (``FormPlanner(site_words=...)``): the stored text of
#: the first SITE_PAGES pages the crawl fetched of the form's host (its home page and what that
#: links to), at most SITE_CHARS characters of each; the URLs are remembered for the SITE_HOSTS
#: hosts met last.
SITE_PAGES = 8
SITE_CHARS = 20_000
SITE_HOSTS = 256
#: Form keys remembered in memory (a site's header search form is on every page); others are looked
#: up in the ``forms`` table.
_KNOWN = 10_000


def action_of(form: Form) -> str:
    """A planned form's action (``classify`` refuses a form without one)."""
    assert form.action is not None
    return form.action


def read_form_words(path: str) -> list[str]:
    """The words of a ``--form-words`` file (any text: its words, in order), or a one-line
    UsageError."""
    try:
        return Path(path).read_text(encoding="utf-8-sig", errors="replace").split()
    except OSError as exc:
        raise UsageError(f"--form-words: cannot read {path}: {exc.strerror or exc}") from None


@dataclass(frozen=True, slots=True)
class Via:
    """How a URL was reached through a form: the submission's URL, the form, the URL's role."""

    submission: str
    form: str
    role: str


@dataclass(slots=True)
class _Active:
    planner: FormPlanner
    depth: int           # of its submissions (the form's page + 1)
    priority: float      # of its submissions (the strategy's, for a link from the form's page)
    page_url: str        # the form's page: the submissions' parent


class FormCrawl:
    """The form crawler of one crawl (built by :func:`skitter.api.build_crawler` with ``--forms``)."""

    def __init__(self, store: CrawlStore, config: CrawlConfig, *, robots: RobotsCache, link_filter: LinkFilter,
                 scorer: Scorer, seed_words: Iterable[str] = (), now: Any = None) -> None:
        self.records = FormRecords(store.db)
        self.config = config
        self.robots = robots
        self.link_filter = link_filter
        self.scorer = scorer
        self._records_with_submissions = getattr(scorer, "name", None) in _RECORDS_WITH_SUBMISSIONS
        self.seed_words = list(seed_words)
        self._now = now           # () -> epoch seconds (the crawl's clock)
        self.active: dict[str, _Active] = {}
        self._known: dict[str, None] = {}  # keys of forms recorded lately (the table has them all)
        self._dirty: set[str] = set()      # active planners changed since the last commit
        self._want: set[str] = set()       # active planners that may issue more submissions
        self._issued: dict[str, Via] = {}  # submissions handed to the loop, not marked yet
        # per form: submissions issued but not in the frontier yet (held back by --host-burst, or
        # lost with the last run's uncommitted batch): they go through the link filter again
        self._deferred: dict[str, list[Candidate]] = {}
        self._pages: Counter[str] = Counter()   # further result pages admitted per submission
        self._memo: tuple[str | None, Via | None] = (None, None)
        self._site: OrderedDict[str, list[str]] = OrderedDict()   # host -> its first pages' URLs
        self._tried: Counter[str] = Counter(host_key(a) for a in self.records.planned_actions())   # host -> forms planned
        self._restore()
        store.before_commit.append(self.flush)

    # -- resume ---------------------------------------------------------------------------------
    def _restore(self) -> None:
        """The planners the last run left active, each with its submissions that were in flight:
        those the frontier holds are fetched and reported as usual; one the crawl has a record of
        but the planner never heard about (a run without --forms came between) is reported lost;
        one that never reached the frontier is sent again."""
        for key, state, depth, priority, page_url in self.records.planners("active"):
            self._activate(key, FormPlanner.from_json(state), depth, priority, page_url)
        self._fill()

    def _activate(self, key: str, planner: FormPlanner, depth: int, priority: float, page_url: str) -> None:
        self.active[key] = _Active(planner, depth, priority, page_url)
        for url in planner.pending():   # after a restart: its submissions that were in flight
            if self.records.via(url) is None:   # issued, never reached the frontier: send it again
                self._deferred.setdefault(key, []).append(
                    Candidate(url=url, depth=depth, parent=page_url, priority=priority))
            elif self.records.tried(url) and not self.records.awaited(url):
                planner.report(url, signature="lost")   # fetched while nobody told the planner
        self._want.add(key)
        self._dirty.add(key)

    def _fill(self) -> None:
        """Start queued planners while there is room, FORMS_PER_HOST of a host at most."""
        if len(self.active) >= ACTIVE:
            return
        running = Counter(host_key(action_of(a.planner.form)) for a in self.active.values())
        for key, action, depth, priority, page_url in self.records.queued():
            host = host_key(action)
            if running[host] < FORMS_PER_HOST:
                self._activate(key, FormPlanner.from_json(self.records.state(key)), depth, priority, page_url)
                running[host] += 1
                if len(self.active) >= ACTIVE:
                    return

    # -- what the loop tells it ------------------------------------------------------------------
    def via(self, url: str) -> Via | None:
        """How ``url`` was reached through a form, or None."""
        if self._memo[0] == url:
            return self._memo[1]
        v = self._issued.get(url)
        if v is None:
            row = self.records.via(url)
            v = Via(*row) if row is not None else None
        self._memo = (url, v)
        return v

    def result_links(self, cand: Candidate, links: list[Candidate]) -> list[Candidate]:
        """A fetched page's links on their way to the frontier (module docstring, 3)."""
        v = self.via(cand.url)
        if v is None or v.role == RECORD or not links:
            return links
        a = self.active.get(v.form)
        priority = (a.priority if a is not None else cand.priority) + _PAGE_BONUS
        out = []
        for c in links:
            if is_result_page(v.submission, c.url):
                if self._result_pages(v.submission) >= RESULT_PAGES:
                    continue
                c = replace(c, depth=cand.depth, priority=priority)
            elif self._records_with_submissions:   # a record: in turn with the next submissions
                c = replace(c, priority=max(c.priority, priority - _PAGE_BONUS))
            out.append(c)
        return out

    def fetched(self, cand: Candidate, record: dict[str, Any], analysis: Any, new: list[Candidate]) -> None:
        """A URL fetched, with its fetch record, its analysis and the candidates its links (or its
        redirect) added to the frontier as new (module docstring, 1)."""
        v = self.via(cand.url)
        self._memo = (None, None)
        page = analysis.page if analysis is not None else None
        if v is not None and v.role != RECORD:
            self._result(cand, v, record, analysis, new)
        forms = analysis.forms if analysis is not None else None
        if forms and page is not None and record.get("duplicate_of") is None:
            self._found(cand, page, forms)
        if v is None and page is not None:
            self._site_page(record.get("final_url") or cand.url)

    def _site_page(self, url: str) -> None:
        """Remember a page of its site, while the site has fewer than SITE_PAGES."""
        host = host_key(url)
        urls = self._site.get(host)
        if urls is None:
            urls = self._site[host] = []
            if len(self._site) > SITE_HOSTS:
                self._site.popitem(last=False)
        else:
            self._site.move_to_end(host)
        if len(urls) < SITE_PAGES:
            urls.append(url)

    def _site_words(self, page_url: str) -> list[str]:
        """The stored text of the site's first pages but ``page_url``'s (:data:`SITE_PAGES`)."""
        urls = self._site.get(host_key(page_url), [])
        return [self.records.page_text(u)[:SITE_CHARS] for u in urls if u != page_url]

    def skipped(self, cand: Candidate, error: str) -> None:
        """A URL decided without a request (robots.txt)."""
        v = self.via(cand.url)
        self._memo = (None, None)
        if v is not None and v.role == SUBMISSION:
            self._report(v, signature=f"refused: {error}")

    def _result(self, cand: Candidate, v: Via, record: dict[str, Any], analysis: Any, new: list[Candidate]) -> None:
        target = record.get("final_url")
        if target is not None and target != cand.url:   # a redirect: the target takes the URL's place
            for c in new:
                self._mark(c.url, v.submission, v.form, v.role)
            if not new and v.role == SUBMISSION:
                self._report(v, signature=f"redirect to a URL seen before: {target}")
            return
        page = analysis.page if analysis is not None else None
        status = record.get("status")
        if page is None or status is None or not 200 <= status < 300:
            if v.role == SUBMISSION:
                self._report(v, signature=f"failed: {record.get('error') or status}")
            return
        found = 0
        action_path = urlsplit(v.submission).path
        for c in new:
            if is_result_page(v.submission, c.url):
                self._mark(c.url, v.submission, v.form, RESULTS)
                self._pages[v.submission] += 1
            else:
                self._mark(c.url, v.submission, v.form, RECORD)
                # another query of the form (a did-you-mean link on a page of no results) is no
                # record: counted, it made every such page look new to the planner
                found += urlsplit(c.url).path != action_path
        a = self.active.get(v.form)
        if a is None:   # its planner is done: the pages of its last submissions are still read
            return
        if v.role == SUBMISSION:
            a.planner.report(v.submission, signature=analysis.signature or "", words=[page.text],
                             links=[link.url for link in page.links], new_links=found)
        else:
            a.planner.report_more(v.submission, words=[page.text], new_links=found)
        self._changed(v.form)

    def _report(self, v: Via, *, signature: str) -> None:
        a = self.active.get(v.form)
        if a is not None:
            a.planner.report(v.submission, signature=signature)
            self._changed(v.form)

    def _changed(self, key: str) -> None:
        self._dirty.add(key)
        self._want.add(key)

    def _mark(self, url: str, submission: str, form: str, role: str) -> None:
        self.records.mark(url, submission, form, role)
        if self._memo[0] == url:
            self._memo = (None, None)

    def _result_pages(self, submission: str) -> int:
        if submission not in self._pages:
            self._pages[submission] = self.records.result_pages(submission)
        return self._pages[submission]

    # -- forms found -------------------------------------------------------------------------------
    def _found(self, cand: Candidate, page: Page, forms: list[Form]) -> None:
        for form in forms:
            key = form.key
            if key in self._known:
                continue
            self._known[key] = None
            if len(self._known) > _KNOWN:   # a crawl of a million pages may find as many forms
                del self._known[next(iter(self._known))]
            if self.records.has_form(key):
                continue
            searchable, reason = classify(form)
            status, depth, priority, state = "never", None, None, None
            planner = None
            if searchable:
                refusal = self._refusal(form, cand.depth + 1)
                if refusal is not None:
                    status, reason = "refused", refusal
                else:
                    host = host_key(action_of(form))
                    self._tried[host] += 1
                    depth = cand.depth + 1
                    priority = self._priority(cand, page, form)
                    planner = FormPlanner(form, budget=self.config.form_budget, seed_words=self.seed_words,
                                          page_words=[page.text], site_words=self._site_words(cand.url),
                                          other_forms=[f for f in forms if f is not form])
                    running = sum(1 for a in self.active.values() if host_key(action_of(a.planner.form)) == host)
                    status = "active" if len(self.active) < ACTIVE and running < FORMS_PER_HOST else "queued"
                    state = planner.to_json()
            self.records.add_form(key, form.to_dict(), searchable=searchable, status=status, reason=reason,
                                  depth=depth, priority=priority, found_at=self._iso(), state=state)
            if planner is not None and status == "active":
                assert depth is not None and priority is not None
                self._activate(key, planner, depth, priority, cand.url)

    def _refusal(self, form: Form, depth: int) -> str | None:
        """Why a searchable form is not planned (its action out of scope, disallowed by robots.txt
        as far as the cached rules tell, or too deep), or None."""
        action = form.action
        assert action is not None   # classify: an http(s) action
        lf = self.link_filter
        if not in_scope(action, self.config.scope, lf.seed_hosts, lf.seed_domains):
            return "the action is outside the crawl's scope"
        if depth > self.config.max_depth:
            return "the form's page is at --max-depth"
        host = host_key(action)
        if self._tried[host] >= FORMS_TRIED_PER_HOST:
            return f"{FORMS_TRIED_PER_HOST} forms of its host were planned already (FORMS_TRIED_PER_HOST)"
        if self.config.obey_robots:
            rules = self.robots.cached(action)
            if rules is not None and rules.reason is None and not rules.allowed(action):
                return "robots.txt disallows the action"
        return None

    def _priority(self, cand: Candidate, page: Page, form: Form) -> float:
        """The strategy's priority of a link from the form's page to the form's action (anchor: what
        the form says of itself)."""
        parent = ParentContext(url=cand.url, page=page, depth=cand.depth, priority=cand.priority,
                               relevance=self.scorer.relevance(cand.url, page))
        return self.scorer.score(new_link(form.action or cand.url, anchor=form.text), parent)

    def _iso(self) -> str:
        import time

        return iso(self._now() if self._now is not None else time.time())

    # -- submissions --------------------------------------------------------------------------------
    def submissions(self) -> list[Candidate]:
        """The planners' next submissions (module docstring, 4); empty when none has more now."""
        out: list[Candidate] = []
        want, self._want = self._want, set()
        for key in sorted(want | set(self._deferred)):
            a = self.active.get(key)
            if a is None:
                continue
            held = self._deferred.pop(key, [])
            while True:
                urls = [c.url for c in held] + a.planner.next_submissions(BATCH - len(a.planner.pending()))
                held, refused = [], False
                for url in urls:
                    reason = self.link_filter.reject_reason(url, a.depth)   # scope, depth, length, traps
                    if reason == "host-burst":   # the host's quota of new URLs comes back: try again later
                        self._deferred.setdefault(key, []).append(
                            Candidate(url=url, depth=a.depth, parent=a.page_url, priority=a.priority))
                    elif reason is not None:
                        self.link_filter.rejected[reason] += 1
                        a.planner.report(url, signature=f"refused: {reason}")
                        refused = True
                    else:
                        self._issued[url] = Via(url, key, SUBMISSION)
                        out.append(Candidate(url=url, depth=a.depth, parent=a.page_url, priority=a.priority))
                self._dirty.add(key)
                if not refused or key in self._deferred:
                    break
            if a.planner.done:
                self._finish(key)
        return out

    def enqueued(self, cands: list[Candidate], new: list[Candidate]) -> None:
        """``cands`` (from :meth:`submissions`) went to the frontier; ``new`` passed the URL-seen
        test. The others were seen before (a link led there first): reported as such."""
        fresh = {c.url for c in new}
        for c in cands:
            v = self._issued.pop(c.url, None)
            if v is None:
                continue
            if c.url in fresh:
                self._mark(c.url, v.submission, v.form, SUBMISSION)
            else:
                self._report(v, signature="seen before")

    def _finish(self, key: str) -> None:
        a = self.active.pop(key)
        self.records.save_planner(key, status="done", submitted=a.planner.submitted, state=a.planner.to_json())
        self._dirty.discard(key)
        self._want.discard(key)
        summary = a.planner.summary()
        log.info("form %s done: %d submissions, %d new links", a.planner.form.action, summary["submitted"],
                 summary["new_links"])
        self._fill()

    # -- state ------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the changed planners' states (the store calls it first in every commit)."""
        for key in sorted(self._dirty):
            a = self.active.get(key)
            if a is not None:
                self.records.save_planner(key, status="active", submitted=a.planner.submitted,
                                          state=a.planner.to_json())
        self._dirty.clear()

    @property
    def waiting(self) -> bool:
        """Whether :meth:`submissions` may have something."""
        return bool(self._want or self._deferred)
