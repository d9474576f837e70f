"""Snippets and highlights, computed on the page's stored text (not the index's stemmed text).

A word is highlighted when its analysed form (folded, stemmed) is one of the query's tokens, so
"Telescopes" lights up for the query ``telescope``. The snippet is the window of ``WIDTH`` words
with the most distinct query tokens (then the most hits), starting a few words before its first
hit; "…" marks a cut. Two renderings of the same snippet:

- ``plain``: text with ``**`` around each highlighted word (``HL_START``/``HL_END``);
- ``html``: HTML-escaped text with ``<mark>`` around each highlighted word (safe to insert).
"""

from __future__ import annotations

import bisect
import html
import re
from functools import lru_cache

from ..index import analyze

__all__ = ["HL_START", "HL_END", "WIDTH", "highlight", "snippet"]

HL_START = "**"
HL_END = "**"
WIDTH = 32          # words in a snippet
LEAD = 4            # words shown before the first hit of the window
MAX_TEXT = 100_000  # characters of a page looked at for the best window (from the first hit, if later)
_AVG_WORD = 7       # characters per word and space, to size a window before cutting it in words

_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")


def _is_hit(word: str, stems: frozenset[str] | set[str]) -> bool:
    lw = word.lower()
    if lw.isascii():
        return lw not in analyze.STOP_WORDS and analyze.stem(lw) in stems
    return any(t in stems for t in analyze.tokens(word))


def _marks(text: str, stems: frozenset[str] | set[str]) -> list[tuple[int, int, bool]]:
    """(start, end, is a hit) of every word of ``text`` (memoised per distinct word)."""
    memo: dict[str, bool] = {}
    out = []
    for m in _WORD.finditer(text):
        w = m.group()
        hit = memo.get(w)
        if hit is None:
            hit = memo[w] = _is_hit(w, stems)
        out.append((m.start(), m.end(), hit))
    return out


def _render(text: str, spans: list[tuple[int, int, bool]], lo: int, hi: int) -> tuple[str, str]:
    plain: list[str] = []
    markup: list[str] = []
    pos = lo
    for s, e, hit in spans:
        if not hit or s < lo or e > hi:
            continue
        gap = text[pos:s]
        plain.append(gap)
        markup.append(html.escape(gap, quote=False))
        w = text[s:e]
        plain.append(HL_START + w + HL_END)
        markup.append("<mark>" + html.escape(w, quote=False) + "</mark>")
        pos = e
    gap = text[pos:hi]
    plain.append(gap)
    markup.append(html.escape(gap, quote=False))
    return _SPACE.sub(" ", "".join(plain)).strip(), _SPACE.sub(" ", "".join(markup)).strip()


def highlight(text: str | None, stems: set[str] | frozenset[str]) -> tuple[str, str]:
    """The whole of ``text`` (a title, say) with the query's words marked: (plain, html)."""
    if not text:
        return "", ""
    return _render(text, _marks(text, stems), 0, len(text))


@lru_cache(maxsize=1)
def _variants() -> dict[str, str]:
    """Each ASCII letter and the Latin letters that fold to it (analyze.fold: "è" → "e"), as the
    inside of a character class: a stem's prefix matches the words the analyzer folds to it
    ("crème" for the stem "creme"; only "café", whose prefix "caf" has no accent, was marked)."""
    out: dict[str, list[str]] = {}
    # Latin, Greek and Cyrillic letters with diacritics ("ά" → "α", "ё" → "е")
    for code in [*range(0xC0, 0x250), *range(0x370, 0x500), *range(0x1E00, 0x2000)]:
        c = chr(code)
        f = analyze.fold(c)
        if len(f) == 1 and f.isalpha() and f != c.lower():
            out.setdefault(f, [f]).append(c)
    return {k: "".join(re.escape(x) for x in v) for k, v in out.items()}


def _pattern(prefix: str) -> str:
    variants = _variants()
    return "".join(f"[{variants[c]}]" if c in variants else re.escape(c) for c in prefix)


