"""Queries and relevance judgments for the demo web (``skitter eval`` on a demo crawl).

The demo web knows the topic of every page (:meth:`DemoWeb.topic_of`), which makes judgments
free: for each topic, four queries made of that topic's own vocabulary, and every page of the
topic a correct crawl fetches is relevant to each of them (rel 1). Queries per topic ``t``, with
``w`` its word list (most frequent first, as the generator's Zipf pool has them):

- ``<topic>-and``: ``w[0] w[1]`` (bare words: all of them first, then any),
- ``<topic>-one``: ``w[5]`` (one mid-frequency word),
- ``<topic>-or``:  ``w[2] OR w[3] OR w[4]``,
- ``<topic>-rare``: ``w[-1]`` (the topic's rarest word: few pages have it, so recall is low).

Judged pages: the pages ``DemoWeb.reachable()`` lists (what a complete crawl that obeys robots
fetches) that have a topic, minus those a search engine must not show (``noindex`` by meta
robots or X-Robots-Tag). Exact duplicates are judged like their original: whichever of a group
the crawl saw first is the one in the index.
"""

from __future__ import annotations

from pathlib import Path

from ..urls import canonicalize

__all__ = ["demo_queries", "demo_qrels", "write_demo_qrels"]

_NOT_SHOWN = ("noindex", "xrobots")


def _topic_words(web, t: int) -> list[str]:
    words = getattr(web, "_topic_words", None)
    if words is None:  # pragma: no cover - DemoWeb keeps them there
        raise TypeError("this DemoWeb has no topic vocabulary")
    return list(words[t])


def demo_queries(web) -> list[tuple[str, str, int]]:
    """(qid, query text, topic index) for every topic of ``web``."""
    out = []
    for t, name in enumerate(web.topic_names):
        w = _topic_words(web, t)
        out.append((f"{name}-and", f"{w[0]} {w[1]}", t))
        out.append((f"{name}-one", w[5], t))
        out.append((f"{name}-or", f"{w[2]} OR {w[3]} OR {w[4]}", t))
        out.append((f"{name}-rare", w[-1], t))
    return out


def demo_qrels(web, *, max_depth: int = 10) -> dict[int, list[str]]:
    """{topic: canonical URLs of its judged pages}."""
    by_topic: dict[int, list[str]] = {t: [] for t in range(len(web.topic_names))}
    for url in web.reachable(max_depth=max_depth):
        if web.kind(url) in _NOT_SHOWN:
            continue
        t = web.topic_of(url)
        if t is not None:
            by_topic[t].append(canonicalize(url))
    return by_topic


def write_demo_qrels(web, queries_path: Path | str, qrels_path: Path | str, *,
                     max_depth: int = 10) -> tuple[int, int]:
    """Write the queries ("id<TAB>text") and qrels ("qid 0 url 1") files; (queries, judgments)."""
    queries = demo_queries(web)
    rel = demo_qrels(web, max_depth=max_depth)
    q_lines = [f"{qid}\t{text}" for qid, text, _ in queries]
    r_lines = [f"{qid} 0 {url} 1" for qid, _, t in queries for url in sorted(rel[t])]
    Path(queries_path).write_text("\n".join(q_lines) + "\n", encoding="utf-8")
    Path(qrels_path).write_text("\n".join(r_lines) + "\n", encoding="utf-8")
    return len(q_lines), len(r_lines)
