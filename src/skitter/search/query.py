"""skitter's query language: a parser into a tree, and a printer back (pure: no I/O, no FTS).

Syntax (operators are UPPER CASE; "and", "or", "not", "near" in lower case are ordinary words)::

    telescope nebula         bare words: pages with all of them first, then pages with any
    "red giant"              a phrase: the words next to each other, in this order
    a AND b                  both (also: a b inside a larger query)
    a OR b                   either
    NOT a   -a               not a  (so "a NOT b" and "a -b" are a and not b)
    a XOR b                  exactly one of them: (a OR b) NOT (a AND b); a chain is odd parity
    a NEAR b   a NEAR/5 b    a and b at most k words apart (k = 10 by default), in either
                             order, in one field; NEAR joins words and phrases only, and a
                             chain (a NEAR b NEAR/10 c) needs one k: all of them in one window
    ( ... )                  grouping
    site:example.com         pages on that host or its subdomains (site:host:port: that port)
    title:word  title:"a b"  the word or phrase in one field: title, meta (description and
                             keywords), headings, url, anchor (text of links to the page), body
    after:2024-05-01         pages dated on or after that day (UTC): the Last-Modified date
    before:2024-06-01        when the crawl stored one, else the fetch date; before: is strict

Precedence, tightest first: NOT > NEAR > AND (explicit or by juxtaposition) > XOR > OR.
So ``a b OR c`` is ``(a AND b) OR c``, ``NOT a b`` is ``(NOT a) AND b`` and ``a OR b XOR c d``
is ``a OR (b XOR (c AND d))``.

"Bare words" (seed 004: "the results of AND search are displayed at the beginning followed by
the results of the OR search"): a query made only of words and phrases side by side, with no
operator at all (filters such as site: may be added), finds the pages with ANY of them and ranks
the pages with ALL of them first. As soon as the query has an operator, juxtaposition is a
plain AND.

The tree: :class:`Term` (word or phrase, optionally in one field), :class:`Site`,
:class:`DateFilter`, :class:`Not`, :class:`And` (``implicit`` when written by juxtaposition
only), :class:`Or`, :class:`Xor`, :class:`Near`. ``parse(unparse(tree)) == tree`` for any tree.
A malformed query raises :class:`~skitter.errors.QuerySyntaxError` with the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field as dc_field
from datetime import date

from ..errors import QuerySyntaxError

__all__ = ["Term", "Site", "DateFilter", "Not", "And", "Or", "Xor", "Near", "Node", "parse", "unparse",
           "DEFAULT_NEAR", "FIELDS", "OPERATORS", "QuerySyntaxError", "is_bare", "walk"]

DEFAULT_NEAR = 10
MAX_NEAR = 2 ** 31 - 1   # NEAR/k's k at most: FTS5's int (a larger k means the same, anywhere in the field)
OPERATORS = ("AND", "OR", "NOT", "XOR", "NEAR")
# field name in a query -> index column
FIELDS = {"title": "title", "meta": "meta", "headings": "headings", "heading": "headings",
          "url": "url", "anchor": "anchors", "anchors": "anchors", "body": "body"}
FILTERS = ("site", "after", "before")
MAX_QUERY = 2000
MAX_NESTING = 32   # groups and NOTs inside each other (the parser recurses: ~170 groups hit Python's limit)


@dataclass(frozen=True)
class Term:
    """A word or a "phrase", in every field or in one (``field`` = an index column name)."""
    text: str
    phrase: bool = False
    field: str | None = None
    pos: int = dc_field(default=0, compare=False)    # where the term starts in the query
    start: int = dc_field(default=0, compare=False)  # where its text (inside the quotes) starts
    end: int = dc_field(default=0, compare=False)    # where its text ends


@dataclass(frozen=True)
class Site:
    host: str
    pos: int = dc_field(default=0, compare=False)


@dataclass(frozen=True)
class DateFilter:
    op: str        # "after" (on or after the day) or "before" (strictly before the day)
    day: str       # YYYY-MM-DD
    pos: int = dc_field(default=0, compare=False)


@dataclass(frozen=True)
class Not:
    child: Node
    pos: int = dc_field(default=0, compare=False)


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]
    implicit: bool = False


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Xor:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Near:
    terms: tuple[Term, ...]
    k: int = DEFAULT_NEAR


Node = Term | Site | DateFilter | Not | And | Or | Xor | Near


# ---------------------------------------------------------------------------------- lexer

@dataclass
class _Tok:
    kind: str          # ( ) WORD PHRASE FIELD OP NOT EOF
    value: str
    pos: int
    end: int
    k: int = DEFAULT_NEAR          # NEAR/k
    name: str = ""                 # FIELD: the field name
    phrase: bool = False           # FIELD: the value was quoted
    vstart: int = 0                # WORD/PHRASE/FIELD: where the value starts


_SPECIAL = set('()"')
_FIELD_RE = re.compile(r"([A-Za-z]+):")
_NEAR_RE = re.compile(r"NEAR/(\d+)$")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}$")
_HOST_RE = re.compile(r"[A-Za-z0-9._\-\[\]:]+$")


def _lex(q: str) -> list[_Tok]:
    out: list[_Tok] = []
    i, n = 0, len(q)

    def phrase_at(j: int) -> tuple[str, int]:
        """The phrase starting with the quote at j: (text, index after the closing quote)."""
        close = q.find('"', j + 1)
        if close < 0:
            raise QuerySyntaxError('the phrase has no closing quote (")', q, j)
        return q[j + 1:close], close + 1

    while i < n:
        c = q[i]
        if c.isspace():
            i += 1
            continue
        if c in "()":
            out.append(_Tok(c, c, i, i + 1))
            i += 1
            continue
        if c == '"':
            text, j = phrase_at(i)
            out.append(_Tok("PHRASE", text, i, j, vstart=i + 1))
            i = j
            continue
        if c == "-" and i + 1 < n and not q[i + 1].isspace() and q[i + 1] not in ")-":
            out.append(_Tok("NOT", "-", i, i + 1))
            i += 1
            continue
        j = i
        while j < n and not q[j].isspace() and q[j] not in _SPECIAL:
            j += 1
        run = q[i:j]
        m = _FIELD_RE.match(run)
        if run in OPERATORS:
            out.append(_Tok("NOT" if run == "NOT" else "OP", run, i, j))
        elif run.startswith("NEAR/"):
            mk = _NEAR_RE.match(run)
            if not mk:
                raise QuerySyntaxError("NEAR/k wants a whole number of words, as in NEAR/5", q, i + 5)
            # FTS5's NEAR takes a 32-bit int: a k of 2^31 to 2^32 wrapped round and matched nothing
            out.append(_Tok("OP", "NEAR", i, j, k=min(int(mk.group(1)), MAX_NEAR)))
        elif m and (m.group(1).lower() in FIELDS or m.group(1).lower() in FILTERS):
            name = m.group(1).lower()
            vs = i + m.end()
            if vs == j and j < n and q[j] == '"':
                if name in FILTERS:
                    raise QuerySyntaxError(f"{name}: takes a plain value, not a phrase", q, j)
                text, j = phrase_at(j)
                out.append(_Tok("FIELD", text, i, j, name=name, phrase=True, vstart=vs + 1))
            elif vs == j:
                raise QuerySyntaxError(f"{name}: needs a value right after the colon", q, vs)
            else:
                out.append(_Tok("FIELD", q[vs:j], i, j, name=name, vstart=vs))
        elif m:
            known = ", ".join(sorted(set(FIELDS) | set(FILTERS)))
            raise QuerySyntaxError(f"unknown field {m.group(1)!r} (known: {known})", q, i)
        else:
            out.append(_Tok("WORD", run, i, j, vstart=i))
        i = j
    out.append(_Tok("EOF", "", n, n))
    return out


# ---------------------------------------------------------------------------------- parser

_STARTS = ("WORD", "PHRASE", "FIELD", "(", "NOT")


class _Parser:
    def __init__(self, q: str) -> None:
        self.q = q
        self.toks = _lex(q)
        self.i = 0
        self.depth = 0

    def enter(self, t: _Tok) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"groups and NOTs nested more than {MAX_NESTING} deep", t.pos)

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, pos: int) -> QuerySyntaxError:
        return QuerySyntaxError(msg, self.q, pos)

    def is_op(self, name: str) -> bool:
        t = self.peek()
        return t.kind == "OP" and t.value == name

    def need_operand(self, op: _Tok) -> None:
        t = self.peek()
        if t.kind not in _STARTS:
            raise self.error(f"{op.value} needs something on its right", t.pos if t.kind != "EOF" else op.pos)

    def parse(self) -> Node:
        if self.peek().kind == "EOF":
            raise self.error("empty query", 0)
        node = self.parse_or()
        t = self.peek()
        if t.kind == ")":
            raise self.error("')' without a matching '('", t.pos)
        if t.kind != "EOF":  # pragma: no cover - every other token starts or continues an expression
            raise self.error("unexpected text", t.pos)
        return node

    def parse_or(self) -> Node:
        items = [self.parse_xor()]
        while self.is_op("OR"):
            op = self.take()
            self.need_operand(op)
            items.append(self.parse_xor())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def parse_xor(self) -> Node:
        items = [self.parse_and()]
        while self.is_op("XOR"):
            op = self.take()
            self.need_operand(op)
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else Xor(tuple(items))

    def parse_and(self) -> Node:
        items = [self.parse_near()]
        implicit = True
        while True:
            if self.is_op("AND"):
                op = self.take()
                self.need_operand(op)
                implicit = False
            elif self.peek().kind not in _STARTS:
                break
            items.append(self.parse_near())
        return items[0] if len(items) == 1 else And(tuple(items), implicit)

    def parse_near(self) -> Node:
        first_pos = self.peek().pos
        first = self.parse_unary()
        if not self.is_op("NEAR"):
            return first
        terms = [self._near_operand(first, first_pos)]
        k = None
        while self.is_op("NEAR"):
            op = self.take()
            self.need_operand(op)
            if k is None:
                k = op.k
            elif op.k != k:
                raise self.error(f"one NEAR chain needs one distance (NEAR/{k} and NEAR/{op.k})", op.pos)
            pos = self.peek().pos
            terms.append(self._near_operand(self.parse_unary(), pos))
        return Near(tuple(terms), k if k is not None else DEFAULT_NEAR)

    def _near_operand(self, node: Node, pos: int) -> Term:
        if not isinstance(node, Term) or node.field is not None:
            raise self.error("NEAR joins words and \"phrases\" (no fields, filters or groups)", pos)
        return node

    def parse_unary(self) -> Node:
        t = self.peek()
        if t.kind == "NOT":
            self.take()
            nxt = self.peek()
            if nxt.kind not in _STARTS:
                raise self.error(f"{'NOT' if t.value == 'NOT' else '-'} needs something on its right",
                                 nxt.pos if nxt.kind != "EOF" else t.pos)
            self.enter(t)
            node = Not(self.parse_unary(), t.pos)
            self.depth -= 1
            return node
        return self.parse_primary()

    def parse_primary(self) -> Node:
        t = self.take()
        if t.kind == "WORD":
            return Term(t.value, False, None, t.pos, t.vstart, t.end)
        if t.kind == "PHRASE":
            if not t.value.strip():
                raise self.error("empty phrase", t.pos)
            return Term(t.value, True, None, t.pos, t.vstart, t.end - 1)
        if t.kind == "FIELD":
            return self._field(t)
        if t.kind == "(":
            if self.peek().kind == ")":
                raise self.error("empty parentheses", t.pos)
            self.enter(t)
            node = self.parse_or()
            self.depth -= 1
            if self.peek().kind != ")":
                raise self.error("'(' without a matching ')'", t.pos)
            self.take()
            return node
        if t.kind == ")":
            raise self.error("')' without a matching '('", t.pos)
        if t.kind == "OP":
            raise self.error(f"{t.value} needs something on its left", t.pos)
        raise self.error("the query ends too early", t.pos)  # pragma: no cover - EOF is checked before

    def _field(self, t: _Tok) -> Node:
        name, value = t.name, t.value
        if name == "site":
            host = value.strip().lower().rstrip(".")
            if not host.isascii():   # an international name, as the crawl stores it (UTS #46: xn--)
                from ..urls import URLError, canonicalize, host_key

                try:
                    host = host_key(canonicalize(f"http://{host}/"))
                except URLError:
                    pass   # the check below says it is no host name
            if host.startswith(("http://", "https://")) or not _HOST_RE.match(host or "-"):
                raise self.error("site: wants a host name, as in site:example.com", t.vstart)
            name = host if host.startswith("[") else host.partition(":")[0]
            if "" in name.split("."):
                raise self.error(f"site: {value} has an empty label (two dots in a row, or a dot first)", t.vstart)
            return Site(host, t.pos)
        if name in ("after", "before"):
            if not _DATE_RE.match(value):
                raise self.error(f"{name}: wants a date as YYYY-MM-DD", t.vstart)
            try:
                date.fromisoformat(value)
            except ValueError:
                raise self.error(f"{name}: {value} is not a valid date", t.vstart) from None
            return DateFilter(name, value, t.pos)
        if t.phrase:
            if not value.strip():
                raise self.error("empty phrase", t.pos)
            return Term(value, True, FIELDS[name], t.pos, t.vstart, t.end - 1)
        return Term(value, False, FIELDS[name], t.pos, t.vstart, t.end)


def parse(query: str) -> Node:
    """The tree of ``query``; raises QuerySyntaxError (with the column) if it is malformed."""
    if len(query) > MAX_QUERY:
        raise QuerySyntaxError(f"query longer than {MAX_QUERY} characters", query[:60], 60)
    return _Parser(query).parse()


# ---------------------------------------------------------------------------------- printer

_PREC = {Or: 1, Xor: 2, And: 3, Near: 4, Not: 5}
_FIELD_NAME = {"title": "title", "meta": "meta", "headings": "headings", "url": "url",
               "anchors": "anchor", "body": "body"}


def _prec(node: Node) -> int:
    return _PREC.get(type(node), 6)


def unparse(node: Node) -> str:
    """A query string that parses back to ``node``."""
    def wrap(child: Node, level: int) -> str:
        s = unparse(child)
        return f"({s})" if _prec(child) < level else s

    if isinstance(node, Term):
        text = f'"{node.text}"' if node.phrase else node.text
        return f"{_FIELD_NAME[node.field]}:{text}" if node.field else text
    if isinstance(node, Site):
        return f"site:{node.host}"
    if isinstance(node, DateFilter):
        return f"{node.op}:{node.day}"
    if isinstance(node, Not):
        return "NOT " + wrap(node.child, 5)
    if isinstance(node, Near):
        return f" NEAR/{node.k} ".join(unparse(t) for t in node.terms)
    if isinstance(node, And):
        return (" " if node.implicit else " AND ").join(wrap(c, 4) for c in node.children)
    if isinstance(node, Xor):
        return " XOR ".join(wrap(c, 3) for c in node.children)
    if isinstance(node, Or):
        return " OR ".join(wrap(c, 2) for c in node.children)
    raise TypeError(f"not a query node: {node!r}")


# ---------------------------------------------------------------------------------- helpers

def walk(node: Node):
    """Every node of the tree, parents before children."""
    yield node
    if isinstance(node, Not):
        yield from walk(node.child)
    elif isinstance(node, (And, Or, Xor)):
        for c in node.children:
            yield from walk(c)
    elif isinstance(node, Near):
        yield from node.terms


def is_filter(node: Node) -> bool:
    """True if the subtree holds only site:/after:/before: filters (no words)."""
    return all(isinstance(n, (Site, DateFilter, Not, And, Or, Xor)) for n in walk(node))


def is_bare(node: Node) -> bool:
    """Bare words: terms side by side and no operator (filters may stand beside them)."""
    if isinstance(node, Term):
        return True
    if isinstance(node, And) and node.implicit:
        return all(isinstance(c, Term) or isinstance(c, (Site, DateFilter)) for c in node.children)
    return False
