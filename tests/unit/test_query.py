"""The query language: parser, precedence, errors with positions, printer round trip, and the
compilation to FTS5 expressions (pure: no database)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.errors import QuerySyntaxError, UsageError
from skitter.search import compile as qc
from skitter.search.query import (DEFAULT_NEAR, And, DateFilter, Near, Not, Or, Site, Term, Xor, is_bare,
                                  parse, unparse)


def w(text: str, field: str | None = None) -> Term:
    return Term(text, False, field)


def ph(text: str, field: str | None = None) -> Term:
    return Term(text, True, field)


# ------------------------------------------------------------------------------ operators

def test_words_and_phrases():
    assert parse("telescope") == w("telescope")
    assert parse('"red giant"') == ph("red giant")
    assert parse("telescope nebula") == And((w("telescope"), w("nebula")), implicit=True)
    assert parse('  "red giant"   star ') == And((ph("red giant"), w("star")), implicit=True)


def test_and_or_not_xor():
    assert parse("a AND b") == And((w("a"), w("b")))
    assert parse("a AND b AND c") == And((w("a"), w("b"), w("c")))
    assert parse("a OR b OR c") == Or((w("a"), w("b"), w("c")))
    assert parse("a XOR b") == Xor((w("a"), w("b")))
    assert parse("NOT a") == Not(w("a"))
    assert parse("-a") == Not(w("a"))
    assert parse("NOT NOT a") == Not(Not(w("a")))
    assert parse("a NOT b") == And((w("a"), Not(w("b"))), implicit=True)
    assert parse("a -b") == And((w("a"), Not(w("b"))), implicit=True)
    assert parse('-"a b"') == Not(ph("a b"))


def test_lower_case_operators_are_words():
    assert parse("a and b") == And((w("a"), w("and"), w("b")), implicit=True)
    assert parse("near or not") == And((w("near"), w("or"), w("not")), implicit=True)


def test_near():
    assert parse("a NEAR b") == Near((w("a"), w("b")), DEFAULT_NEAR)
    assert DEFAULT_NEAR == 10
    assert parse("a NEAR/3 b") == Near((w("a"), w("b")), 3)
    assert parse("a NEAR/2147483648 b") == parse("a NEAR/99999999999999999999 b") == Near((w("a"), w("b")), 2 ** 31 - 1)
    assert parse('a NEAR/0 "b c" NEAR/0 d') == Near((w("a"), ph("b c"), w("d")), 0)


def test_fields_and_filters():
    assert parse("title:pulsar") == w("pulsar", "title")
    assert parse('title:"red giant"') == ph("red giant", "title")
    assert parse("Title:X") == w("X", "title")
    assert parse("anchor:home") == w("home", "anchors")
    assert parse("heading:x headings:y") == And((w("x", "headings"), w("y", "headings")), implicit=True)
    assert parse("site:Example.COM") == Site("example.com")
    assert parse("site:127.0.0.2:8080") == Site("127.0.0.2:8080")
    assert parse("site:Bücher.example") == Site("xn--bcher-kva.example")   # as the crawl stores it
    assert parse("site:straße.de") == Site("xn--strae-oqa.de")               # (UTS #46, not IDNA 2003's strasse)
    assert parse("site:x.org.") == Site("x.org") and parse("site:[::1]:80") == Site("[::1]:80")
    assert parse("after:2024-01-31") == DateFilter("after", "2024-01-31")
    assert parse("before:2024-02-29") == DateFilter("before", "2024-02-29")
    assert parse("x site:a.org -site:b.a.org") == And((w("x"), Site("a.org"), Not(Site("b.a.org"))), implicit=True)


def test_parentheses():
    assert parse("(a OR b) c") == And((Or((w("a"), w("b"))), w("c")), implicit=True)
    assert parse("((a))") == w("a")
    assert parse("NOT (a OR b)") == Not(Or((w("a"), w("b"))))
    assert parse("a(b)") == And((w("a"), w("b")), implicit=True)


# ------------------------------------------------------------------------------ precedence

@pytest.mark.parametrize("query, expected", [
    # NOT > NEAR > AND > XOR > OR
    ("a b OR c", Or((And((w("a"), w("b")), implicit=True), w("c")))),
    ("a OR b c", Or((w("a"), And((w("b"), w("c")), implicit=True)))),
    ("a AND b OR c AND d", Or((And((w("a"), w("b"))), And((w("c"), w("d")))))),
    ("a XOR b OR c", Or((Xor((w("a"), w("b"))), w("c")))),
    ("a OR b XOR c", Or((w("a"), Xor((w("b"), w("c")))))),
    ("a XOR b AND c", Xor((w("a"), And((w("b"), w("c")))))),
    ("a AND b XOR c", Xor((And((w("a"), w("b"))), w("c")))),
    ("a b XOR c d", Xor((And((w("a"), w("b")), implicit=True), And((w("c"), w("d")), implicit=True)))),
    ("a NEAR b c", And((Near((w("a"), w("b"))), w("c")), implicit=True)),
    ("a NEAR b AND c NEAR d", And((Near((w("a"), w("b"))), Near((w("c"), w("d")))))),
    ("a NEAR b OR c", Or((Near((w("a"), w("b"))), w("c")))),
    ("NOT a b", And((Not(w("a")), w("b")), implicit=True)),
    ("NOT a OR b", Or((Not(w("a")), w("b")))),
    ("a OR b XOR c d", Or((w("a"), Xor((w("b"), And((w("c"), w("d")), implicit=True)))))),
    ("a AND b c", And((w("a"), w("b"), w("c")))),   # one chain: explicit as soon as one AND is
])
def test_precedence(query, expected):
    assert parse(query) == expected


def test_bare_words():
    assert is_bare(parse("a b c"))
    assert is_bare(parse('a "b c" site:x.org'))
    assert is_bare(parse("a"))
    assert not is_bare(parse("a AND b"))
    assert not is_bare(parse("a -b"))
    assert not is_bare(parse("a OR b"))
    assert not is_bare(parse("(a b)  c"))


# ------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("query, column, words", [
    ("", 1, "empty query"),
    ("   ", 1, "empty query"),
    ("(a OR b", 1, "'(' without a matching ')'"),
    ("a (b (c) d", 3, "'(' without a matching ')'"),
    ("a OR b)", 7, "')' without a matching '('"),
    (")", 1, "')' without a matching '('"),
    ("a AND", 3, "AND needs something on its right"),
    ("a OR OR b", 6, "OR needs something on its right"),
    ("OR b", 1, "OR needs something on its left"),
    ("XOR", 1, "XOR needs something on its left"),
    ("a NEAR", 3, "NEAR needs something on its right"),
    ("NOT", 1, "NOT needs something on its right"),
    ("a NOT )", 7, "NOT needs something on its right"),
    ('a "red giant', 3, "closing quote"),
    ('""', 1, "empty phrase"),
    ('title:"  "', 1, "empty phrase"),
    ("()", 1, "empty parentheses"),
    ("a NEAR/x b", 8, "NEAR/k wants a whole number"),
    ("a NEAR/2 b NEAR/3 c", 12, "one NEAR chain needs one distance"),
    ("(a OR b) NEAR c", 1, "NEAR joins words"),
    ("a NEAR title:b", 8, "NEAR joins words"),
    ("NOT a NEAR b", 1, "NEAR joins words"),
    ("a NEAR site:x.org", 8, "NEAR joins words"),
    ("foo:bar", 1, "unknown field 'foo'"),
    ("x http://example.com", 3, "unknown field 'http'"),
    ("title:", 7, "needs a value"),
    ("title: x", 7, "needs a value"),
    ("site:", 6, "needs a value"),
    ("site:http://x.org", 6, "site: wants a host name"),
    ("site:a..b", 6, "empty label"),
    ("x site:.alpha.test", 8, "empty label"),
    ("site:a..b:8080", 6, "empty label"),
    ('site:"x.org"', 6, "plain value"),
    ("after:yesterday", 7, "YYYY-MM-DD"),
    ("before:2024-02-30", 8, "not a valid date"),
    ("after:2024-1-01", 7, "YYYY-MM-DD"),
])
def test_errors_say_where(query, column, words):
    with pytest.raises(QuerySyntaxError) as info:
        parse(query)
    err = info.value
    assert isinstance(err, UsageError)
    assert words in err.message
    assert err.column == column, str(err)
    text = str(err)
    if query.strip():
        lines = text.split("\n")
        assert f"(column {column})" in lines[0]
        assert lines[1] == "  " + query
        assert lines[2] == "  " + " " * (column - 1) + "^"


def test_overlong_query():
    with pytest.raises(QuerySyntaxError):
        parse("a " * 2000)


def test_deep_nesting_is_a_query_error_not_a_recursion_error():
    """~170 nested groups used to exhaust Python's recursion limit (an internal error)."""
    parse("(" * 32 + "a" + ")" * 32)
    for query in ("(" * 180 + "a" + ")" * 180, "NOT " * 40 + "a", "(" * 20 + "NOT (" * 13 + "a" + ")" * 33):
        with pytest.raises(QuerySyntaxError, match="nested more than"):
            parse(query)


