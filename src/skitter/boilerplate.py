"""Which elements of a parsed page are boilerplate: site navigation, headers, footers, side bars,
ads, hidden and form elements. Their text stays in ``Page.text`` (the index wants it) but is left
out of the page's *main text*, which the near-duplicate test fingerprints (:mod:`skitter.dedup`,
seed 004), so that two copies of an article under different site chrome look alike and two
articles under the same chrome do not.

The rules are the usual rule-based ones (resiliparse's ``main_content`` heuristics are the model:
landmark elements near the top of ``<body>``, ARIA roles, hidden elements, and class or id names
of navigation, footers, side bars, search boxes, modals, ads and share buttons). They run on the
tree :mod:`skitter.parse` has already built, during its one walk: the walk asks
:func:`is_boilerplate` about every container element (``CONTAINER_TAGS``: it knows their depth below
``<body>`` from its stack) and about the other elements that one lexbor CSS query
(``ATTRIBUTE_QUERY``, in C) finds with a role, ARIA, hidden or style attribute, or a skip-link
class (all of the rules apply to those, their class names included); the text under a boilerplate
element is left out of the main text. Class names of other inline elements (a plain
``<span class="share">``) are not looked at: checking every element's attributes from Python would
cost more than the parse.

That replaced a second HTML parse by resiliparse, which cost as much as the whole parse and link
extraction (0.55 ms a page on the benchmark web, against about 0.05 ms for these rules);
docs/benchmarks.md compares the two extractions' output (``bench/maintext_bench.py``).
"""

from __future__ import annotations

import re

__all__ = ["is_boilerplate", "flagged_ids", "depth_below_body", "CONTAINER_TAGS", "ATTRIBUTE_QUERY",
           "LANDMARKS"]

# Class and id words, matched as whole words of the attribute (separated by white space, "-" or "_").
_NAV = re.compile(r"(?:^|[\s_-])(?:nav|navbar|navigation|menu|menu[_-]item|breadcrumbs?)(?:$|\s)")
_FOOTER = re.compile(r"(?:^|[\s_-])(?:(?:global|page|site)[_-]?)?footer(?:[_-]?(?:section|wrapper))?(?:$|\s)")
_SIDEBAR = re.compile(r"(?:^|[\s_-])(?:nav|navigation|menu|global)-sidebar(?:$|\s)"
                      r"|(?:^|\s)sidebar(?:[_-](?:left|right|primary|secondary|first|second))?(?:$|\s)")
_SEARCH = re.compile(r"(?:^|[\s_-])(?:(?:global|page|site)[_-]?)?search(?:[_-]?(?:bar|box|facility))?(?:$|\s)")
_SKIPLINK = re.compile(r"(?:^|[\s_-])(?:skip|skip-to|skiplink|scroll-up|scroll-down)(?:$|[\s_-])")
_HIDDEN = re.compile(r"(?:^|\s)(?:is[_-])?(?:display-none|hidden|invisible|collapsed|h-0)(?:-xs|-sm|-md|-lg|-xl)?(?:$|\s)")
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:$|;|!)", re.I)
_LANDMARK_ID = re.compile(r"^(?:global[_-]?)?(?:footer|sidebar|nav|navigation)$")
_MODAL = re.compile(r"(?:^|\s)(?:modal|popup|lightbox|dropdown)(?:$|\s)")
_ADS = re.compile(r"(?:^|[\s_-])(?:google[_-])?(?:ad|advert|advertisement|widead|banner|promoted)(?:[_-][0-9a-f]+)?(?:$|\s)")
_SOCIAL = re.compile(r"(?:^|\s)(?:social|socialmedia|share|sharing|feedback|facebook|twitter)(?:[_-](?:links|section))?(?:$|\s)")
_WRAPPER = re.compile(r"(?:^|[\s_-])(?:wrap|wrapper)(?:$|[\s_-])")

_ROLES = frozenset({"contentinfo", "img", "menu", "menubar", "navigation", "menuitem", "alert", "dialog",
                    "checkbox", "radio"})

#: A superset of what the class and id patterns above match: most elements fail this one search.
_ANY_WORD = re.compile("nav|menu|breadcrumb|footer|sidebar|search|skip|scroll|hidden|invisible|collapsed|"
                       "display-none|h-0|modal|popup|lightbox|dropdown|ad|banner|promoted|social|shar|"
                       "feedback|facebook|twitter")

#: Elements the parser's walk checks as it meets them (it knows their depth below ``<body>``).
CONTAINER_TAGS = "div section ul ol nav header footer aside form table"

#: Other elements a rule applies to only through one of these attributes: found by one CSS query.
ATTRIBUTE_QUERY = "[role], [aria-hidden], [hidden], [style], a[class*=skip]"

