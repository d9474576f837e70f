"""From a parsed query tree to FTS5 MATCH expressions and SQL (pure: no I/O).

1. :func:`analyse` runs every term through the index's analyzer (fold, stop words, stem): a
   term becomes a :class:`Tok` (one token, or several = a phrase). Terms that analyse to nothing
   (stop words, punctuation) are dropped, and the tree is simplified around them: an operator
   left with one operand is that operand, one left with none disappears (``NOT the`` → nothing,
   ``a OR the`` → ``a``, ``a NEAR the`` → ``a``). A query left with nothing raises
   QuerySyntaxError.
2. :func:`fts` writes the subtrees FTS5 can evaluate on its own as a MATCH expression; user text
   never reaches the expression except as analysed tokens, each one double-quoted. FTS5 has no
   unary NOT and NEAR takes only phrases, so: ``a AND NOT b`` → ``(a) NOT (b)``, XOR →
   ``((a) OR (b)) NOT ((a) AND (b))``, NEAR/k → ``NEAR("a" "b c", k)``, ``title:x`` →
   ``{title} : "x"``.
3. :func:`sql` writes any subtree as a predicate on ``docs d``: FTS-able parts as
   ``d.fp IN (SELECT rowid FROM fts WHERE fts MATCH ?)``, the rest with SQL's own NOT/AND/OR,
   XOR as odd parity ``((x) + (y) + ...) % 2 = 1`` (every predicate is 0 or 1, never NULL),
   site: and after:/before: on docs' columns.
4. :func:`plan` splits the root into the words and the filters (when the root is an AND), and
   decides how to rank: the bare-words rule of seed 004 (``any`` = OR of the terms, ``all`` = AND
   as the first tier) and the positive terms whose BM25 scores the results.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import QuerySyntaxError
from ..index import analyze
from .query import And, DateFilter, Near, Node, Not, Or, Site, Term, Xor, is_bare, is_filter

__all__ = ["Tok", "ANear", "analyse", "fts", "sql", "plan", "Plan"]


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


def fts(node) -> str | None:
    """The FTS5 MATCH expression for ``node``, or None if FTS5 cannot express it alone."""
    if isinstance(node, Tok):
        p = _phrase(node)
        return f"{{{node.field}}} : {p}" if node.field else p
    if isinstance(node, ANear):
        return "NEAR(" + " ".join(_phrase(t) for t in node.toks) + f", {node.k})"
    if isinstance(node, And):
        pos, neg = [], []
        for c in node.children:
            if isinstance(c, Not):
                e = fts(c.child)
                if e is None:
                    return None
                neg.append(e)
            else:
                e = fts(c)
                if e is None:
                    return None
                pos.append(e)
        if not pos:
            return None
        expr = " AND ".join(f"({e})" for e in pos)
        if neg:
            expr = f"({expr}) NOT ({' OR '.join(f'({e})' for e in neg)})"
        return expr
    if isinstance(node, Or):
        parts = [fts(c) for c in node.children]
        if any(p is None for p in parts):
            return None
        return " OR ".join(f"({p})" for p in parts)
    if isinstance(node, Xor):
        parts = [fts(c) for c in node.children]
        if any(p is None for p in parts):
            return None
        acc = parts[0]
        for part in parts[1:]:
            acc = f"(({acc}) OR ({part})) NOT (({acc}) AND ({part}))"
        return acc
    return None  # Not (alone), Site, DateFilter


# ------------------------------------------------------------------------------------ SQL

def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def sql(node) -> tuple[str, list]:
    """A predicate on ``docs d`` (0 or 1, never NULL) and its parameters."""
    e = fts(node)
    if e is not None:
        return "d.fp IN (SELECT rowid FROM fts WHERE fts MATCH ?)", [e]
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
        return ("(d.host = ? OR d.host LIKE ? ESCAPE '\\')",
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


def plan(tree: Node) -> Plan:
    """Analyse ``tree`` and decide how to evaluate and rank it."""
    bare = is_bare(tree)
    at = analyse(tree)
    if at is None:
        raise QuerySyntaxError("nothing to search for: the query has only stop words or punctuation")
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
