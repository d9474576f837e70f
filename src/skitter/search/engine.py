"""Evaluate a query on a crawl's index: matching, ranking, collapsing, snippets, suggestions.

Ranking. FTS5's BM25 (k1 = 1.2, b = 0.75) with one weight per column, from seed 001's tag
weights: meta 5, url 4, title 3, headings 2, body 1, and anchors 3 (the anchor text of the links
to a page is what other pages call it: as telling as its own title). BM25 is computed for the
query's positive terms (those not under a NOT). Then, with λ = ``pagerank_weight``::

    score = (1 - λ) · bm25 / max(bm25 of this query's results) + λ · norm_pagerank

    norm_pagerank = log(1 + pr · N) / log(1 + max_pr · N)     (0 when the crawl has no PageRank)

where N is the number of indexed pages and max_pr the largest PageRank among them (PageRank is
heavy-tailed: the log scale keeps ordinary pages apart). λ defaults to ``DEFAULT_PAGERANK_WEIGHT``
(0.2); 0 ranks by text alone.

Bare words (seed 004): the results are the pages with any of the words; those with all of them
come first (``Hit.all_words``), each group ranked by score.

Near-duplicate families (``fetches.near_duplicate_of``) collapse to one hit, in the place of their
best-ranked member, shown by the member the others name as canonical (``_faces``);
``Hit.duplicates`` counts the members folded into it. ``Results.total`` counts results after
collapsing.

"Did you mean": a query word whose stem no indexed page has gets the closest vocabulary word
(Levenshtein distance ≤ 1 for words of up to 4 letters, ≤ 2 beyond, among words seen in at
least two places), closer first, then more frequent; ``Results.suggestion`` is the query with
those words replaced.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import QuerySyntaxError, SkitterError, UsageError
from ..index import analyze
from ..index.indexer import MAIN, _get, norm_pagerank, open_index
from ..store.db import DB_NAME, connect
from ..store.text import page_text
from . import compile as qc
from .query import Not, Term, parse, walk
from .snippets import highlight, snippet

_TOO_COMPLEX = ("parser stack overflow",)
_TOO_COMPLEX_PREFIXES = ("Expression tree is too large", "too many terms in compound SELECT",
                         "too many FROM clause terms")

__all__ = ["Searcher", "Hit", "Results", "WEIGHTS", "DEFAULT_PAGERANK_WEIGHT", "search"]

WEIGHTS = {"title": 3.0, "meta": 5.0, "headings": 2.0, "url": 4.0, "anchors": 3.0, "body": 1.0}
DEFAULT_PAGERANK_WEIGHT = 0.2
MIN_CORRECTED = 3           # "did you mean" looks at words of at least this many characters


@dataclass
class Hit:
    rank: int
    url: str
    title: str
    score: float
    snippet: str                 # plain text, query words between ** and **
    snippet_html: str            # HTML-escaped, query words in <mark>
    title_html: str
    bm25: float                  # -bm25() of FTS5: larger is better; 0 for filter-only queries
    pagerank: float | None
    date: str | None
    host: str
    all_words: bool | None       # bare-word queries: the page has every word
    duplicates: int = 0          # near duplicates collapsed into this hit
    fp: int = 0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["score"] = round(self.score, 6)
        d["bm25"] = round(self.bm25, 6)
        return d


@dataclass
class Results:
    query: str
    hits: list[Hit]
    total: int                   # results (after collapsing near duplicates)
    matched: int                 # matching pages (before collapsing)
    page: int
    limit: int | None
    suggestion: str | None = None
    corrections: dict[str, str] = field(default_factory=dict)
    bare: bool = False
    elapsed_ms: float = 0.0

    @property
    def pages(self) -> int:
        if not self.limit:
            return 1
        return max(1, -(-self.total // self.limit))

    def as_dict(self) -> dict:
        return {"query": self.query, "total": self.total, "matched": self.matched, "page": self.page,
                "pages": self.pages, "limit": self.limit, "suggestion": self.suggestion,
                "corrections": self.corrections, "bare": self.bare,
                "elapsed_ms": round(self.elapsed_ms, 2), "hits": [h.as_dict() for h in self.hits]}


class Searcher:
    """Queries on one crawl directory's index. Cheap to keep open (the web UI keeps one)."""

    def __init__(self, crawl_dir: Path | str, *, pagerank_weight: float = DEFAULT_PAGERANK_WEIGHT,
                 weights: dict[str, float] | None = None) -> None:
        if not 0.0 <= pagerank_weight <= 1.0:
            raise UsageError(f"the PageRank weight must be within [0, 1], not {pagerank_weight}")
        self.crawl_dir = Path(crawl_dir)
        self.idx = open_index(self.crawl_dir, readonly=True)
        self._crawl: sqlite3.Connection | None = None
        self.pagerank_weight = pagerank_weight
        w = dict(WEIGHTS, **(weights or {}))
        # BM25 of the page's own text (fts) plus the anchors' (fta) times the anchor weight
        self._bm25 = "bm25(fts, " + ", ".join(repr(float(w[c])) for c in MAIN) + ")"
        self._anchor_weight = float(w["anchors"])
        self._vocab_cache: dict[int, tuple[list[str], list[int]]] = {}

    def close(self) -> None:
        self.idx.close()
        if self._crawl is not None:
            self._crawl.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def crawl(self) -> sqlite3.Connection:
        if self._crawl is None:
            self._crawl = connect(self.crawl_dir / DB_NAME, readonly=True)
        return self._crawl

    # -- matching ----------------------------------------------------------------------------
    def match_fps(self, query: str) -> set[int]:
        """Every page the query matches (for bare words: any of them), unranked."""
        p = qc.plan(parse(query))
        return {r[0] for r in self._run(query, p, scored=False)}

    def _run(self, query: str, p: qc.Plan, *, scored: bool = True) -> list[tuple]:
        """``_rows``, with SQLite's limits on the statement a query compiles to (nesting depth,
        compound SELECT terms, expression depth) reported as a bad query, not as a corrupt
        database (sqlite3.OperationalError is a DatabaseError, which the CLI calls corruption)."""
        try:
            return self._rows(p, scored=scored)
        except sqlite3.OperationalError as exc:
            msg = str(exc)
            if msg in _TOO_COMPLEX or msg.startswith(_TOO_COMPLEX_PREFIXES):
                raise QuerySyntaxError(f"the query is too complex for the index ({msg}): use fewer nested"
                                       " groups, NOTs or XORs", query, 0) from None
            raise

    def _rows(self, p: qc.Plan, *, scored: bool = True) -> list[tuple]:
        """(fp, score, family, pagerank) of every matching page."""
        fsql, fparams = self._filters(p)
        if p.match is None:
            return self.idx.execute(f"SELECT d.fp, 0.0, d.family, d.pagerank FROM docs d WHERE {fsql}",
                                    fparams).fetchall()
        # the matching pages: a set of rowids when AND / OR / AND NOT build it, else a predicate
        r = qc.rowids(p.match)
        if r is not None:
            rows = self.idx.execute(f"SELECT d.fp, 0.0, d.family, d.pagerank FROM docs d"
                                    f" WHERE d.fp IN ({r[0]}) AND {fsql}", [*r[1], *fparams]).fetchall()
        else:
            wsql, wparams = qc.sql(p.match)
            rows = self.idx.execute(f"SELECT d.fp, 0.0, d.family, d.pagerank FROM docs d WHERE ({wsql}) AND {fsql}",
                                    [*wparams, *fparams]).fetchall()
        if scored and p.positive and rows:
            scores = self._scores(p.positive)
            rows = [(fp, scores.get(fp, 0.0), fam, pr) for fp, _, fam, pr in rows]
        return rows

    def _scores(self, toks: list) -> dict[int, float]:
        """{fp: BM25 of the positive terms}: over the page's own columns (weighted) plus the
        anchor weight times the BM25 of its anchor text, for every page either table matches."""
        main = [e for e, _ in map(qc.leaf, toks) if e is not None]
        anchors = [e for _, e in map(qc.leaf, toks) if e is not None]
        scores: dict[int, float] = {}
        if main:
            scores.update(self.idx.execute(f"SELECT rowid, -{self._bm25} FROM fts WHERE fts MATCH ?",
                                           [" OR ".join(f"({e})" for e in main)]))
        if anchors and self._anchor_weight:
            for fp, s in self.idx.execute("SELECT rowid, -bm25(fta) FROM fta WHERE fta MATCH ?",
                                          [" OR ".join(f"({e})" for e in anchors)]):
                scores[fp] = scores.get(fp, 0.0) + self._anchor_weight * s
        return scores

    @staticmethod
    def _filters(p: qc.Plan) -> tuple[str, list]:
        if not p.filters:
            return "1", []
        parts = [qc.sql(f) for f in p.filters]
        return " AND ".join(f"({c})" for c, _ in parts), [x for _, ps in parts for x in ps]

    # -- search ------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int | None = 10, page: int = 1, collapse: bool = True,
               snippets: bool = True, suggest: bool = True) -> Results:
        """Ranked results of ``query``; ``limit`` None: all of them."""
        t0 = time.perf_counter()
        if page < 1:
            raise UsageError(f"pages are numbered from 1, not {page}")
        if limit is not None and limit < 1:
            raise UsageError(f"the limit must be at least 1, not {limit}")
        tree = parse(query)
        p = qc.plan(tree)
        rows = self._run(query, p)
        first: set[int] = set()
        if p.bare and rows:
            all_words = qc.rowids(p.first_tier)   # bare words: an AND of terms
            if all_words is None:
                t_sql, t_params = qc.sql(p.first_tier)
                all_words = (f"SELECT d.fp FROM docs d WHERE {t_sql}", t_params)
            first = {r[0] for r in self.idx.execute(all_words[0], all_words[1])}
        lam = self.pagerank_weight
        max_s = max((r[1] for r in rows), default=0.0) or 0.0
        max_pr = _get(self.idx, "max_pagerank")
        n_docs = self._n_docs()
        ranked = []
        for fp, s, fam, pr in rows:
            nb = s / max_s if max_s > 0 else 0.0
            score = (1.0 - lam) * nb + (lam * norm_pagerank(pr, max_pr, n_docs) if lam else 0.0)
            tier = 0 if (not p.bare or fp in first) else 1
            ranked.append((tier, -score, fp, s, fam, pr))
        ranked.sort()
        kept: list[list] = []
        by_family: dict[int, list] = {}
        for item in ranked:
            fam = item[4]
            if collapse and fam in by_family:
                by_family[fam][1] += 1
                by_family[fam][2].append(item)
                continue
            entry = [item, 0, [item]]
            by_family[fam] = entry
            kept.append(entry)
        lo = (page - 1) * limit if limit else 0
        window = kept[lo:lo + limit] if limit else kept[lo:]
        self._faces(window)
        stems = {t for tok in p.positive for t in tok.tokens}
        hits = self._hits(window, lo, stems, p, snippets)
        res = Results(query, hits, total=len(kept), matched=len(rows), page=page, limit=limit, bare=p.bare)
        if suggest:
            res.corrections = self.corrections(query, tree)
            if res.corrections:
                res.suggestion = _apply_corrections(query, tree, res.corrections)
        res.elapsed_ms = (time.perf_counter() - t0) * 1000
        return res

    FACE_MEMBERS = 50   # a family's best-ranked members among which its face is chosen

    def _faces(self, window: list) -> None:
        """Each collapsed family shown by its face, in the place its best-ranked member earned: the
        member the others name as ``<link rel=canonical>``, else one that names no other URL, else
        one without a query string, else the family's original (the first of it the crawl
        stored), else the best-ranked (a print version, shorter for want of the menu, outranked
        the article it names as canonical, or the article it copies). Among the members in the
        best's tier only (bare words: those with all the words)."""
        many = [e for e in window if e[1]]
        if not many:
            return
        members = {id(e): [m for m in e[2][:self.FACE_MEMBERS] if m[0] == e[0][0]] for e in many}
        fps = [m[2] for ms in members.values() for m in ms]
        info: dict[int, tuple[str, str | None]] = {}
        try:
            for i in range(0, len(fps), 500):
                part = fps[i:i + 500]
                info.update((r[0], (r[1], r[2])) for r in self.crawl.execute(
                    f"SELECT fp, url, canonical FROM fetches WHERE fp IN ({','.join('?' * len(part))})", part))
        except (sqlite3.Error, SkitterError):   # no crawl.db to read: the best-ranked, as before
            return
        for e in many:
            ms = members[id(e)]
            named = {c for u, c in (info.get(m[2], ("", None)) for m in ms) if c and c != u}
            original = e[0][4]   # the family's name: its original's fingerprint

            def key(pos_m: tuple[int, tuple], named: set = named, original: int = original) -> tuple:
                pos, m = pos_m
                url, canon = info.get(m[2], ("", None))
                return (url not in named, bool(canon and canon != url), "?" in url, m[2] != original, pos)

            face = min(enumerate(ms), key=key)[1]
            # in the family's place with its best score (results stay in score order); the
            # face's own BM25 and PageRank
            e[0] = (e[0][0], e[0][1], face[2], face[3], face[4], face[5])

    def _n_docs(self) -> int:
        return _get(self.idx, "n_docs", 0)

    def _hits(self, window: list, offset: int, stems: set[str], p: qc.Plan, snippets: bool) -> list[Hit]:
        if not window:
            return []
        fps = [e[0][2] for e in window]
        marks = ",".join("?" * len(fps))
        docs = {r[0]: r for r in self.idx.execute(
            f"SELECT fp, url, title, date, host FROM docs WHERE fp IN ({marks})", fps)}
        texts: dict[int, tuple] = {}
        if snippets:
            # (a crawl directory of schema 3, not opened by a writer since, has no main_start)
            for main in ("main_start", "NULL"):
                try:
                    texts = {r[0]: r for r in self.crawl.execute(
                        f"SELECT fp, text, description, {main} FROM pages WHERE fp IN ({marks})", fps)}
                    break
                except (sqlite3.Error, SkitterError):
                    texts = {}
        hits = []
        for i, ((tier, negscore, fp, s, _fam, pr), dups, *_) in enumerate(window):
            _, url, title, date, host = docs[fp]
            plain = markup = ""
            if snippets:
                _, text, desc, main_start = texts.get(fp, (fp, None, None, 0))
                plain, markup, n = snippet(page_text(text), stems, main_start=main_start)
                if n == 0 and desc:
                    dp, dm, dn = snippet(desc, stems)
                    if dn:
                        plain, markup = dp, dm
            _, title_html = highlight(title, stems)
            hits.append(Hit(rank=offset + i + 1, url=url, title=title or url, score=-negscore,
                            snippet=plain, snippet_html=markup, title_html=title_html or "", bm25=s,
                            pagerank=pr, date=date, host=host,
                            all_words=(tier == 0) if p.bare else None, duplicates=dups, fp=fp))
        return hits

    # -- did you mean ------------------------------------------------------------------------
    def corrections(self, query: str, tree=None) -> dict[str, str]:
        """{word with no hits: suggested word} for the query's words."""
        tree = tree if tree is not None else parse(query)
        out: dict[str, str] = {}
        # a word the query excludes is not corrected: `NOT foo` matching every page is no typo of `NOT food`
        negated = {id(t) for n in walk(tree) if isinstance(n, Not) for t in walk(n.child)}
        for node in walk(tree):
            if not isinstance(node, Term) or id(node) in negated:
                continue
            for w in analyze.words(node.text):
                # a word of one or two characters has too many neighbours to guess at ("c" → "3")
                if len(w) < MIN_CORRECTED or w in out or self._df(analyze.stem(w)) > 0:
                    continue
                s = self._closest(w)
                if s:
                    out[w] = s
        return out

    def _df(self, stem: str) -> int:
        """Pages with ``stem`` in their own text plus pages with it in their anchor text."""
        return sum(row[0] for table in ("vocab", "vocab_a")
                   for row in self.idx.execute(f"SELECT doc FROM {table} WHERE term = ?", (stem,)))

    def _closest(self, word: str) -> str | None:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import extract

        n = len(word)
        maxd = 1 if n <= 4 else 2
        cand_words: list[str] = []
        cand_n: list[int] = []
        for L in range(max(1, n - maxd), n + maxd + 1):
            ws, ns = self._vocab_of_len(L)
            cand_words += ws
            cand_n += ns
        if not cand_words:
            return None
        found = extract(word, cand_words, scorer=Levenshtein.distance, score_cutoff=maxd, limit=None)
        # a number for a number, a word for a word ("b2" may be "b3", "rx" is no "21")
        ranked = sorted(((d, -cand_n[i], w) for w, d, i in found
                         if w != word and w.isdigit() == word.isdigit()))
        for _d, _, w in ranked[:20]:
            if self._df(analyze.stem(w)) > 0:
                return w
        return None

    def _vocab_of_len(self, n: int) -> tuple[list[str], list[int]]:
        got = self._vocab_cache.get(n)
        if got is None:
            rows = self.idx.execute("SELECT word, n FROM words WHERE len = ? AND n >= 2", (n,)).fetchall()
            got = ([r[0] for r in rows], [r[1] for r in rows])
            self._vocab_cache[n] = got
        return got


def _apply_corrections(query: str, tree, corrections: dict[str, str]) -> str:
    """The query with each corrected word replaced inside the terms it appears in."""
    edits = []
    for node in walk(tree):
        if isinstance(node, Term):
            seg = query[node.start:node.end]
            new = seg
            for w, s in corrections.items():
                new = re.sub(rf"(?i)(?<![^\W_]){re.escape(w)}(?![^\W_])", s, new)
            if new != seg:
                edits.append((node.start, node.end, new))
    out = query
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    return out


def search(crawl_dir: Path | str, query: str, **kwargs) -> Results:
    """One query on one crawl directory (opens and closes the index)."""
    with Searcher(crawl_dir, pagerank_weight=kwargs.pop("pagerank_weight", DEFAULT_PAGERANK_WEIGHT)) as s:
        return s.search(query, **kwargs)