#: Landmark elements: boilerplate near the top of ``<body>``, even without a class or id. A container
#: (``CONTAINER_TAGS``) that has no attributes and is not one of these is never boilerplate (the
#: compiled walk, ``skitter._speedups``, does not ask about those; a test checks the rule).
LANDMARKS = frozenset({"nav", "ul", "aside", "header", "footer"})


def depth_below_body(node) -> int:
    """Elements between ``node`` and ``<body>`` (0 for a child of body; large if there is none)."""
    depth = 0
    parent = node.parent
    while parent is not None and parent.tag != "body":
        depth += 1
        parent = parent.parent
    return depth if parent is not None else 1 << 20


#: A footer deeper than this below ``<body>`` is not checked for ending the page: the check climbs
#: to ``<body>``, and on nested footers (hostile pages) climbing from each would be quadratic.
_FOOTER_DEPTH = 16


def _last_in_body(node) -> bool:
    """Whether ``node`` ends the page: no element follows it or any of its ancestors up to the
    child of ``<body>`` that holds it."""
    while node is not None and node.parent is not None and node.parent.tag != "body":
        sibling = node.next
        while sibling is not None:
            if sibling.tag not in ("-text", "-comment"):
                return False
            sibling = sibling.next
        node = node.parent
    return True


#: Landmarks that are content inside ``<main>`` or ``<article>``: a list of results or records
#: (a search result page's ``<main><ul>``) and an article's own header (its title and byline).
_CONTENT_LANDMARKS = frozenset({"ul", "header"})


def _in_content(node) -> bool:
    """Whether ``node`` is inside ``<main>``, ``<article>`` or an element of role main (asked of
    landmarks near the top of ``<body>`` only: a climb of at most three elements)."""
    parent = node.parent
    while parent is not None and parent.tag not in ("body", "html"):
        if parent.tag in ("main", "article"):
            return True
        role = parent.attributes.get("role") if parent.attributes else None
        if role is not None and role.strip().lower() == "main":
            return True
        parent = parent.parent
    return False


def is_boilerplate(node, depth: int | None = None) -> bool:
    """Whether the element ``node`` (a selectolax lexbor node) and everything in it is boilerplate.
    ``depth``: its ``depth_below_body`` when the caller knows it (computed when a rule needs it)."""
    tag = node.tag
    if tag in ("body", "html"):
        return False          # a hidden <body> (an anti-flicker trick) still holds the page
    attrs = node.attributes
    if attrs:
        if "hidden" in attrs:
            return True
        if "aria-hidden" in attrs and (attrs["aria-hidden"] or "").strip().lower() == "true":
            return True
        if "style" in attrs and _HIDDEN_STYLE.search(attrs["style"] or ""):
            return True
        if tag == "main":
            return False      # <main> is content, whatever its role or class
        cls = attrs.get("class") or ""
        ident = attrs.get("id") or ""
        both = f"{cls} {ident}"
        if "role" in attrs and (attrs["role"] or "").strip().lower() in _ROLES:
            return True
        words = _ANY_WORD.search(both) is not None
    else:
        if tag == "main":
            return False
        cls = ident = both = ""
        words = False
    if words and tag in ("div", "section") and _WRAPPER.search(both):
        return False          # a page wrapper holds the content too: look inside it instead
    if words and _HIDDEN.search(cls):
        return True
    if tag in LANDMARKS:
        if depth is None:
            depth = depth_below_body(node)
        if depth < 3 and tag != "footer" and not (tag in _CONTENT_LANDMARKS and _in_content(node)):
            return True       # site headers, navigation and side bars sit near the top of <body>
    if tag == "footer" or (words and _FOOTER.search(both)):
        if depth is None:
            depth = depth_below_body(node)
        if depth < 3 or (depth < _FOOTER_DEPTH and _last_in_body(node)):
            return True
    if not words:
        return False
    if tag in ("ul", "header", "nav", "section") and _NAV.search(both):
        return True
    if _LANDMARK_ID.search(ident) or _SEARCH.search(both) or _MODAL.search(both):
        return True
    if _SIDEBAR.search(both):   # a side bar of the site's, not one inside an article
        if depth is None:
            depth = depth_below_body(node)
        if depth < 4 and not _in_content(node):
            return True
    if tag in ("a", "span", "li") and _SKIPLINK.search(cls):
        return True
    return bool(_ADS.search(both) or _SOCIAL.search(cls))


def flagged_ids(root) -> set[int]:
    """``mem_id`` of the elements under ``root`` that the walk must check although they are not
    among ``CONTAINER_TAGS`` (it checks those anyway): the ones ``ATTRIBUTE_QUERY`` finds. The walk
    checks them as it meets them, with their depth, and not inside boilerplate it already left out
    (checking each here, climbing to ``<body>`` from each, would be quadratic on nested ones)."""
    containers = _CONTAINERS
    return {node.mem_id for node in root.css(ATTRIBUTE_QUERY) if node.tag not in containers}


_CONTAINERS = frozenset(CONTAINER_TAGS.split())
