"""From a parsed query tree to FTS5 MATCH expressions and SQL (pure: no I/O).

1. :func:`analyse` runs every term through the index's analyzer (fold, stop words, stem): a
   term becomes a :class:`Tok` (one token, or several = a phrase). Terms that analyse to nothing
   (stop words, punctuation) are dropped, and the tree is simplified around them: an operator
   left with one operand is that operand, one left with none disappears (``NOT the`` → nothing,
   ``a OR the`` → ``a``, ``a NEAR the`` → ``a``). A query left with nothing raises
   QuerySyntaxError.
2. A page's text is in two FTS5 tables (skitter.index.indexer): ``fts`` (title, meta, headings,
   url, body) and ``fta`` (anchors). A term or NEAR group is one MATCH expression per table
   (:func:`leaf`): user text never reaches an expression except as analysed tokens, each one
   double-quoted (NEAR/k → ``NEAR("a" "b c", k)``, ``title:x`` → ``{title} : "x"`` on ``fts``
   only, ``anchor:x`` → ``"x"`` on ``fta`` only). :func:`rowids` combines the leaves' rowid sets
   with SQL's UNION / INTERSECT / EXCEPT for AND, OR and AND NOT, so that ``a AND b`` matches a
   page with ``a`` in its anchors and ``b`` in its body, as one table did.
3. :func:`sql` writes any subtree as a predicate on ``docs d``: set-able parts as
   ``d.fp IN (<rowids>)``, the rest with SQL's own NOT/AND/OR, XOR as odd parity
   ``((x) + (y) + ...) % 2 = 1`` (every predicate is 0 or 1, never NULL), site: and
   after:/before: on docs' columns.
4. :func:`plan` splits the root into the words and the filters (when the root is an AND), and
   decides how to rank: the bare-words rule of seed 004 (``any`` = OR of the terms, ``all`` = AND
   as the first tier) and the positive terms whose BM25 scores the results.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import QuerySyntaxError
from ..index import analyze
from .query import And, DateFilter, Near, Node, Not, Or, Site, Term, Xor, is_bare, is_filter

__all__ = ["Tok", "ANear", "analyse", "leaf", "rowids", "sql", "plan", "Plan"]


@dataclass(frozen=True)
class Tok:
    """An analysed word or phrase: its tokens, in one index column or all (``field`` None)."""
    tokens: tuple[str, ...]
    field: str | None = None
    term: Term | None = None     # where it came from (positions, for suggestions)


@dataclass(frozen=True)
class ANear:
    toks: tuple[Tok, ...]
    k: int


ANode = object  # Tok | ANear | Site | DateFilter | Not | And | Or | Xor  (with analysed children)


def analyse(node: Node):
    """The tree with terms analysed and emptied parts removed (None if nothing is left)."""
    if isinstance(node, Term):
        toks = tuple(analyze.tokens(node.text))
        return Tok(toks, node.field, node) if toks else None
    if isinstance(node, (Site, DateFilter)):
        return node
    if isinstance(node, Not):
        child = analyse(node.child)
        return None if child is None else Not(child, node.pos)
    if isinstance(node, Near):
        near: tuple[Tok, ...] = tuple(t for t in (analyse(x) for x in node.terms) if t is not None)
        if not near:
            return None
        return near[0] if len(near) == 1 else ANear(near, node.k)
    if isinstance(node, (And, Or, Xor)):
        kids = tuple(c for c in (analyse(x) for x in node.children) if c is not None)
        if not kids:
            return None
        if len(kids) == 1:
            return kids[0]
        if isinstance(node, And):
            return And(kids, node.implicit)
        return type(node)(kids)
    raise TypeError(f"not a query node: {node!r}")


# ------------------------------------------------------------------------------------ FTS5

def _phrase(tok: Tok) -> str:
    return '"' + " ".join(tok.tokens) + '"'


def leaf(node) -> tuple[str | None, str | None]:
    """A term's (or NEAR group's) MATCH expressions on ``fts`` and on ``fta``; None for a table
    it cannot match (a field of the other table)."""
    if isinstance(node, ANear):
        e = "NEAR(" + " ".join(_phrase(t) for t in node.toks) + f", {node.k})"
        return e, e
    p = _phrase(node)
    if node.field is None:
        return p, p
    if node.field == "anchors":
        return None, p
    return f"{{{node.field}}} : {p}", None


def _leaf_sql(node) -> tuple[str, list]:
    main, anchors = leaf(node)
    parts, params = [], []
    if main is not None:
        parts.append("SELECT rowid AS id FROM fts WHERE fts MATCH ?")
        params.append(main)
    if anchors is not None:
        parts.append("SELECT rowid AS id FROM fta WHERE fta MATCH ?")
        params.append(anchors)
    return " UNION ".join(parts), params


def rowids(node) -> tuple[str, list] | None:
    """A compound SELECT of the rowids (column ``id``) of the pages ``node`` matches, and its
    parameters; None for what sets cannot express alone (XOR, a lone NOT, site:, dates)."""
    if isinstance(node, (Tok, ANear)):
        return _leaf_sql(node)
    if isinstance(node, And):
        pos: list[tuple[str, list]] = []
        neg: list[tuple[str, list]] = []
        for c in node.children:
            r = rowids(c.child) if isinstance(c, Not) else rowids(c)
            if r is None:
                return None
            (neg if isinstance(c, Not) else pos).append(r)
        if not pos:
            return None
        sql_ = " INTERSECT ".join(f"SELECT id FROM ({q})" for q, _ in pos)
        params = [x for _, ps in pos for x in ps]
        for q, ps in neg:
            sql_ += f" EXCEPT SELECT id FROM ({q})"
            params += ps
        return sql_, params
    if isinstance(node, Or):
        parts = [rowids(c) for c in node.children]
        if any(r is None for r in parts):
            return None
        return (" UNION ".join(f"SELECT id FROM ({q})" for q, _ in parts),   # type: ignore[misc]
                [x for r in parts for x in r[1]])   # type: ignore[index]
    if isinstance(node, Xor) and len(node.children) <= 4:   # each step repeats what came before
        parts = [rowids(c) for c in node.children]
        if any(r is None for r in parts):
            return None
        acc_sql, acc_params = parts[0]   # type: ignore[misc]
        for q, ps in parts[1:]:   # type: ignore[misc]
            acc_sql = (f"SELECT id FROM (SELECT id FROM ({acc_sql}) UNION SELECT id FROM ({q}))"
                       f" EXCEPT SELECT id FROM (SELECT id FROM ({acc_sql}) INTERSECT SELECT id FROM ({q}))")
            acc_params = [*acc_params, *ps, *acc_params, *ps]
        return acc_sql, acc_params
    return None  # a longer XOR (odd parity, in sql), Not (alone), Site, DateFilter


# ------------------------------------------------------------------------------------ SQL

def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def sql(node) -> tuple[str, list]:
    """A predicate on ``docs d`` (0 or 1, never NULL) and its parameters."""
    r = rowids(node)
    if r is not None:
        return f"d.fp IN ({r[0]})", r[1]
    if isinstance(node, Not):
        c, p = sql(node.child)
        return f"NOT ({c})", p
    if isinstance(node, (And, Or)):
        parts = [sql(c) for c in node.children]
        op = " AND " if isinstance(node, And) else " OR "
        return op.join(f"({c})" for c, _ in parts), [x for _, p in parts for x in p]
    if isinstance(node, Xor):
        parts = [sql(c) for c in node.children]
        return ("(" + " + ".join(f"({c})" for c, _ in parts) + ") % 2 = 1",
                [x for _, p in parts for x in p])
    if isinstance(node, Site):
        if ":" in node.host and not node.host.startswith("["):
            return "(d.hostport = ?)", [node.host]
        # the host or its subdomains; an IP address (no letter in it) only itself: site:5.1 is
        # not 127.0.5.1
        return ("(d.host = ? OR (d.host LIKE ? ESCAPE '\\' AND d.host GLOB '*[a-z]*'))",
                [node.host, "%." + _like_escape(node.host)])
    if isinstance(node, DateFilter):
        if node.op == "after":
            return "(coalesce(d.date >= ?, 0))", [node.day]
        return "(coalesce(d.date < ?, 0))", [node.day]
    raise TypeError(f"cannot compile {node!r}")  # pragma: no cover


# ------------------------------------------------------------------------------------ plan

@dataclass
class Plan:
    tree: object                   # the analysed tree (None: filters only)
    text: object | None            # the word part (None: the query is only filters)
    filters: list                  # filter subtrees ANDed at the top
    bare: bool                     # seed 004's rule: any of the words, all of them first
    match: object | None           # what to evaluate for the word part (the OR for bare words)
    first_tier: object | None      # bare words: the AND of them (ranked first)
    positive: list[Tok]            # the terms whose BM25 ranks the results


def positive_toks(node, negated: bool = False) -> list[Tok]:
    """The terms that count for ranking: those not under a NOT (XOR's operands count)."""
    if isinstance(node, Tok):
        return [] if negated else [node]
    if isinstance(node, ANear):
        return [] if negated else list(node.toks)
    if isinstance(node, Not):
        return positive_toks(node.child, not negated)
    if isinstance(node, (And, Or, Xor)):
        return [t for c in node.children for t in positive_toks(c, negated)]
    return []


def _terms(node) -> list[Term]:
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Not):
        return _terms(node.child)
    return [t for c in getattr(node, "children", ()) for t in _terms(c)]


