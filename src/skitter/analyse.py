"""The CPU-heavy part of handling one response, as one pure function a worker process can run.

``analyse`` turns a FetchResult into what the crawl loop stores: the WARC record pair (gzip-
compressed), the content hash and, for HTML, the parsed Page. It does no I/O and touches no
shared state, so the loop runs it in analysis processes (``--analysis-processes``) and keeps its own event
loop for fetching, the frontier and the database: on two cores that is what lets skitter use
both (docs/benchmarks.md has the profile). The processes are :mod:`skitter.procpool`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import xxhash

from .models import FetchResult, Page, fast_pickle
from .store.text import pack_text
from .store.warc import encode_pair

if TYPE_CHECKING:
    from array import array

    import numpy as np

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


class _ParseOptions(TypedDict):
    """The keyword arguments of ``parse.parse_html`` and ``parse.parse_with_main_text``."""

    x_robots_tag: str | None
    user_agent_token: str
    link_context: bool


@fast_pickle
@dataclass(slots=True)
class Analysis:
    warc: bytes | None            # the request + response records, ready to append
    content_hash: str | None      # xxh3-128 of the decoded body (2xx only)
    page: Page | None             # parsed HTML (2xx HTML only)
    fingerprints: array | np.ndarray | None = None  # the smallest winnowing fingerprints of the main
    #                               text: an array('Q') from skitter.winnow (no NumPy in the worker)
    text: bytes | None = None     # the page's text as pages.text stores it (store.text.pack_text),
    #                               or None when the crawl process packs it (``pack=False``)
    forms: list | None = None     # with --forms: the page's <form>s (skitter.forms.Form), if any
    signature: str | None = None  # with --forms: skitter.forms.result_signature of its main text
    main_hash: str | None = None  # xxh3-64 of the title and main text (``main_hash=True``): what a
    #                               recrawl compares, so boilerplate noise is no change


def is_html(result: FetchResult) -> bool:
    ctype = result.content_type
    if ctype in HTML_TYPES:
        return True
    return ctype is None and result.body[:512].lstrip()[:1] == b"<"


def analyse(result: FetchResult, target_uri: str, ua_token: str, near_dup_probe: int | None = 0,
            keep_text: bool = True, pack: bool = True, link_context: bool = True,
            forms: bool = False, main_hash: bool = False) -> Analysis:
    """``near_dup_probe``: how many of the page's smallest winnowing fingerprints the near-duplicate
    test needs (``NearDupIndex.probe``; None: all of them, 0: the test is off). ``pack``: deflate
    the page's text here (``Analysis.text``); if not, the crawl process does (see
    ``Crawler._analyse_opts``). ``keep_text``: whether the crawl process reads ``page.text``
    (focused strategies do); if not and the text is packed, only the packed text goes back, a
    third of the bytes through the pipe. ``link_context``: fill in the links' ``context``
    (only SharkSearch reads it: ``Scorer.reads_link_context``). ``forms`` (``--forms``): extract the
    page's forms when the body has a ``<form`` (a second lexbor parse, only then), and give every
    HTML page the signature of its main text (the planner tells result pages apart by it); the
    crawl process then gets the text of the pages the planner reads (a query URL's, a form's page)
    even when ``keep_text`` is off (skitter.formcrawl). ``main_hash``: also the checksum of the
    page's title and main text (``Analysis.main_hash``, for a recrawl's change detection: a
    rotating ad or a date in the footer changes the body, not the main text)."""
    warc = encode_pair(result, target_uri=target_uri)
    status = result.status
    if status is None or not 200 <= status < 300:
        return Analysis(warc, None, None)
    digest = xxhash.xxh3_128_hexdigest(result.body)
    page = None
    if is_html(result):
        # imported here, in the worker: the crawl process needs no lexbor
        from .parse import parse_html, parse_with_main_text

        kw = _ParseOptions(x_robots_tag=result.header_lines("x-robots-tag"), user_agent_token=ua_token,
                           link_context=link_context)
        fps = mhash = None
        if near_dup_probe == 0 and not forms and not main_hash:
            page = parse_html(result.body, target_uri, result.header("content-type"), **kw)
        else:
            page, main = parse_with_main_text(result.body, target_uri, result.header("content-type"), **kw)
            if near_dup_probe is None:   # every fingerprint (a zero threshold): NumPy's winnowing
                from .dedup import winnow

                fps = winnow(main)
            elif near_dup_probe != 0:
                from .winnow import smallest

                fps = smallest(main, near_dup_probe)
            # the checksum costs a microsecond once the main text is there: a crawl stores it, so a
            # later recrawl's first revisit can tell a change from noise (the main_hash option
            # only asks for the main text when nothing else would)
            mhash = xxhash.xxh3_64_hexdigest(f"{page.title}\n{main}".encode("utf-8", "surrogatepass"))
        if len(page.links) > MAX_LINKS:
            page.links = page.links[:MAX_LINKS]
        found = signature = None
        if forms:
            found, signature = _forms(result, target_uri, main)
            keep_text = keep_text or bool(found) or "?" in target_uri
        if not pack:
            return Analysis(warc, digest, page, fps, None, found, signature, mhash)
        text = pack_text(page.text)
        if not keep_text:
            page.text = ""
        return Analysis(warc, digest, page, fps, text, found, signature, mhash)
    return Analysis(warc, digest, page)


_FORM_TAG = re.compile(rb"<form[\s>/]", re.IGNORECASE)
_MAX_FORMS = 50   # a page's forms kept (a catalogue page with a form on every row: the first 50)


def _forms(result: FetchResult, target_uri: str, main: str) -> tuple[list | None, str]:
    """The page's forms (None when its body has no ``<form``) and its main text's signature."""
    from .forms import extract_forms, result_signature
    from .parse import decode_body

    found = None
    if _FORM_TAG.search(result.body) is not None:
        text, _ = decode_body(result.body, result.header("content-type"))
        found = extract_forms(text, target_uri)[:_MAX_FORMS] or None
    return found, result_signature(main, target_uri)


#: Links of one page kept (in document order), as Nutch's db.max.outlinks.per.page bounds them (100
#: there): a hold-out page of 200,000 links held the crawl's event loop for 5 s while the frontier
#: took them in, and a real page's links beyond the first ten thousand are a trap or a sitemap's
MAX_LINKS = 10_000

#: CPU seconds an analysis process may spend on one page (``analyse_limited``): a normal page takes
#: about a millisecond, a 10 MiB one well under a second; a hold-out page of 3.4 MB of nested
#: formatting tags took the parser 20 s, one of 6.9 MB 95 s, and held every other host's pages
#: behind it
CPU_LIMIT = 10.0


def analyse_limited(cpu_seconds: float, result: FetchResult, target_uri: str, *options) -> Analysis:
    """:func:`analyse` in an analysis process, which the kernel ends (SIGVTALRM, whose default is
    to terminate) if the page takes more than ``cpu_seconds`` of its CPU time: a long call into the
    parser cannot be interrupted from Python, a process can. The pool reports the call's death
    (``ProcessDied.cpu_limit``) and starts another process; the page is archived, not parsed."""
    import signal

    signal.setitimer(signal.ITIMER_VIRTUAL, cpu_seconds)
    try:
        return analyse(result, target_uri, *options)
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)


def archive_only(result: FetchResult, target_uri: str) -> Analysis:
    """What the crawl keeps of a response whose worker process died on it: the WARC records and
    the content hash, no parse (the crawl process never parses what crashed a worker)."""
    status = result.status
    ok = status is not None and 200 <= status < 300
    return Analysis(encode_pair(result, target_uri=target_uri),
                    xxhash.xxh3_128_hexdigest(result.body) if ok else None, None)