@lru_cache(maxsize=256)
def _candidates(stems: frozenset[str]) -> re.Pattern | None:
    """A regex for the words that may analyse to one of ``stems``: those starting with the stem
    less its last letter (Porter-2 stems are prefixes of the word but for a final y → i, and
    for "sky" of "skies"), any of its letters written with a diacritic."""
    starts = {st[:-1] if len(st) > 2 else st for st in stems if st}
    # Porter-2's words whose stem is not their start: dying, lying, tying (skies, sky: "sk" above)
    starts |= {st[0] + "y" for st in stems if st in ("die", "lie", "tie")}
    if not starts:
        return None
    alt = "|".join(_pattern(p) for p in sorted(starts, key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alt})[^\W_]*", re.IGNORECASE)


def snippet(text: str | None, stems: set[str] | frozenset[str], width: int = WIDTH,
            main_start: int | None = 0) -> tuple[str, str, int]:
    """The best window of ``text`` for ``stems``: (plain, html, number of hits in it).

    ``main_start``: where the page's main text starts (``pages.main_start``: after the menus and
    side bars at its top). The windows from the main text's hits come first (every page of a
    site names the query's words in its menu when it names them at all), and a query with no
    words (filters only) shows the main text's start, not the menu.

    Only the words that can be hits are looked at one by one (a regex of the stems' prefixes
    finds them), so a snippet costs about one regex scan of the page, not one stem per word."""
    if not text:
        return "", "", 0
    stems = frozenset(stems)
    rx = _candidates(stems)
    memo: dict[str, bool] = {}

    def is_hit(w: str) -> bool:
        hit = memo.get(w)
        if hit is None:
            hit = memo[w] = _is_hit(w, stems)
        return hit

    whole, text = text, text[:MAX_TEXT]
    hits: list[tuple[int, int]] = []
    cut = False   # the text looked at starts inside the page
    if rx is not None:
        hits = [(m.start(), m.end()) for m in rx.finditer(text) if is_hit(m.group())]
        if not hits and len(whole) > MAX_TEXT:
            # the query's words are further in (a word may straddle MAX_TEXT): the MAX_TEXT characters
            # from a little before the first, from the start of a word
            first = next((m.start() for m in rx.finditer(whole, MAX_TEXT - analyze.MAX_TOKEN)
                          if is_hit(m.group())), None)
            if first is not None:
                lo = first - LEAD * 16
                while lo > 0 and (whole[lo - 1].isalnum() or whole[lo - 1] == "_"):
                    lo -= 1
                text, cut = whole[lo:lo + MAX_TEXT], True
                hits = [(m.start(), m.end()) for m in rx.finditer(text) if is_hit(m.group())]
    span = width * _AVG_WORD
    main = main_start if main_start and not cut and main_start < len(text) else 0
    start_char = main
    if hits:
        pool = [h for h in hits if h[0] >= main] or hits
        starts = [h[0] for h in pool]
        names = [text[a:b].lower() for a, b in pool]
        best = (-1, -1)
        for i, (a, _) in enumerate(pool):
            j = bisect.bisect_left(starts, a + span, i)
            key = (len(set(names[i:j])), j - i)
            if key > best:
                best, start_char = key, a
        # a few words of lead-in before the first hit of the window
        # (not from the menu before the main text when the window is in it)
        floor = main if start_char >= main else 0
        lead = [m.start() for m in _WORD.finditer(text, max(floor, start_char - LEAD * 16), start_char)]
        start_char = lead[-LEAD] if len(lead) >= LEAD else (lead[0] if lead else start_char)
        if start_char <= LEAD * 16 and not _WORD.search(text, 0, start_char):
            start_char = 0
    words = []
    for m in _WORD.finditer(text, start_char):
        words.append(m)
        if len(words) == width:
            break
    if not words:
        return "", "", 0
    cut_front = cut or bool(_WORD.search(text, 0, words[0].start()))
    lo = words[0].start() if cut_front else 0
    more = len(words) == width and _WORD.search(text, words[-1].end()) is not None
    hi = words[-1].end() if more else len(text)
    inside = [(a, b, True) for a, b in hits if lo <= a and b <= hi]
    plain, markup = _render(text, inside, lo, hi)
    if cut_front:
        plain, markup = "… " + plain, "… " + markup
    if more:
        plain, markup = plain + " …", markup + " …"
    return plain, markup, len(inside)