def _nothing_to_search(tree: Node) -> str:
    """Why a query leaves no word to look for: its words are stop words, punctuation, or longer
    than the index keeps (analyze.MAX_TOKEN characters)."""
    long = [w for t in _terms(tree) for w in analyze._WORD.findall(analyze.fold(t.text)) if len(w) > analyze.MAX_TOKEN]
    if long:
        w = long[0]
        return (f"nothing to search for: words longer than {analyze.MAX_TOKEN} characters are not indexed"
                f" ({w[:20]}…, {len(w)} characters)")
    return "nothing to search for: the query has only stop words or punctuation"



def plan(tree: Node) -> Plan:
    """Analyse ``tree`` and decide how to evaluate and rank it."""
    bare = is_bare(tree)
    at = analyse(tree)
    if at is None:
        raise QuerySyntaxError(_nothing_to_search(tree))
    parts = list(at.children) if isinstance(at, And) else [at]
    filters = [p for p in parts if is_filter(p)]
    words = [p for p in parts if not is_filter(p)]
    if not words:
        text = None
    elif len(words) == 1:
        text = words[0]
    else:
        text = And(tuple(words), at.implicit if isinstance(at, And) else False)
    match, first = text, None
    if bare and isinstance(text, And) and all(isinstance(c, Tok) for c in text.children):
        match, first = Or(text.children), text
    bare = first is not None
    positive = positive_toks(text) if text is not None else []
    return Plan(at, text, filters, bare, match, first, positive)
