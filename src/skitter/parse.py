"""HTML → :class:`~skitter.models.Page`: pure, synchronous, on the crawl's hot path.

One lexbor parse per document and one iterative walk over its tree (compiled, ``_speedups.pyx``,
where it was built; ``_walk_py`` is the reference) collect everything:
the body text (whitespace collapsed, words never glued across block elements), the
headings, the ``<head>`` metadata and, for every ``<a href>`` / ``<area href>``, the link
attributes of seed 004 (visibility, position, distance) plus its anchor text and the
words around it (for SharkSearch). ``parse_with_main_text`` also leaves the text of
boilerplate elements (:mod:`skitter.boilerplate`) out of a second string, the main text the
near-duplicate test fingerprints, in the same walk.

Nothing here raises on bad input: undecodable bytes become U+FFFD, broken markup is
repaired by lexbor, and anything unexpected ends in an empty :class:`Page`.
"""

from __future__ import annotations

import codecs
import logging
import re
from functools import lru_cache
from typing import Any, TypedDict

from selectolax.lexbor import LexborHTMLParser

from . import urls
from .compiled import speedups
from . import boilerplate
from .models import Link, Page, new_link

__all__ = ["decode_body", "parse_robots_directives", "parse_html", "parse_with_main_text"]

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- decoding

#: WHATWG encoding labels (https://encoding.spec.whatwg.org/#names-and-labels) whose
#: meaning differs from Python's codec of the same name, or that Python does not know.
#: Labels not listed here are looked up with :func:`codecs.lookup`.
_WHATWG_LABELS: dict[str, str] = {}


def _labels(codec: str, *labels: str) -> None:
    for label in labels:
        _WHATWG_LABELS[label] = codec


_labels("utf-8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8",
        "x-unicode20utf8")
_labels("cp1252", "ansi_x3.4-1968", "ascii", "us-ascii", "cp1252", "cp819", "csisolatin1",
        "ibm819", "iso-8859-1", "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1",
        "iso_8859-1:1987", "l1", "latin1", "latin-1", "windows-1252", "x-cp1252")
_labels("cp1254", "cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9",
        "iso88599", "iso_8859-9", "iso_8859-9:1989", "l5", "latin5", "windows-1254", "x-cp1254")
_labels("cp874", "dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620", "windows-874")
_labels("cp932", "csshiftjis", "ms932", "ms_kanji", "shift-jis", "shift_jis", "sjis",
        "windows-31j", "x-sjis", "cp932")
_labels("euc_jp", "cseucpkdfmtjapanese", "euc-jp", "x-euc-jp")
_labels("iso2022_jp", "csiso2022jp", "iso-2022-jp")
_labels("gb18030", "chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80",
        "gbk", "iso-ir-58", "x-gbk", "gb18030")
_labels("big5hkscs", "big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5")
_labels("cp949", "cseuckr", "csksc56011987", "euc-kr", "iso-ir-149", "korean", "ks_c_5601-1987",
        "ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949")
_labels("koi8_r", "cskoi8r", "koi", "koi8", "koi8-r", "koi8_r")
_labels("koi8_u", "koi8-ru", "koi8-u")
_labels("mac_roman", "csmacintosh", "mac", "macintosh", "x-mac-roman")
_labels("mac_cyrillic", "x-mac-cyrillic", "x-mac-ukrainian")
_labels("cp866", "866", "cp866", "csibm866", "ibm866")
_labels("iso8859_8", "iso-8859-8-i", "csiso88598i", "logical", "iso-8859-8-e", "csiso88598e")
_labels("iso8859_6", "iso-8859-6-e", "iso-8859-6-i", "csiso88596e", "csiso88596i")
_labels("iso8859_10", "iso-8859-10", "iso8859-10", "iso885910", "csisolatin6", "iso-ir-157",
        "l6")
_labels("iso8859_13", "iso-8859-13", "iso8859-13", "iso885913")
_labels("iso8859_14", "iso-8859-14", "iso8859-14", "iso885914")
_labels("iso8859_15", "iso-8859-15", "iso8859-15", "iso885915", "iso_8859-15", "csisolatin9",
        "l9")
_labels("iso8859_16", "iso-8859-16")
_labels("utf-16-le", "utf-16", "utf-16le", "csunicode", "iso-10646-ucs-2", "ucs-2", "unicode",
        "unicodefeff")
_labels("utf-16-be", "utf-16be", "unicodefffe")
for _n in range(2, 9):
    _labels(f"iso8859_{_n}", f"iso-8859-{_n}", f"iso8859-{_n}", f"iso8859{_n}", f"iso_8859-{_n}")
for _n in (1250, 1251, 1253, 1255, 1256, 1257, 1258):
    _labels(f"cp{_n}", f"windows-{_n}", f"cp{_n}", f"x-cp{_n}")
del _n

#: Labels that must never be honoured (WHATWG maps them to "replacement" or forbids them),
#: plus Python codecs that are not web text encodings.
_REFUSED = frozenset({
    "utf-7", "utf7", "csiso2022kr", "hz-gb-2312", "iso-2022-cn", "iso-2022-cn-ext",
    "iso-2022-kr", "replacement", "x-user-defined", "undefined", "mbcs", "oem",
    "utf-32", "utf-32le", "utf-32be", "unicode_escape", "raw_unicode_escape", "idna",
    "punycode", "palmos",
})

