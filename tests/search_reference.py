"""A brute-force evaluator of the query language: the oracle of the tests and the benchmark.

It reads the crawl database directly (not the index), analyses every page's fields with the same
analyzer the indexer uses, and evaluates a query tree with Python sets and position lists: a
phrase is a run of consecutive tokens in one field; ``NEAR/k`` is FTS5's rule (in one field, an
instance of every phrase such that the tokens between the end of each phrase's instance and the
start of the last-starting instance are at most k); NOT is the complement within the indexed
pages; XOR is odd parity; site: and after:/before: compare the host and the date as the engine
documents. Slow (everything in memory) and obviously correct: use it on small crawls.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from skitter.index import analyze
from skitter.index.indexer import COLUMNS, MAX_ANCHORS, _iso, _split_host
from skitter.store.db import DB_NAME, connect
from skitter.store.text import page_text
from skitter.urls import fingerprint
from skitter.search import compile as qc
from skitter.search.query import And, DateFilter, Not, Or, Site, Xor, parse


@dataclass
class RefDoc:
    fp: int
    url: str
    host: str
    hostport: str
    date: str | None
    family: int
    columns: dict[str, list[str]]                  # column -> tokens
    positions: dict[str, dict[str, list[int]]]     # column -> token -> positions


class Reference:
    def __init__(self, crawl_dir: Path | str) -> None:
        conn = connect(Path(crawl_dir) / DB_NAME, readonly=True)
        try:
            rows = conn.execute(
                "SELECT p.fp, p.url, p.title, p.description, p.keywords, p.headings, p.text,"
                " p.last_modified, f.fetched_at, f.near_duplicate_of FROM pages p JOIN fetches f ON f.fp = p.fp"
                " WHERE f.noindex = 0 AND f.duplicate_of IS NULL AND f.fetch_order IS NOT NULL").fetchall()
            anchors: dict[int, list[str]] = {}
            for dst, anchor in conn.execute(
                    "SELECT dst, anchor FROM links WHERE src != dst AND anchor IS NOT NULL AND anchor != ''"):
                lst = anchors.setdefault(dst, [])
                if len(lst) < MAX_ANCHORS:
                    lst.append(anchor)
        finally:
            conn.close()
        self.docs: dict[int, RefDoc] = {}
        for fp, url, title, desc, kw, heads, text, lm, fetched, near in rows:
            host, hostport = _split_host(url)
            cols = {
                "title": analyze.tokens(title),
                # a field of separate pieces: a gap between them (analyze.GAP), which no query holds
                "meta": _pieces([desc, kw]),
                "headings": _pieces((heads or "").split("\n")),
                "url": analyze.tokens(analyze.url_words(url)),
                "anchors": _pieces(anchors.get(fp, [])),
                "body": analyze.tokens(page_text(text)),
            }
            pos: dict[str, dict[str, list[int]]] = {}
            for c, toks in cols.items():
                d: dict[str, list[int]] = {}
                for i, t in enumerate(toks):
                    d.setdefault(t, []).append(i)
                pos[c] = d
            self.docs[fp] = RefDoc(fp, url, host, hostport, _iso(lm) or _iso(fetched),
                                   fingerprint(near) if near else fp, cols, pos)
        self.all = frozenset(self.docs)

    # -- evaluation ----------------------------------------------------------------------------
    def urls(self, query: str) -> set[str]:
        return {self.docs[fp].url for fp in self.match(query)}

    def match(self, query: str) -> set[int]:
        """What the engine's Searcher.match_fps must return."""
        p = qc.plan(parse(query))
        out = set(self.all) if p.match is None else self.eval(p.match)
        for f in p.filters:
            out &= self.eval(f)
        return out

    def first_tier(self, query: str) -> set[int] | None:
        p = qc.plan(parse(query))
        return self.eval(p.first_tier) & self.match(query) if p.bare else None

    def eval(self, node) -> set[int]:
        if isinstance(node, qc.Tok):
            return {fp for fp, d in self.docs.items() if _phrase_in(d, node)}
        if isinstance(node, qc.ANear):
            return {fp for fp, d in self.docs.items() if _near_in(d, node)}
        if isinstance(node, Not):
            return set(self.all - self.eval(node.child))
        if isinstance(node, And):
            out = self.eval(node.children[0])
            for c in node.children[1:]:
                out &= self.eval(c)
            return out
        if isinstance(node, Or):
            return set().union(*(self.eval(c) for c in node.children))
        if isinstance(node, Xor):
            out: set[int] = set()
            for c in node.children:
                out ^= self.eval(c)
            return out
        if isinstance(node, Site):
            h = node.host
            if ":" in h and not h.startswith("["):
                return {fp for fp, d in self.docs.items() if d.hostport == h}
            # subdomains of a domain name; an IP address (no letter in it) only as itself
            return {fp for fp, d in self.docs.items()
                    if d.host == h or (d.host.endswith("." + h) and any(c.isalpha() for c in d.host))}
        if isinstance(node, DateFilter):
            if node.op == "after":
                return {fp for fp, d in self.docs.items() if d.date is not None and d.date >= node.day}
            return {fp for fp, d in self.docs.items() if d.date is not None and d.date < node.day}
        raise TypeError(f"cannot evaluate {node!r}")


def _pieces(parts: list[str | None]) -> list[str]:
    """The tokens of each non-empty part, a gap token between two."""
    out: list[str] = []
    for part in parts:
        toks = analyze.tokens(part)
        if toks:
            out += ([analyze.GAP] if out else []) + toks
    return out


def _starts(d: RefDoc, col: str, tokens: tuple[str, ...]) -> list[int]:
    """Start positions of the phrase ``tokens`` in column ``col`` of ``d``."""
    first = d.positions[col].get(tokens[0])
    if not first:
        return []
    if len(tokens) == 1:
        return first
    seq = d.columns[col]
    n = len(tokens)
    return [i for i in first if tuple(seq[i:i + n]) == tokens]


def _phrase_in(d: RefDoc, tok: qc.Tok) -> bool:
    cols = (tok.field,) if tok.field else COLUMNS
    return any(_starts(d, c, tok.tokens) for c in cols)


def _near_in(d: RefDoc, near: qc.ANear) -> bool:
    for col in COLUMNS:
        lists = []
        for t in near.toks:
            s = _starts(d, col, t.tokens)
            if not s:
                break
            lists.append((s, len(t.tokens)))
        else:
            # anchor on each candidate last-starting instance; every phrase takes its latest
            # instance starting at or before it (which ends latest)
            for anchor in sorted({p for s, _ in lists for p in s}):
                ends = []
                for s, n in lists:
                    j = bisect_right(s, anchor) - 1
                    if j < 0:
                        break
                    ends.append(s[j] + n)
                else:
                    if anchor - min(ends) <= near.k:
                        return True
    return False