# ------------------------------------------------------------------------------ round trip

WORDS = st.sampled_from(["telescope", "nebula", "keel", "hull", "running", "orbit", "x", "42",
                         "café", "e-mail", "and", "near", "the"])
FIELDS = st.sampled_from([None, None, None, "title", "meta", "headings", "url", "anchors", "body"])


@st.composite
def terms(draw, field: bool = True):
    if draw(st.booleans()):
        text = " ".join(draw(st.lists(WORDS, min_size=1, max_size=3)))
        return Term(text, True, draw(FIELDS) if field else None)
    return Term(draw(WORDS), False, draw(FIELDS) if field else None)


leaves = st.one_of(
    terms(),
    terms(),
    st.builds(Site, st.sampled_from(["example.com", "a.b.org", "127.0.0.2:8080"])),
    st.builds(DateFilter, st.sampled_from(["after", "before"]),
              st.dates().map(lambda d: d.isoformat()).filter(lambda s: len(s) == 10)),
    st.builds(lambda ts, k: Near(tuple(ts), k), st.lists(terms(field=False), min_size=2, max_size=3),
              st.integers(0, 20)),
)


def trees():
    return st.recursive(leaves, lambda kids: st.one_of(
        st.builds(Not, kids),
        st.builds(lambda cs, imp: And(tuple(cs), imp), st.lists(kids, min_size=2, max_size=3), st.booleans()),
        st.builds(lambda cs: Or(tuple(cs)), st.lists(kids, min_size=2, max_size=3)),
        st.builds(lambda cs: Xor(tuple(cs)), st.lists(kids, min_size=2, max_size=3)),
    ), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(trees())
def test_print_parse_round_trip(tree):
    text = unparse(tree)
    assert parse(text) == tree, text
    assert unparse(parse(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='ab ()"-:ANDORTXE/1', max_size=25))
def test_any_text_parses_or_raises_a_query_error(text):
    try:
        tree = parse(text)
    except QuerySyntaxError as err:
        assert 1 <= err.column <= len(text) + 1
    else:
        assert parse(unparse(tree)) == tree


# ------------------------------------------------------------------------------ compilation

def leaf_of(query: str) -> tuple[str | None, str | None]:
    """A term's MATCH expressions on fts (the page's own text) and on fta (its anchor text)."""
    return qc.leaf(qc.analyse(parse(query)))


def sets_of(query: str) -> tuple[str, list] | None:
    return qc.rowids(qc.analyse(parse(query)))


def params_of(query: str) -> list | None:
    r = sets_of(query)
    return None if r is None else r[1]


def test_compile_terms():
    assert leaf_of("Running") == ('"run"', '"run"')
    assert leaf_of('"red giants"') == ('"red giant"', '"red giant"')
    assert leaf_of("e-mail") == ('"e mail"', '"e mail"')
    assert leaf_of("title:pulsars") == ('{title} : "pulsar"', None)      # the page's own columns only
    assert leaf_of("anchor:pulsars") == (None, '"pulsar"')               # the anchor table only
    assert leaf_of("a1 NEAR/3 \"b2 c3\"") == ('NEAR("a1" "b2 c3", 3)',) * 2


def test_compile_to_rowid_sets():
    """Each term in both tables (UNION); AND, OR and AND NOT as INTERSECT, UNION and EXCEPT of
    the pages the terms find, so a term in the anchors and another in the body make an AND."""
    both = "SELECT rowid AS id FROM fts WHERE fts MATCH ? UNION SELECT rowid AS id FROM fta WHERE fta MATCH ?"
    assert sets_of("a1") == (both, ['"a1"', '"a1"'])
    sql, params = sets_of("a1 AND b2")
    assert " INTERSECT " in sql and params == ['"a1"', '"a1"', '"b2"', '"b2"']
    sql, params = sets_of("a1 b2 -c3")
    assert " INTERSECT " in sql and " EXCEPT " in sql and params == ['"a1"'] * 2 + ['"b2"'] * 2 + ['"c3"'] * 2
    sql, params = sets_of("a1 OR b2")
    assert " INTERSECT " not in sql and params == ['"a1"', '"a1"', '"b2"', '"b2"']
    assert params_of("title:x AND a1") == ['{title} : "x"', '"a1"', '"a1"']
    assert params_of("anchor:x AND a1") == ['"x"', '"a1"', '"a1"']
    assert sets_of("NOT a1") is None                   # unary NOT: SQL
    assert sets_of("a1 OR NOT b2") is None
    assert sets_of("a1 site:x.org") is None            # a filter: SQL


def test_xor_sets():
    sql, params = sets_of("a1 XOR b2")                 # (a UNION b) EXCEPT (a INTERSECT b)
    assert " EXCEPT " in sql and " INTERSECT " in sql and params == ['"a1"', '"a1"', '"b2"', '"b2"'] * 2
    assert sets_of("a1 XOR b2 XOR c3 XOR d4 XOR e5") is None   # longer: odd parity in SQL


def test_user_text_never_reaches_fts_syntax():
    # quotes, FTS5 keywords and column syntax in the query become plain tokens, only in parameters
    sql, params = sets_of('NEARx "a1 OR b2" {title}:x ^c*')
    assert params == ['"nearx"'] * 2 + ['"a1 b2"'] * 2 + ['"titl x"'] * 2 + ['"c"'] * 2
    assert "near" not in sql.lower().replace("fts where fts match", "")


def test_stop_words_and_punctuation_drop_out():
    assert params_of("the telescope") == ['"telescop"'] * 2
    assert params_of("telescope OR the") == ['"telescop"'] * 2
    assert params_of("telescope NEAR the") == ['"telescop"'] * 2
    assert params_of('"out of the blue"') == ['"blue"'] * 2
    assert params_of("telescope -the") == ['"telescop"'] * 2
    with pytest.raises(QuerySyntaxError, match="nothing to search for"):
        qc.plan(parse("the AND of"))
    with pytest.raises(QuerySyntaxError):
        qc.plan(parse("& | !"))


def test_plan_bare_words_and_filters():
    p = qc.plan(parse("telescope nebula site:x.org"))
    assert p.bare and len(p.filters) == 1
    match, first = qc.rowids(p.match), qc.rowids(p.first_tier)
    assert " INTERSECT " not in match[0] and " INTERSECT " in first[0]   # any of the words; all of them
    assert match[1] == first[1] == ['"telescop"', '"telescop"', '"nebula"', '"nebula"']
    p = qc.plan(parse("telescope AND nebula"))
    assert not p.bare and " INTERSECT " in qc.rowids(p.match)[0]
    p = qc.plan(parse("site:x.org after:2024-01-01"))
    assert p.match is None and len(p.filters) == 2
    p = qc.plan(parse("a1 -b2 XOR c3"))
    assert [t.tokens for t in p.positive] == [("a1",), ("c3",)]   # (a1 AND NOT b2) XOR c3
    p = qc.plan(parse("a1 -b2"))
    assert [t.tokens for t in p.positive] == [("a1",)]


def test_sql_predicates():
    c, params = qc.sql(qc.analyse(parse("NOT a1 XOR site:x.org")))
    assert "% 2 = 1" in c and "NOT (" in c
    assert params == ['"a1"', '"a1"', "x.org", "%.x.org"]
    c, params = qc.sql(qc.analyse(parse("site:my_host.org")))
    assert params[1] == "%.my\\_host.org"
    c, params = qc.sql(qc.analyse(parse("after:2024-01-01 before:2024-02-01")))
    assert params == ["2024-01-01", "2024-02-01"]

# The parser and compiler import no I/O: tests/unit/test_docs.py::test_pure_modules_do_no_io.


@pytest.mark.parametrize(("query", "words"), [
    ("a" * 45, "longer than 40 characters are not indexed (aaaaaaaaaaaaaaaaaaaa…, 45 characters)"),
    ('the "of and" NOT ' + "b" * 41, "longer than 40 characters"),
    ("the AND of", "only stop words or punctuation"),
    ("-- ...", "only stop words or punctuation"),
])
def test_nothing_to_search_for_says_why(query, words):
    """A query whose only word is longer than the index keeps says so (a hold-out test was told
    its 45-letter word was a stop word or punctuation)."""
    with pytest.raises(QuerySyntaxError) as info:
        qc.plan(parse(query))
    assert "nothing to search for" in info.value.message and words in info.value.message