#: Single-byte Latin code pages a detector may pick for Western text with a handful of
#: accented letters; when the bytes are valid windows-1252 we use that (the web's de-facto
#: default for undeclared non-UTF-8 Latin-script pages).
_LATINISH = frozenset({
    "cp1250", "cp1252", "cp1254", "cp1257", "cp1258", "cp775", "cp850", "cp852", "cp857",
    "cp858", "cp437", "cp860", "cp861", "cp863", "cp865", "hp_roman8", "mac_roman",
    "mac_latin2", "mac_iceland", "mac_turkish", "latin_1", "iso8859_2", "iso8859_3",
    "iso8859_4", "iso8859_9", "iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15",
    "iso8859_16", "ascii",
})

_CT_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^\s"';,]+)""", re.I)
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([^\s"'/>;]+)""", re.I)

_SNIFF_BYTES = 4096
_DETECT_BYTES = 65536


@lru_cache(maxsize=256)
def _codec(label: str | None) -> str | None:
    """The Python codec name for an encoding label, or None when it is not usable."""
    if not label:
        return None
    label = label.strip().strip("\"'").strip().lower()
    if not label or label in _REFUSED or len(label) > 40:
        return None
    name = _WHATWG_LABELS.get(label, label)
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError, TypeError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED:
        return None
    return info.name


def _decode(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec, "replace")
    except Exception:  # a codec that cannot even replace: treat as unknown
        return None


def _detect(body: bytes) -> str | None:
    """The encoding of an undeclared, non-UTF-8 body, by uchardet (Mozilla's universal detector,
    as faust-cchardet): 0.4 MB of memory against charset_normalizer's 4.9 MB (a worker's whole
    peak on the benchmark came from the first such page), 3x faster, and right on the same
    Shift_JIS, KOI8-R, GBK and windows-1252 pages (docs/benchmarks.md)."""
    try:
        import cchardet

        name = cchardet.detect(body[:_DETECT_BYTES]).get("encoding")
    except Exception:
        return None
    if not name:
        return None
    codec = _codec(name)
    if codec in _LATINISH and codec != "cp1252":
        try:
            body.decode("cp1252")
        except UnicodeDecodeError:
            pass
        else:
            return "cp1252"
    return codec


def decode_body(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode an HTML body: ``(text, python_codec_name)``. Never raises.

    Order: a byte-order mark (it wins over the header, as in the WHATWG sniffing
    algorithm and every browser) > the charset of the Content-Type header (when Python
    knows it) > ``<meta charset>`` / ``<meta http-equiv=content-type>`` in the first 4 KiB
    > valid UTF-8 > uchardet (faust-cchardet) on the first 64 KiB > UTF-8 with replacement.
    WHATWG label aliases apply (latin1/ascii → cp1252, shift_jis → cp932, ...).
    """
    if not body:
        return "", "utf-8"
    try:
        if not isinstance(body, bytes):
            body = bytes(body)
        # 1. byte-order mark
        if body[:3] == b"\xef\xbb\xbf":
            return body[3:].decode("utf-8", "replace"), "utf-8"
        if body[:2] == b"\xff\xfe":
            return body[2:].decode("utf-16-le", "replace"), "utf-16-le"
        if body[:2] == b"\xfe\xff":
            return body[2:].decode("utf-16-be", "replace"), "utf-16-be"
        # 2. transport layer
        if content_type and "charset" in content_type.lower():
            m = _CT_CHARSET.search(content_type)
            codec = _codec(m.group(1)) if m else None
            if codec is not None:
                text = _decode(body, codec)
                if text is not None:
                    return text, codec
        # 3. <meta> prescan
        meta = _META_CHARSET.search(body, 0, _SNIFF_BYTES)
        if meta is not None:
            codec = _codec(meta.group(1).decode("ascii", "replace"))
            if codec in ("utf-16-le", "utf-16-be"):
                codec = "utf-8"  # WHATWG: a meta that could be read as ASCII is not UTF-16
            if codec is not None:
                text = _decode(body, codec)
                if text is not None:
                    return text, codec
        # 4. valid UTF-8 (includes plain ASCII): cheap and nearly never a false positive;
        #    also UTF-8 cut short by the body cap, or with a few bad bytes among many
        #    good multi-byte sequences (other encodings almost never form valid ones)
        try:
            return body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError as e:
            if e.end == len(body) and e.end - e.start < 4:
                return body.decode("utf-8", "replace"), "utf-8"
            text = body.decode("utf-8", "replace")
            if len(body) - len(text) >= 4 * text.count("\ufffd"):
                return text, "utf-8"
        # 5. statistical detection
        codec = _detect(body)
        if codec is not None:
            text = _decode(body, codec)
            if text is not None:
                return text, codec
    except Exception:
        pass
    # 6. last resort
    return bytes(body).decode("utf-8", "replace"), "utf-8"


# --------------------------------------------------------------------------- robots


_DIRECTIVES_WITH_VALUE = frozenset({
    "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview",
})
_SPLIT_DIRECTIVES = re.compile(r"[,;]")
_AGENT_NAME = re.compile(r"[a-z][a-z0-9_.\-]*")


def parse_robots_directives(value: str | None, agent: str | None = None) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from a meta robots ``content`` or X-Robots-Tag values.

    Directives are comma-separated (semicolons and spaces are tolerated too), case-
    insensitive; ``none`` means both. An X-Robots-Tag part may be prefixed by a user
    agent (``googlebot: noindex``): with ``agent`` (our product token) given, such a part and
    the parts after it in the same header apply only if the prefix is ``agent`` (Google's
    X-Robots-Tag rules); without it, whatever the prefix. ``value`` may hold several header
    values, one a line (repeated header fields, RFC 9110 5.3): a prefix holds within its line.
    """
    if not value:
        return False, False
    agent = agent.lower() if agent else None
    noindex = nofollow = False
    for line in value.lower().split("\n"):
        applies = True
        for part in _SPLIT_DIRECTIVES.split(line):
            if ":" in part:
                head, rest = part.split(":", 1)
                head = head.strip()
                # a crawler's name, not a directive's value ("max-snippet: 20") nor the tail of
                # one cut at its comma ("unavailable_after: Wed, 25 Jun 2030 15:00:00 PST")
                if head not in _DIRECTIVES_WITH_VALUE and _AGENT_NAME.fullmatch(head):
                    part = rest  # "agent: directive ..."
                    applies = agent is None or head == agent
            if not applies:
                continue
            for word in part.split():
                if word == "noindex":
                    noindex = True
                elif word == "nofollow":
                    nofollow = True
                elif word == "none":
                    noindex = nofollow = True
    return noindex, nofollow


# --------------------------------------------------------------------------- tree walk

# Element kinds (bit flags), looked up by lexbor tag id.
_SKIP = 1  # do not descend: no text, no links
_BLOCK = 2  # words never run across its boundaries; context is taken within it
_BOLD = 4
_ITALIC = 8
_A = 16
_AREA = 32
_IMG = 64
_HEADING = 128
_META = 256
_LINKEL = 512
_BASE = 1024
_TITLE = 2048
_BREAK = 4096  # void element that separates words (br, hr)
_BOILER = 8192  # its text is not main content (form fields, embedded objects; boilerplate.py finds more)
_CONTAINER = 16384  # checked by boilerplate.is_boilerplate when the main text is wanted

_TEXT_ID = 2  # LXB_TAG__TEXT
_COMMENT_ID = 4  # LXB_TAG__EM_COMMENT

_BLOCK_TAGS = (
    "address article aside blockquote body caption center dd details dialog dir div dl dt "
    "fieldset figcaption figure footer form frameset header hgroup legend li listing main "
    "menu nav ol optgroup option p plaintext pre section summary table tbody td tfoot th "
    "thead tr ul xmp button label textarea output meter progress video audio canvas "
    "picture ruby rt rp object map"
)
_SKIP_TAGS = "script style noscript template"  # invisible: no text, no links
# invisible (or a drop-down's list of choices: noise for an index), but separate words
_OPAQUE_TAGS = "iframe noembed noframes frame embed select datalist"
_BREAK_TAGS = "br hr input"


def _build_kinds() -> dict[int, int]:
    """Map lexbor tag ids (static for every known HTML tag) to element kinds."""
    doc = LexborHTMLParser("")
    kinds: dict[int, int] = {_COMMENT_ID: _SKIP, 5: _SKIP}  # comments, doctype

    def add(names: str, flag: int) -> None:
        for name in names.split():
            tag_id = doc.create_node(name).tag_id
            kinds[tag_id] = kinds.get(tag_id, 0) | flag

    add(_BLOCK_TAGS, _BLOCK)
    add(_SKIP_TAGS, _SKIP)
    add(_OPAQUE_TAGS, _SKIP | _BREAK)
    add(_BREAK_TAGS, _BREAK)
    add("b strong", _BOLD)
    add("i em", _ITALIC)
    add("a", _A)
    add("area", _AREA | _BREAK)
    add("img", _IMG)
    add("h1 h2 h3 h4 h5 h6", _HEADING | _BLOCK)
    add("meta", _META)
    add("link", _LINKEL)
    add("base", _BASE)
    add("title", _TITLE)
    add("button textarea object video audio", _BOILER)
    add(boilerplate.CONTAINER_TAGS, _CONTAINER)
    kinds.pop(_TEXT_ID, None)
    return kinds


_KINDS = _build_kinds()

# Without DOM mutation events (e.g. <selectedcontent> mirroring the selected <option>, which
# would duplicate text): the tree holds what the source holds. Also a little faster.
class _LexborKw(TypedDict, total=False):
    options: int


try:
    from selectolax.lexbor import LexborDocumentOptions

    _LEXBOR_KW: _LexborKw = {"options": LexborDocumentOptions.WO_EVENTS}
except ImportError:  # selectolax < 1.0
    _LEXBOR_KW = {}

_INERT = _SKIP | _BASE | _BREAK  # void or opaque: never descended into
_LEAF = _INERT | _IMG | _META | _LINKEL | _TITLE  # the walk does not push these

# Indexes into a link record (a list, for speed).
(_L_HREF, _L_REL, _L_START, _L_END, _L_BOLD, _L_ITALIC, _L_BLOCK, _L_ALT, _L_TITLE,
 _L_PREV) = range(10)

CONTEXT_WORDS = 10
_CONTEXT_CHARS = 9 * CONTEXT_WORDS  # first window: enough for most words
_C0_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG strips around a URL
_NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "about:", "file:", "ftp:", "sms:",
                 "blob:", "callto:", "skype:", "whatsapp:", "irc:", "news:")


class _Walk:
    __slots__ = ("text", "links", "headings", "metas", "canonical_href", "base_href", "title",
                 "lang", "boiler")

    def __init__(self) -> None:
        self.text = ""
        self.boiler: list[tuple[int, int]] = []  # text ranges of boilerplate, in order, disjoint
        self.links: list[list] = []
        self.headings: list[list] = []  # block records of h1-h6
        self.metas: list[dict] = []   # each <meta>'s attributes (the compiled walk: only those
        #                               _parse reads, name, content and http-equiv)
        self.canonical_href: str | None = None
        self.base_href: str | None = None
        self.title: str | None = None
        self.lang: str | None = None


def _walk_py(root, want_main: bool = False) -> _Walk:
    """Walk the tree once, in document order, with an explicit stack (no recursion).

    ``want_main``: also record in ``w.boiler`` the text ranges of boilerplate (the elements
    :func:`boilerplate.is_boilerplate` says so of, and ``_BOILER`` ones), which the main text
    leaves out. The walk checks containers as it meets them, at their depth below ``<body>`` (the
    stack's depth: html, body, ...); other elements only if an attribute query flagged them."""
    w = _Walk()
    is_boiler = boilerplate.is_boilerplate
    flagged = boilerplate.flagged_ids(root) if want_main else None
    ranges = w.boiler
    in_boiler = 0  # open boilerplate elements
    boiler_start = 0
    kinds_get = _KINDS.get
    links = w.links
    headings = w.headings
    metas = w.metas
    out: list[str] = []
    append = out.append
    clen = 0  # length of "".join(out)
    pending = False  # a space is owed before the next word
    bold = italic = 0
    cur: list[Any] | None = None  # innermost open link record
    block: list[Any] = [0, -1, None]  # [start, end, enclosing block]; this one is the whole document
    blocks = [block]
    # stack entries: (child iterator, kind, record: a block's, a link's or None)
    stack: list[tuple[Any, int, Any]] = [(root.iter(include_text=True), _BLOCK, block)]
    push = stack.append
    while stack:
        it, kind, rec = stack[-1]
        for node in it:
            tid = node.tag_id
            if tid == _TEXT_ID:
                t = node.text_content
                if not t:
                    continue
                s = t.strip()
                if not s:
                    pending = True
                    continue
                if clen and (pending or t[0] != s[0]):  # a space owed, or leading space
                    append(" ")
                    clen += 1
                pending = t[-1] != s[-1]  # trailing whitespace
                if not s.isprintable() or "  " in s:
                    # inner whitespace other than single spaces (newlines, tabs, nbsp...)
                    s = " ".join(s.split())
                append(s)
                clen += len(s)
                continue
            k = kinds_get(tid, 0)
            if want_main and not in_boiler and (k & _CONTAINER or (flagged and node.mem_id in flagged)):
                try:
                    if is_boiler(node, len(stack) - 2):
                        k |= _BOILER
                except Exception:  # an odd attribute value: the element counts as content
                    pass
            if k & _BOILER and not k & _LEAF:
                if not in_boiler:
                    boiler_start = clen
                in_boiler += 1
            if not k & ~(_BOILER | _CONTAINER):
                push((node.iter(include_text=True), k, None))
                break
            if k & _INERT:
                if k & _BREAK:
                    pending = True
                if k & _AREA:
                    attrs = node.attributes
                    href = attrs.get("href")
                    if href is not None:
                        start = clen + 1 if (pending and clen) else clen
                        links.append([href, attrs.get("rel"), start, start, bold > 0, italic > 0,
                                      block, attrs.get("alt"), attrs.get("title"), None])
                elif k & _BASE:
                    if w.base_href is None:
                        w.base_href = node.attributes.get("href")
                continue
            if k & _BLOCK:
                pending = True
                b: list[Any] = [clen, -1, block]
                blocks.append(b)
                block = b
                if k & _HEADING:
                    headings.append(b)
                push((node.iter(include_text=True), k, b))
                break
            if k & _A:
                attrs = node.attributes
                href = attrs.get("href")
                if href is None:
                    push((node.iter(include_text=True), k & _BOILER, None))
                    break
                start = clen + 1 if (pending and clen) else clen
                rec = [href, attrs.get("rel"), start, -1, bold > 0, italic > 0, block, None,
                       attrs.get("title"), cur]
                links.append(rec)
                cur = rec
                push((node.iter(include_text=True), k, rec))
                break
            if k & (_BOLD | _ITALIC):
                if k & _BOLD:
                    bold += 1
                    if cur is not None:
                        cur[_L_BOLD] = True
                else:
                    italic += 1
                    if cur is not None:
                        cur[_L_ITALIC] = True
                push((node.iter(include_text=True), k, None))
                break
            if k & _IMG:
                if cur is not None and not cur[_L_ALT]:
                    cur[_L_ALT] = node.attributes.get("alt") or node.attributes.get("title")
                continue
            if k & _META:
                metas.append(node.attributes)
                continue
            if k & _LINKEL:
                attrs = node.attributes
                if w.canonical_href is None:
                    if "canonical" in (attrs.get("rel") or "").lower().split():
                        w.canonical_href = attrs.get("href")
                continue
            if k & _TITLE:
                if w.title is None:
                    w.title = node.text()
                continue
            push((node.iter(include_text=True), k & _BOILER, None))  # unreachable in practice
            break
        else:
            stack.pop()
            if kind:
                if kind & _BOILER:
                    in_boiler -= 1
                    if not in_boiler and clen > boiler_start:
                        ranges.append((boiler_start, clen))
                if kind & _BLOCK:
                    pending = True
                    rec[1] = clen
                    block = rec[2]
                elif kind & _A:
                    rec[_L_END] = clen
                    cur = rec[_L_PREV]
                    rec[_L_PREV] = None
                elif kind & _BOLD:
                    bold -= 1
                elif kind & _ITALIC:
                    italic -= 1
    w.text = text = "".join(out)
    for b in blocks:  # unclosed (only if the walk was cut short)
        if b[1] < 0:
            b[1] = len(text)
    return w


def _walk_compiled(root, want_main: bool = False) -> _Walk:
    """``_walk_py``'s result from ``skitter._speedups.walk`` (compiled; lexbor's tree read directly)."""
    return _walk_with(_speedups, root, want_main)


def _walk_with(mod, root, want_main: bool) -> _Walk:
    return mod.walk(root, want_main, boilerplate.is_boilerplate, _Walk)


# The sample the compiled walk is checked against when it is loaded: every element kind, text the
# walk collapses, boilerplate, links in and out of blocks, attributes with static and dynamic ids.
_SELF_CHECK = (
    b'<html lang="en"><head><title>T <b>1</b></title><meta name="description" content="d">'
    b'<meta http-equiv="content-language" content="de"><link rel="Canonical" href="/c">'
    b'<base href="/b/"></head><body><nav class="menu"><a href="/n">Home</a></nav>'
    b'<div id="main"><h1>Head\xc2\xa0line</h1><p>Some  <b>bold <a href="x" rel="nofollow" '
    b'title="t">link <img alt="pic"> <i>it</i></a></b> text</p><a>no href</a>'
    b'<map><area href="/area" alt="A"></map><p hidden>gone</p>\n\t<ul><li>one<br>two</ul>'
    b'<script>var x;</script><x-custom data-a="1">custom</x-custom><svg><a xlink:href="/s">s</a>'
    b'</svg><div style="display:none">hid</div><footer>foot</footer></div></body></html>'
)


#: selectolax releases whose lexbor structures ``skitter._speedups`` was checked against (1.0.0 and
#: 1.0.2, lexbor 3.1; 0.4.x's differ, which the load-time check finds). Others: the Python walk.
_SPEEDUPS_SELECTOLAX = ("1.0.",)


def _load_speedups():
    """``skitter._speedups`` if it was built, works with this selectolax, and walks the sample
    exactly as ``_walk_py`` does; else None (the Python walk is used). SKITTER_PURE_PYTHON=1
    forces the Python code."""
    mod = speedups()
    if mod is None:
        return None
    import selectolax

    if not str(getattr(selectolax, "__version__", "")).startswith(_SPEEDUPS_SELECTOLAX):
        log.info("skitter._speedups not used with selectolax %s; the Python walk is",
                 getattr(selectolax, "__version__", "?"))
        return None
    try:
        ids = LexborHTMLParser(
            b'<a href="1" rel="2" title="3" alt="4" name="5" content="6" http-equiv="7" class="8" '
            b'role="9" aria-hidden="10" hidden="11" style="12">', **_LEXBOR_KW).css_first("a")
        sample = LexborHTMLParser(_SELF_CHECK, **_LEXBOR_KW)
        flags = {name[1:]: value for name, value in globals().items()
                 if name in ("_SKIP", "_BLOCK", "_BOLD", "_ITALIC", "_A", "_AREA", "_IMG", "_HEADING",
                             "_META", "_LINKEL", "_BASE", "_TITLE", "_BREAK", "_BOILER", "_CONTAINER",
                             "_L_BOLD", "_L_ITALIC", "_L_ALT", "_L_END", "_L_PREV")}
        landmarks = [ids.parser.create_node(tag).tag_id for tag in boilerplate.LANDMARKS]
        mod.setup(_KINDS, _TEXT_ID, flags, ids, landmarks, sample.root)
        for want_main in (False, True):
            if not _same_walk(_walk_with(mod, sample.root, want_main), _walk_py(sample.root, want_main)):
                raise ValueError("the compiled walk differs from the Python walk on the sample")
        return mod
    except Exception as exc:  # a selectolax whose lexbor differs: the Python walk, and say so
        log.warning("skitter._speedups not used (%s); the Python walk is", exc)
        return None


_META_KEYS = ("name", "content", "http-equiv")


def _same_walk(a: _Walk, b: _Walk) -> bool:
    """Whether two walks found the same (metas compared on the attributes ``_parse`` reads)."""
    def links(w):   # a record's block as its text range
        return [[x if i != _L_BLOCK else (x[0], x[1]) for i, x in enumerate(rec)] for rec in w.links]

    def metas(w):
        return [{k: m.get(k) for k in _META_KEYS} for m in w.metas]

    return (a.text == b.text and a.boiler == b.boiler and links(a) == links(b)
            and [h[:2] for h in a.headings] == [h[:2] for h in b.headings] and metas(a) == metas(b)
            and (a.canonical_href, a.base_href, a.title) == (b.canonical_href, b.base_href, b.title))


_speedups = _load_speedups()
_walk = _walk_compiled if _speedups is not None else _walk_py


# --------------------------------------------------------------------------- nesting guard

# lexbor spends O(depth) per start tag of the elements that "close a p element in button
# scope" (div, section, ul, ...), so thousands of unclosed ones nested in each other make
# the parse quadratic: 20,000 nested <div>s (100 KB) take a second, 100,000 take forty.
# Browsers survive this by capping the depth; we flatten such documents before parsing
# (those tags become <br><span>, which nests in linear time). Real pages are never close.
_NESTING_TAGS = (
    rb"div|section|article|aside|nav|header|footer|main|ul|ol|dl|blockquote|center|figure|"
    rb"figcaption|fieldset|details|summary|dialog|address|hgroup|menu|dir|search|pre|listing"
)
_NESTING_RE = re.compile(rb"<(/?)(?:" + _NESTING_TAGS + rb")(?=[\s/>])", re.I)
_OPEN_NESTING_RE = re.compile(rb"<(?:" + _NESTING_TAGS + rb")(?=[\s/>])", re.I)
_CLOSE_NESTING_RE = re.compile(rb"</(?:" + _NESTING_TAGS + rb")(?=[\s/>])", re.I)
MAX_NESTING = 4096


def _defuse_deep_nesting(data: bytes) -> bytes:
    if data.count(b"<") <= MAX_NESTING:
        return data
    depth = deepest = 0
    for slash in _NESTING_RE.findall(data):
        if slash:
            if depth:
                depth -= 1
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
    if deepest <= MAX_NESTING:
        return data
    data = _OPEN_NESTING_RE.sub(b"<br><span", data)
    return _CLOSE_NESTING_RE.sub(b"<br></span", data)


# --------------------------------------------------------------------------- links


def _canon(absolute: str) -> tuple[str, str] | None:
    """``(canonical url, host)`` for an absolute URL, or None if it is not crawlable."""
    try:
        url = urls.canonicalize(absolute)
    except ValueError:
        return None
    if not (url.startswith("http://") or url.startswith("https://")):
        return None
    return url, _host_of_canonical(url)


def _host_of_canonical(url: str) -> str:
    """``urls.host_of`` for a canonical http(s) URL, by slicing (no second URL parse).

    A canonical URL is ``scheme://host[:port]/...``: no userinfo, lower-case host, IPv6 in
    brackets, and always a path.
    """
    start = url.find("//") + 2
    end = url.find("/", start)
    hostport = url[start:end] if end >= 0 else url[start:]
    if hostport.startswith("["):
        return hostport[: hostport.find("]") + 1]
    return hostport.partition(":")[0]


def _resolve_canon(base: str, href: str) -> tuple[str, str] | None:
    """``_canon`` of ``href`` resolved against ``base`` (``""``: href is absolute)."""
    try:
        absolute = urls.resolve(base or None, href)
    except Exception:
        return None
    return None if absolute is None else _canon(absolute)


# Links repeat across the pages of a site (navigation, footers): the cache is keyed by the
# base's origin for path-absolute hrefs and by nothing for absolute ones, so those hit it
# from page to page. Long hrefs bypass it to bound its memory. 4,096 entries hold a site's
# navigation; 32,768 took 13 MB of the worker's memory on the benchmark web and parsed no faster
# (0.53-0.56 ms a page either way, 69 % vs 36 % hits).
_cached_resolve_canon = lru_cache(maxsize=4096)(_resolve_canon)
_CACHED_HREF_MAX = 512


_make_link = new_link   # Link(...) at half the cost (skitter.models.new_link)


def _collapse(s: str | None) -> str:
    return " ".join(s.split()) if s else ""


def _context(text: str, start: int, end: int, block_start: int, block_end: int) -> str:
    """Up to CONTEXT_WORDS words either side of ``text[start:end]``, inside the block.

    ``text`` is collapsed (words separated by single spaces), so plain slicing and
    ``str.count(" ")`` do the word work. Only a window of characters is cut (widened once
    if it holds too few words), so the cost does not grow with the size of the block.
    """
    n = CONTEXT_WORDS
    before = after = ""
    if start > block_start:
        lo = start - _CONTEXT_CHARS
        if lo <= block_start:
            lo = block_start
        before = text[lo:start].strip()
        if lo > block_start:
            if before.count(" ") < n:  # long words: widen the window once
                lo = max(block_start, start - 50 * _CONTEXT_CHARS)
                before = text[lo:start].strip()
            if lo > block_start and text[lo - 1] != " " and text[lo] != " ":
                i = before.find(" ")  # the window cut the first word in two
                before = before[i + 1:] if i >= 0 else ""
        if before.count(" ") >= n:
            before = before[len(before.rsplit(" ", n)[0]) + 1:]
    if block_end > end:
        hi = end + _CONTEXT_CHARS
        if hi >= block_end:
            hi = block_end
        after = text[end:hi].strip()
        if hi < block_end:
            if after.count(" ") < n:
                hi = min(block_end, end + 50 * _CONTEXT_CHARS)
                after = text[end:hi].strip()
            if hi < block_end and text[hi] != " " and text[hi - 1] != " ":
                i = after.rfind(" ")  # the window cut the last word in two
                after = after[:i] if i >= 0 else ""
        if after.count(" ") >= n:
            after = after[: len(after) - len(after.split(" ", n)[n]) - 1]
    if before and after:
        return before + " " + after
    return before or after


def _build_links(w: _Walk, page_canon: str | None, base: str, page_nofollow: bool,
                 link_context: bool = True) -> list[Link]:
    text = w.text
    total = len(text)
    with_context = link_context and total
    page_host = ""
    if page_canon is not None:
        c = _canon(page_canon)
        page_host = c[1] if c else ""
    seen: set[str] = set()
    if page_canon is not None:
        seen.add(page_canon)
    # The origin of the base ("https://host:port/"): path-absolute hrefs depend on nothing else.
    slash = base.find("/", base.find("//") + 2)
    origin = base[: slash + 1] if slash > 0 else base
    result: list[Link] = []
    make_link = _make_link
    n_raw = len(w.links)
    for index, rec in enumerate(w.links):
        h = rec[_L_HREF].strip(_C0_SPACE)
        if h[:1] == "/":
            # "/path" resolves against the origin alone, unless it is really "//host"
            # (also spelled "/\\host", or with a tab or newline that WHATWG removes)
            if h[1:2] in ("/", "\\", "") or "\t" in h or "\n" in h or "\r" in h:
                key = base
            else:
                key = origin
        elif h[:8].lower().startswith(("http://", "https://")):
            key = ""
        elif h.lower().startswith(_SKIP_SCHEMES):
            continue
        else:
            key = base
        if len(h) <= _CACHED_HREF_MAX:
            c = _cached_resolve_canon(key, h)
        else:
            c = _resolve_canon(key, h)
        if c is None:
            continue
        url, host = c
        if url in seen:
            continue
        seen.add(url)
        start, end = rec[_L_START], rec[_L_END]
        if end < start:
            end = start
        anchor = text[start:end].strip()
        if not anchor:
            anchor = _collapse(rec[_L_ALT]) or _collapse(rec[_L_TITLE])
        b = rec[_L_BLOCK]
        context = _context(text, start, end, b[0], b[1]) if with_context else ""
        bold, italic = rec[_L_BOLD], rec[_L_ITALIC]
        visibility = 3 if (bold and italic) else 2 if (bold or italic) else 1
        ratio = start / total if total else index / n_raw
        position = 3 if ratio < 1 / 3 else 2 if ratio < 2 / 3 else 1
        distance = 1 if host == page_host else 5
        nofollow = page_nofollow
        rel = rec[_L_REL]
        if not nofollow and rel:
            nofollow = not _NOFOLLOW_RELS.isdisjoint(rel.lower().split())
        result.append(make_link(url, anchor, context, visibility, position, distance, nofollow))
    return result


# --------------------------------------------------------------------------- entry point


def _canonicalize_or_none(url: str | None) -> str | None:
    if not url:
        return None
    c = _canon(url)
    return c[0] if c else None


def parse_html(body: bytes, url: str, content_type: str | None = None, *,
               x_robots_tag: str | None = None, user_agent_token: str = "skitter",
               link_context: bool = True) -> Page:
    """Parse one HTML document fetched from ``url``. Never raises. ``link_context``: fill in
    ``Link.context`` (the words around each link); without it, it is empty."""
    return _parse(body, url, content_type, x_robots_tag, user_agent_token, False, link_context)[0]


def parse_with_main_text(body: bytes, url: str, content_type: str | None = None, *,
                         x_robots_tag: str | None = None,
                         user_agent_token: str = "skitter", link_context: bool = True) -> tuple[Page, str]:
    """``parse_html`` and the page's main text: ``Page.text`` without the boilerplate
    (:mod:`skitter.boilerplate`), or all of ``Page.text`` if nothing with a letter or digit is
    left. From the same parse and the same walk. Never raises."""
    page, main = _parse(body, url, content_type, x_robots_tag, user_agent_token, True, link_context)
    return page, main if main is not None else page.text


def _cut(text: str, ranges: list[tuple[int, int]]) -> str | None:
    """``text`` without the ``ranges`` (disjoint, in order), the pieces joined by a space; None
    when what is left has no letter or digit."""
    if not ranges:
        return text
    parts = []
    prev = 0
    for start, end in ranges:
        part = text[prev:start].strip()
        if part:
            parts.append(part)
        prev = end
    part = text[prev:].strip()
    if part:
        parts.append(part)
    main = " ".join(parts)
    return main if any(c.isalnum() for c in main) else None


def _main_start(text: str, ranges: list[tuple[int, int]]) -> int:
    """Where the first piece of main text starts: the first letter or digit of ``text`` outside
    the boilerplate ``ranges`` (disjoint, in order); 0 when there is none."""
    prev = 0
    for start, end in [*ranges, (len(text), len(text))]:
        m = _ALNUM.search(text, prev, start) if start > prev else None
        if m is not None:
            return m.start()
        prev = max(prev, end)
    return 0


_ALNUM = re.compile(r"[^\W_]")


def _parse(body: bytes, url: str, content_type: str | None, x_robots_tag: str | None,
           user_agent_token: str, want_main: bool, link_context: bool = True) -> tuple[Page, str | None]:
    header_noindex, header_nofollow = False, False
    encoding = None
    try:
        header_noindex, header_nofollow = parse_robots_directives(x_robots_tag, user_agent_token)
        text, encoding = decode_body(body, content_type)
        if encoding == "utf-8" and body[:3] != b"\xef\xbb\xbf" and isinstance(body, bytes):
            data = body  # lexbor decodes UTF-8 itself (with replacement, like we do)
        else:
            data = text.encode("utf-8", "replace")
        tree = LexborHTMLParser(_defuse_deep_nesting(data), **_LEXBOR_KW)
        root = tree.root
        if root is None:
            return Page(noindex=header_noindex, nofollow=header_nofollow, encoding=encoding), None
        w = _walk(root, want_main)
        w.lang = root.attributes.get("lang")

        page = Page(encoding=encoding, text=w.text)
        page.title = _collapse(w.title)
        page.headings = [h for h in (w.text[s:e].strip() for s, e, _ in w.headings) if h]
        page.lang = _collapse(w.lang).lower() or None

        noindex, nofollow = header_noindex, header_nofollow
        ua = (user_agent_token or "").strip().lower()
        refresh: str | None = None
        for attrs in w.metas:
            name = (attrs.get("name") or "").strip().lower()
            if not name:
                equiv = (attrs.get("http-equiv") or "").strip().lower()
                if page.lang is None and equiv == "content-language":
                    first = (attrs.get("content") or "").split(",")[0]
                    page.lang = _collapse(first).lower() or None
                elif equiv == "refresh" and refresh is None:
                    refresh = refresh_url(attrs.get("content") or "")
                continue
            content = attrs.get("content") or ""
            if name == "description":
                if not page.description:
                    page.description = _collapse(content)
            elif name == "keywords":
                if not page.keywords:
                    page.keywords = _collapse(content)
            elif name == "robots" or (ua and name == ua):
                ni, nf = parse_robots_directives(content)
                noindex = noindex or ni
                nofollow = nofollow or nf
        page.noindex = noindex
        page.nofollow = nofollow

        page_canon = _canonicalize_or_none(url)
        page_url = page_canon or url
        base = page_url
        if w.base_href is not None:
            b = _canonicalize_or_none(_resolve(page_url, w.base_href))
            if b is not None:
                base = b
        if w.canonical_href is not None:
            page.canonical = _canonicalize_or_none(_resolve(base, w.canonical_href))
        page.links = _build_links(w, page_canon, base, nofollow, link_context)
        if refresh:   # a meta refresh navigates to its URL: a link like any other (as Heritrix has it)
            target = _canonicalize_or_none(_resolve(base, refresh))
            if target is not None and target != page_canon and all(link.url != target for link in page.links):
                page.links.append(Link(target, nofollow=nofollow))
        if want_main:
            page.main_start = _main_start(w.text, w.boiler)
        return page, (_cut(w.text, w.boiler) if want_main else None)
    except Exception:  # a bug, not bad input: say so, but never take the crawl down
        log.warning("parse failed for %s", url, exc_info=True)
        return Page(noindex=header_noindex, nofollow=header_nofollow, encoding=encoding), None


_HTML_SPACE = " \t\n\f\r"


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content=...>`` (the HTML standard's shared
    declarative refresh steps: a time, then ``;`` or ``,``, then ``url=`` and the URL, maybe
    quoted), or None when it names none (a plain reload) or is not a refresh."""
    s = content.lstrip(_HTML_SPACE)
    i = 0
    while i < len(s) and s[i] in "0123456789":
        i += 1
    if i == 0 and not s.startswith("."):
        return None
    while i < len(s) and s[i] in "0123456789.":
        i += 1
    rest = s[i:]
    if rest and rest[0] not in ";," + _HTML_SPACE:
        return None
    rest = rest.lstrip(_HTML_SPACE)
    if rest[:1] in (";", ","):
        rest = rest[1:].lstrip(_HTML_SPACE)
    if rest[:3].lower() == "url":
        after = rest[3:].lstrip(_HTML_SPACE)
        if after[:1] == "=":
            rest = after[1:].lstrip(_HTML_SPACE)
    if rest[:1] in ("'", '"'):
        quote, rest = rest[0], rest[1:]
        end = rest.find(quote)
        rest = rest if end < 0 else rest[:end]
    url = rest.strip(_HTML_SPACE)
    return url or None


def _resolve(base: str, href: str) -> str | None:
    try:
        return urls.resolve(base, href.strip(_C0_SPACE))
    except Exception:
        return None
