"""Forms: extraction, classification and query planning for the hidden web (issue #22). Pure.

Content behind search forms is reached as Google's deep-web crawl reached it (Madhavan et al.,
"Google's Deep-Web Crawl", VLDB 2008): a form is turned into a bounded set of GET URLs, which the
crawl loop puts in the frontier like links, so robots.txt, politeness, trap limits and the URL-seen
test apply to them unchanged. This module decides *which* URLs; it does no I/O (no asyncio, sqlite3
or HTTP client: ``tests/unit/test_docs.py`` checks), so the loop can persist a planner's state as
JSON and a crawl resumes after ``kill -9`` with the same plan.

1. :func:`extract_forms`: every ``<form>`` of a page as a :class:`Form` record: the page, the action
   (resolved against ``<base href>``, canonicalised by :mod:`skitter.urls`; a GET form's own query
   is dropped, since a browser replaces it with the form data), method, enctype and the inputs
   (:class:`FormInput`) with their kinds, options and defaults.
2. :func:`classify`: whether a form may be submitted at all. Only GET forms with something to fill
   in, and nothing that looks like a login, sign-up, vote, comment, cart, contact or newsletter form
   (the heuristics are listed at ``_FORM_WORDS``).
3. :class:`FormPlanner`: which submissions to make, within a budget (see its docstring).
4. :func:`submission_url` builds the GET URL a browser would send for a binding of inputs;
   :func:`words_of` and :func:`result_signature` are what the loop and the planner share to
   describe a result page.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

import xxhash
from selectolax.lexbor import LexborHTMLParser

from . import urls

__all__ = ["DEFAULT_BUDGET", "KINDS", "Form", "FormInput", "FormPlanner", "classify", "extract_forms",
           "is_result_page", "result_signature", "submission_url", "words_of"]

#: Submissions per form when ``--form-budget`` is not given (docs/forms.md: the coverage it buys).
DEFAULT_BUDGET = 500
#: Words of the site's other pages a planner keeps for its text boxes (the most widespread first),
#: and how many samples a text box that found nothing may spend on them before it is dropped.
SITE_WORDS = 500
SITE_PROBES = 3

#: The kinds of input a :class:`FormInput` can have.
KINDS = ("text", "search", "textarea", "select", "radio", "checkbox", "hidden", "submit", "password",
         "file", "email", "number", "other")

#: Inputs whose values are enumerated (every option is a value to try).
ENUMERATED = frozenset({"select", "radio", "checkbox"})
#: Inputs that take free text: their values come from iterative probing.
FREE_TEXT = frozenset({"text", "search", "textarea"})

# ------------------------------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class FormInput:
    """One control of a form (radio buttons and checkboxes sharing a name are one input).

    ``options``: the values a select, radio group or checkbox group offers (``labels``: their
    visible text). ``default``: what a browser sends for the input when nobody touches it (the
    selected option, the checked boxes, a text box's value; empty when nothing is sent).
    ``label``: the text a person reads for it (``<label>``, aria-label, placeholder, title): the
    classifier reads it. ``type`` is the element's own type (``image`` for an image button).
    """

    name: str
    kind: str
    type: str = ""
    options: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    default: tuple[str, ...] = ()
    id: str = ""
    label: str = ""


@dataclass(frozen=True, slots=True)
class Form:
    """One ``<form>`` of a page. ``action`` is canonical, or None when it is not an http(s) URL
    (``javascript:``, ``mailto:``); ``text`` is the form's own legend and headings."""

    page_url: str
    action: str | None
    method: str = "get"
    enctype: str = "application/x-www-form-urlencoded"
    inputs: tuple[FormInput, ...] = ()
    id: str = ""
    name: str = ""
    css_class: str = ""
    text: str = ""

    @property
    def key(self) -> str:
        """The form's identity across pages: method, action and the inputs' kinds and names (not
        their values: a result page repeats its search form with the query filled in). In the
        action's path a segment of digits counts as any number: the form each record page has
        for itself (``/recipe/17/rate``, ``/item/203/notes``) is one form, planned once, not one
        planner per record."""
        parts = sorted({f"{i.kind}:{i.name}" for i in self.inputs})
        action = self.action or ""
        last = urlsplit(action).path.rstrip("/").rpartition("/")[2].lower()
        if not any(w in last for w in _SEARCH_SEGMENT):   # (/forum/12/search: a search of its own)
            action = _ID_SEGMENT.sub("/#", action)
        return xxhash.xxh3_64_hexdigest("|".join([self.method, action, *parts]).encode())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Form:
        specs: list[dict[str, Any]] = [{k: tuple(v) if isinstance(v, list) else v for k, v in i.items()}
                                       for i in d["inputs"]]
        inputs = tuple(FormInput(**f) for f in specs)
        return cls(**{**d, "inputs": inputs})


# ------------------------------------------------------------------------------------------ extraction

#: A path segment of digits (a record's number) in a form's action: ``Form.key`` reads it as any,
#: unless the action's last segment says it searches (``/forum/12/search``: each forum's search
#: reaches its own records).
_ID_SEGMENT = re.compile(r"/\d+(?=[/?#;]|$)")
_SEARCH_SEGMENT = ("search", "find", "query", "lookup", "result")

_CONTROLS = "form, input, select, textarea, button"
_TYPE_KIND = {"text": "text", "search": "search", "hidden": "hidden", "submit": "submit",
              "image": "submit", "password": "password", "file": "file", "email": "email",
              "number": "number", "radio": "radio", "checkbox": "checkbox"}
#: Input types that are not text boxes (HTML: any other type value means a text box).
_OTHER_TYPES = frozenset({"tel", "url", "date", "datetime-local", "month", "week", "time", "range",
                          "color"})
_NOT_SENT = frozenset({"reset", "button"})   # never part of the form data
_METHODS = frozenset({"get", "post", "dialog"})


def _collapse(s: str | None) -> str:
    return " ".join(s.split()) if s else ""


def _canonical(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urls.canonicalize(url)
    except urls.URLError:
        return None


def extract_forms(html: str, base_url: str) -> list[Form]:
    """Every form of the page at ``base_url``, in document order. Never raises on bad markup.

    A control belongs to the form named by its ``form=`` attribute, else to its nearest
    ``<form>`` ancestor, else, for a form the parser closed at once because it sat between
    table rows (``<table><form><tr><td><input>``, as old sites write it), to that form if the
    control is inside the same table. Disabled controls and options are left out, as browsers
    leave them out of the form data.
    """
    page_canon = _canonical(base_url)
    tree = LexborHTMLParser(html)
    base = page_canon
    base_el = tree.css_first("base[href]")
    if base_el is not None and page_canon is not None:
        base = _canonical(urls.resolve(page_canon, base_el.attributes.get("href") or "")) or page_canon
    label_for = {(n.attributes.get("for") or ""): _collapse(n.text(separator=" "))
                 for n in tree.css("label[for]")}
    nodes = tree.css(_CONTROLS)
    forms = [n for n in nodes if n.tag == "form"]
    by_id = {n.attributes.get("id"): n.mem_id for n in reversed(forms) if n.attributes.get("id")}
    controls: dict[int, list] = {f.mem_id: [] for f in forms}
    last_form = None
    for node in nodes:
        if node.tag == "form":
            last_form = node
            continue
        owner = _owner(node, by_id, last_form)
        if owner is not None:
            controls[owner].append(node)
    return [_form(f, controls[f.mem_id], base_url, page_canon, base, label_for) for f in forms]


def _owner(node, by_id: dict[str | None, int], last_form) -> int | None:
    """The mem_id of the form ``node`` belongs to (see :func:`extract_forms`), or None."""
    attrs = node.attributes
    if "form" in attrs:
        return by_id.get(attrs.get("form"))
    parent = node.parent
    ancestors = set()
    while parent is not None:
        if parent.tag == "form":
            return parent.mem_id
        if parent.tag == "fieldset" and "disabled" in parent.attributes:
            return None
        ancestors.add(parent.mem_id)
        parent = parent.parent
    if last_form is not None and last_form.parent is not None and last_form.parent.tag in (
            "table", "tbody", "thead", "tfoot", "tr") and last_form.parent.mem_id in ancestors:
        return last_form.mem_id
    return None


def _form(node, controls: list, page_url: str, page_canon: str | None, base: str | None,
          label_for: dict[str, str]) -> Form:
    attrs = node.attributes
    method = (attrs.get("method") or "get").strip().lower()
    if method not in _METHODS:
        method = "get"
    raw_action = (attrs.get("action") or "").strip()
    # HTML: an empty or missing action is the document's URL (not the base URL)
    action = page_canon if not raw_action else _canonical(urls.resolve(base, raw_action))
    if action is not None and method == "get":
        action = action.partition("?")[0]
    enctype = (attrs.get("enctype") or "").strip().lower() or "application/x-www-form-urlencoded"
    heads = " ".join(_collapse(h.text(separator=" ")) for h in node.css("legend, h1, h2, h3, h4, h5, h6"))
    text = _collapse(" ".join(filter(None, (attrs.get("aria-label"), attrs.get("title"), heads))))[:300]
    return Form(page_url=page_canon or page_url, action=action, method=method, enctype=enctype,
                inputs=_inputs(controls, label_for), id=attrs.get("id") or "",
                name=attrs.get("name") or "", css_class=_collapse(attrs.get("class")), text=text)


def _inputs(controls: list, label_for: dict[str, str]) -> tuple[FormInput, ...]:
    """The form's inputs in tree order; radio buttons and checkboxes of one name merged."""
    out: list[FormInput] = []
    groups: dict[tuple[str, str], int] = {}   # (kind, name) -> index in out
    for node in controls:
        if "disabled" in node.attributes:
            continue
        inp = _input(node, label_for)
        if inp is None:
            continue
        key = (inp.kind, inp.name)
        if inp.kind in ("radio", "checkbox") and inp.name and key in groups:
            i = groups[key]
            prev = out[i]
            default = inp.default if inp.kind == "radio" and inp.default else prev.default
            if inp.kind == "checkbox":
                default = prev.default + inp.default
            out[i] = FormInput(prev.name, prev.kind, prev.type, prev.options + inp.options,
                               prev.labels + inp.labels, default, prev.id, prev.label)
            continue
        groups[key] = len(out)
        out.append(inp)
    return tuple(out)


def _input(node, label_for: dict[str, str]) -> FormInput | None:
    attrs = node.attributes
    tag = node.tag
    name = attrs.get("name") or ""
    ident = attrs.get("id") or ""
    label = _label(node, label_for)
    if tag == "select":
        return _select(node, name, ident, label)
    if tag == "textarea":
        return FormInput(name, "textarea", "textarea", default=(node.text(),), id=ident, label=label)
    if tag == "button":
        btype = (attrs.get("type") or "submit").strip().lower()
        if btype in _NOT_SENT:
            return None
        return FormInput(name, "submit", "button", labels=(_collapse(node.text(separator=" ")),),
                         default=(attrs.get("value") or "",), id=ident, label=label)
    itype = (attrs.get("type") or "text").strip().lower()
    if itype in _NOT_SENT:
        return None
    kind = _TYPE_KIND.get(itype) or ("other" if itype in _OTHER_TYPES else "text")
    value = attrs.get("value")
    if kind in ("radio", "checkbox"):
        value = "on" if value is None else value
        checked = (value,) if "checked" in attrs else ()
        return FormInput(name, kind, itype, options=(value,), labels=(label,), default=checked,
                         id=ident, label=label)
    if kind == "submit":
        return FormInput(name, kind, itype, labels=(value or attrs.get("alt") or "",),
                         default=(value or "",), id=ident, label=label)
    if kind == "file":
        return FormInput(name, kind, itype, id=ident, label=label)
    return FormInput(name, kind, itype, default=(value or "",), id=ident, label=label)


def _select(node, name: str, ident: str, label: str) -> FormInput:
    options, labels, selected = [], [], []
    for opt in node.css("option"):
        if "disabled" in opt.attributes:
            continue
        text = _collapse(opt.text(separator=" "))
        value = opt.attributes.get("value")
        options.append(text if value is None else value)
        labels.append(text)
        if "selected" in opt.attributes:
            selected.append(options[-1])
    if "multiple" in node.attributes:
        default = tuple(selected)
    elif selected:
        default = (selected[-1],)   # the last selected option wins in a single select
    else:
        default = tuple(options[:1])
    return FormInput(name, "select", "select", tuple(options), tuple(labels), default, ident, label)


def _label(node, label_for: dict[str, str]) -> str:
    """What a person reads for the control: aria-label, its <label>, placeholder, title."""
    attrs = node.attributes
    parts = [attrs.get("aria-label"), label_for.get(attrs.get("id") or "\0")]
    parent = node.parent
    for _ in range(3):   # a wrapping <label> (close by: never the whole page)
        if parent is None or parent.tag == "form":
            break
        if parent.tag == "label":
            parts.append(parent.text(separator=" "))
            break
        parent = parent.parent
    parts += [attrs.get("placeholder"), attrs.get("title")]
    seen: list[str] = []
    for p in map(_collapse, parts):
        if p and p not in seen:
            seen.append(p)
    return " / ".join(seen)[:200]


# ------------------------------------------------------------------------------------------ classification

# Words are compared after splitting on anything but letters and digits and on camelCase, lower-cased,
# with a plural "s" removed: "newsletterSignup" -> newsletter signup, "add-to-cart" -> add to cart.

#: Words anywhere in a form's own attributes (id, name, class, aria-label, title), its legend and
#: headings, its action path and its submit buttons' labels, names and values, that make it a form
#: which changes something or identifies someone: never submitted.
_FORM_WORDS = frozenset("""
    login logon signin logout signout signup register registration auth authenticate authentication
    password passwd subscribe subscription unsubscribe newsletter mailinglist vote voting poll
    comment reply cart basket checkout wishlist purchase buy donate donation payment contact
    feedback enquiry inquiry message captcha upload delete remove rsvp survey booking reservation
    """.split())
#: The same, written as two or three words.
_FORM_PHRASES = ("log in", "log on", "sign in", "sign up", "sign on", "log out", "sign out",
                 "add to cart", "add to basket", "add to bag", "buy now", "place order", "order now",
                 "mailing list", "create account", "my account", "forgot password", "reset password",
                 "check out", "e mail", "post comment", "leave a comment", "write a review")
#: Words and phrases that make a form one that acts on what it is about, only where they name the
#: act: the last segment of the action's path (``/recipe/17/rate``) or a submit button ("Join",
#: "Add your own tip"). In a heading or a plural path they are a search's ("Filter by rating",
#: ``/rates/search``, "Tell us what you are looking for").
_ACT_WORDS = frozenset("rate rating join enroll enrol".split())
_ACT_PHRASES = ("add your", "your own", "share your", "tell us")
#: A submit button that says only one of these adds or sends something ("Add" under "Share a
#: cooking tip" on each record page of a hold-out site); no search button says only that.
_ACT_BUTTONS = frozenset("add post share send publish save".split())
#: Words in an input's name, id, label or placeholder that ask for something a search never asks
#: for: credentials, contact details, a message, a quantity to buy.
_FIELD_WORDS = frozenset("""
    email mail password passwd pwd username login passcode comment message quantity qty captcha phone
    telephone cvv cvc
    """.split())
_FIELD_PHRASES = ("e mail", "user name", "your name", "first name", "last name", "credit card",
                  "card number")
#: A PIN beside a field that names someone (a member number and a PIN: a log-in without a password
#: box); a PIN code alone is a postcode in a store locator.
_PIN_WORDS = frozenset("pin pincode pinnumber".split())
_WHO_WORDS = frozenset("user userid member account card customer id number no".split())
#: An e-mail address in a placeholder or value ("you@example.com"; "Search @people" is no address).
_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")
#: Hidden inputs named like anti-forgery tokens: state-changing forms carry them, searches do not.
_TOKEN_NAME = re.compile(r"csrf|xsrf|authenticity_?token|requestverificationtoken|^_?token$|nonce",
                         re.I)

_SPLIT = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _words(*texts: str | None) -> str:
    """The texts as one string of lower-case words, singular, each word with a space either side."""
    out = []
    for text in texts:
        if text:
            for w in _SPLIT.findall(_CAMEL.sub(" ", text)):
                w = w.lower()
                out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return " " + " ".join(out) + " "


def _match(words: str, single: frozenset[str], phrases: tuple[str, ...]) -> str | None:
    for w in words.split():
        if w in single:
            return w
    for p in phrases:
        if f" {p} " in words:
            return p
    return None


def classify(form: Form) -> tuple[bool, str]:
    """``(True, "searchable")`` if the form may be submitted, else ``(False, why)``.

    In order: only GET (POST and dialog forms change things or need a body); the action must be an
    http(s) URL; no password or file input; no e-mail input; no anti-forgery token; none of the
    words of ``_FORM_WORDS``/``_FORM_PHRASES`` in what describes the form, nor of ``_ACT_WORDS``/
    ``_ACT_PHRASES`` in the action's last path segment or a submit button, nor of
    ``_FIELD_WORDS``/``_FIELD_PHRASES`` in what describes an input that is not hidden (nor an e-mail
    address in its placeholder, nor a PIN beside a field naming someone); no textarea (a
    message box: "Report a problem", "Tell us more"; search boxes are one line); and at least one
    text box, select, radio group or checkbox to fill in. The rules err on the side of not
    submitting: a search form called "newsletter search" is lost, a newsletter form is never sent.
    """
    if form.method != "get":
        return False, f"method {form.method.upper()}: only GET forms are submitted"
    if form.action is None:
        return False, "the action is not an http(s) URL"
    for inp in form.inputs:
        if inp.kind in ("password", "file", "email"):
            return False, f"{inp.kind} input {inp.name!r}"
        if inp.kind == "hidden" and _TOKEN_NAME.search(inp.name):
            return False, f"anti-forgery token {inp.name!r}: the form changes something"
    buttons = [x for i in form.inputs if i.kind == "submit" for x in (i.name, i.id, i.label, *i.labels,
                                                                       *i.default)]
    described = _words(form.id, form.name, form.css_class, form.text, urlsplit(form.action).path,
                       *buttons)
    hit = _match(described, _FORM_WORDS, _FORM_PHRASES)
    if hit:
        return False, f"looks like a {hit} form (its attributes, action or buttons)"
    hit = _match(_words(urlsplit(form.action).path.rstrip("/").rpartition("/")[2], *buttons),
                 _ACT_WORDS, _ACT_PHRASES)
    if hit:
        return False, f"acts on what it is about: {hit!r} (its action or buttons)"
    fields = []
    for inp in form.inputs:
        if inp.kind not in ("hidden", "submit"):
            words = _words(inp.name, inp.id, inp.label)
            hit = _match(words, _FIELD_WORDS, _FIELD_PHRASES)
            if hit:
                return False, f"input {inp.name!r} asks for {hit!r}"
            if inp.kind in FREE_TEXT and any(_EMAIL.search(x) for x in (inp.label, *inp.default)):
                return False, f"input {inp.name!r} asks for an e-mail address (its placeholder or value)"
            fields.append(set(words.split()))
    if any(f & _PIN_WORDS for f in fields) and any(f & _WHO_WORDS and not f & _PIN_WORDS for f in fields):
        return False, "it asks for someone's number and PIN: a log-in"
    for inp in form.inputs:
        if inp.kind == "textarea":
            return False, f"textarea {inp.name!r}: it asks for a message, a search asks for a few words"
    if not any(i.kind in ENUMERATED or i.kind in FREE_TEXT for i in form.inputs if i.name):
        return False, "nothing to fill in (no named text box, select, radio or checkbox)"
    bare = next((b for b in buttons if b and _words(b).split() in ([w] for w in _ACT_BUTTONS)), None)
    if bare is not None:
        return False, f"acts on what it is about: a {bare!r} button"
    return True, "searchable"


# ------------------------------------------------------------------------------------------ submissions


def submission_url(form: Form, binding: Mapping[str, str]) -> str:
    """The GET URL a browser sends for ``form`` with the inputs named in ``binding`` set to its
    values and every other input left alone: hidden inputs keep their values, unbound text boxes
    send their value (often empty), a select its selected option, checked boxes their values, and
    the first submit button (the one Enter presses) its name and value if it has a name (an image
    button: ``name.x=0&name.y=0``). A checkbox group bound to ``""`` sends nothing. In tree order,
    ``application/x-www-form-urlencoded``, UTF-8. Raises ``ValueError`` for a form without an
    http(s) action.
    """
    if form.action is None:
        raise ValueError("the form's action is not an http(s) URL")
    pairs: list[tuple[str, str]] = []
    bound: set[str] = set()
    submitter = next((i for i in form.inputs if i.kind == "submit"), None)
    for inp in form.inputs:
        if not inp.name and not (inp is submitter and inp.type == "image"):
            continue
        if inp.kind == "submit":
            if inp is submitter:
                if inp.type == "image":
                    prefix = f"{inp.name}." if inp.name else ""
                    pairs += [(prefix + "x", "0"), (prefix + "y", "0")]
                else:
                    pairs.append((inp.name, inp.default[0] if inp.default else ""))
            continue
        if inp.kind in ("password", "file"):
            continue
        if inp.name in binding and inp.name not in bound:
            bound.add(inp.name)
            value = binding[inp.name]
            if value or inp.kind != "checkbox":
                pairs.append((inp.name, value))
        else:
            pairs += [(inp.name, v) for v in inp.default]
    return urls.canonicalize(form.action + ("?" + urlencode(pairs) if pairs else ""))


_WORD = re.compile(r"[^\W\d_][^\W_]*")


def words_of(text: str) -> list[str]:
    """The words of ``text``, lower-case, in order: letters and digits, starting with a letter
    (numbers alone are not words here: result counts and page numbers say nothing of content)."""
    return _WORD.findall(text.lower())


def result_signature(text: str, submission: str) -> str:
    """A signature of a result page's main text that leaves out the words the submission sent, so
    that 'No records match “xyz”' is the same page whatever xyz was (the informativeness test
    counts distinct signatures). 16 hex digits."""
    sent = {w for _, v in parse_qsl(urlsplit(submission).query) for w in words_of(v)}
    return xxhash.xxh3_64_hexdigest(" ".join(w for w in words_of(text) if w not in sent).encode())


# ------------------------------------------------------------------------------------------ planning

#: Words never probed: they match nearly everything, or nothing, on any site.
_STOPWORDS = frozenset("""
    the and for are but not you all any can had her was one our out has him his how its may new now
    old see two way who did get let put say she too use with that this from have they will your
    what when where which while would there their them then than these those been being were into
    about after again also before between both could does each more most only other over same
    should some such through under until very just here why because off own few once
    """.split())

_BAND_MEMORY = 5      # a frequency band's yield: the mean of its last 5 reported submissions
_BAND_HORIZON = 200   # ... among the text template's last 200 submissions (older ones: forgotten)


@dataclass
class _Submission:
    url: str
    template: int
    binding: dict[str, str]
    source: int = -1                 # combinations: the submission whose result set this one splits
    band: int = 0                    # probing: the word's frequency band when chosen (0: none)
    signature: str | None = None     # None until reported
    new_links: int = 0
    pages: int = 0
    paged: bool = False              # its first result page links to a further page of the same query


@dataclass
class _Template:
    inputs: list[str]                # the bound inputs, by name
    # still to submit: [source, input, value]: the source submission's binding (none: -1) and
    # input = value
    queue: list[list] = field(default_factory=list)
    status: str = "testing"          # testing -> kept | dropped
    reason: str = ""
    subs: list[int] = field(default_factory=list)     # its submissions (numbers), in the order issued
    sources: list[int] = field(default_factory=list)  # combinations: the rows already queued
    text: str = ""                   # one-input text templates: the text box they probe
    # a text template's inputs held at one value in its every submission (a select the site
    # requires: FormPlanner._pin)
    base: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A text template's key for the words it has tried: its text box, and what it holds."""
        return self.text if not self.base else self.text + "?" + urlencode(sorted(self.base.items()))


class FormPlanner:
    """Which GET submissions of one searchable form to make, within ``budget`` (Madhavan et al.).

    *Query templates.* A template is a set of bound inputs; the others keep their defaults. The
    planner starts with one template per input it can fill in, one bound input each: a select,
    radio group or checkbox group is bound to each of its values but the default in turn; a text
    box to words found by iterative probing. A template is tested on its first ``sample``
    submissions: it is *informative* if its result pages have at least two distinct content
    signatures and distinct signatures are at least ``tau`` of its submissions (a text box the site
    ignores, or a select whose every value gives the same "no results" page, is not), and
    *productive* if they led to new links. Only a template that is both is kept; a kept template is
    dropped again when, over its last ``window`` submissions, it stops being either.

    *Combining inputs*, only where it reaches new results: a submission of a kept template whose
    first result page links to a further page of the same query (its result set may be cut short,
    as sites cap what one query shows) is combined with each value of every other kept select,
    radio or checkbox template of at most ``max_combine`` values (two inputs at most). A word that
    names one of the select's options is not combined with it (the select already asks that). A row
    of combinations is abandoned when its first ``row_test`` submissions bring nothing new, and the
    combined template is tested and kept like any other.

    *Iterative probing.* A text box gets, first, the seed words (``--topic`` and ``--form-words``),
    in order; then the empty query, once (many sites list every record for it: a blog's ``?s=``);
    then the words of the reported result pages, which grow with every page the site
    returns (stop words, words of fewer than three letters and the site's chrome, words on more than
    half of the result pages, are skipped); then the words of the form's page and of the site's other
    pages (``site_words``: its home page and what that links to) in turn, and the labels of the
    form's options (the enumerated inputs ask them already) last. A text box whose sample found
    nothing goes on while the site's words last, up to ``SITE_PROBES`` samples. A text box that gave
    one page whatever it was sent, beside a select that sends nothing by default, is tested again
    with the select held at its most productive value (:meth:`_pin`). A text
    box is tested after the enumerated inputs, so that its sample is drawn from result pages, as
    its later words will be, and not only from the form's own labels (a site whose records never
    use them would have it dropped on ten words no record holds). Result words are grouped in frequency bands by how many result pages
    showed them (1, 2-3, 4-7, ...); the next word is the most frequent of the band whose last
    submissions led to the most new links (a band not tried yet first, the most frequent band
    first): how frequent a good query word is depends on the site (words that many records share
    reach only the first results of a capped query), so it is learnt from the yields.

    *Budget.* Each submission issued counts, reported or not, and none is issued twice. Samples of
    templates under test go first (enumerated and combined ones before text boxes); then each submission goes to the kept template whose next
    submission is expected to find the most new links, judged by the last similar ones (the same
    frequency band, the same row of combinations, else the template's last ``window``; ties: the
    older template). At most ``max_pending`` submissions are unreported at a time, so each choice
    sees the evidence of the earlier ones. The planner stops before the budget when every template
    is dropped or has nothing left to try.

    The caller (the crawl loop) puts :meth:`next_submissions` in the frontier, reports each one's
    first result page with :meth:`report` (its signature, words, links and the number of new links
    the URL-seen test found), and every further result page it reaches through that page's links
    with :meth:`report_more`. A submission that fails is reported with its error as the signature.
    Deterministic: the same reports in the same order give the same submissions; :meth:`to_json`
    and :meth:`from_json` carry the whole state. A form :func:`classify` rejects raises
    ``ValueError``.
    """

    def __init__(self, form: Form, *, budget: int = DEFAULT_BUDGET, seed_words: Iterable[str] = (),
                 page_words: Iterable[str] = (), site_words: Iterable[str] = (), other_forms: Iterable[Form] = (),
                 sample: int = 10, tau: float = 0.25,
                 window: int = 20, max_pending: int = 8, max_combine: int = 20, row_test: int = 3,
                 max_words: int = 5000) -> None:
        searchable, why = classify(form)
        if not searchable:   # defence in depth: nothing but a searchable GET form is ever planned
            raise ValueError(f"form not searchable: {why}")
        self.form = form
        self.budget = budget
        self.params: dict[str, Any] = {"sample": sample, "tau": tau, "window": window, "max_pending": max_pending,
                       "max_combine": max_combine, "row_test": row_test, "max_words": max_words}
        labels = [lab for i in form.inputs if i.kind in ENUMERATED for lab in i.labels]
        self.seeds = _probe_words(seed_words)
        self.labels = _probe_words(labels)
        # the page's words but those of its other forms (a newsletter's "weekly recipes", a log-in's
        # "sign"): site chrome, not the records' words
        chrome = set(_probe_words(_form_words(f) for f in other_forms))
        on_page = _probe_words(page_words)
        # the words of the site's other pages (its home, its about page) but the form page's: the
        # header, menu and footer they share with it are left out with them; and the form page's
        # words that more than half of those pages show are its chrome ("home", "archive")
        others = list(site_words)
        spread = _spread(others)
        menu = {w for w, n in spread.items() if n * 2 > len(others)} if len(others) >= 2 else set()
        self.page_words = [w for w in on_page if w not in chrome and w not in menu]
        seen = chrome.union(on_page)
        self.site_words = [w for w in sorted(spread, key=lambda w: -spread[w]) if w not in seen][:SITE_WORDS]
        self.counts: dict[str, int] = {}      # word -> result pages that showed it
        self.pages = 0                        # result pages reported
        self.tried: dict[str, dict[str, None]] = {}   # text box -> words submitted (ordered set)
        self.subs: dict[str, _Submission] = {}   # by URL, in the order issued
        self.order: list[_Submission] = []       # by number
        ones = (self._one_input(i) for i in form.inputs
                if i.name and (i.kind in ENUMERATED or i.kind in FREE_TEXT))
        self.templates = [t for t in ones if t is not None]
        self._memo: dict[str, str | None] = {}

    def _one_input(self, inp: FormInput) -> _Template | None:
        if inp.kind in FREE_TEXT:
            t = _Template([inp.name], text=inp.name)
            self.tried.setdefault(t.key, {})
            return t
        values = _values(inp)
        return _Template([inp.name], [[-1, inp.name, v] for v in values]) if values else None

    # -------------------------------------------------------------- choosing

    @property
    def submitted(self) -> int:
        return len(self.subs)

    def pending(self) -> list[str]:
        """Submissions issued and not reported yet (after a restart the loop fetches them again)."""
        return [s.url for s in self.order if s.signature is None]

    @property
    def done(self) -> bool:
        """Nothing more will be issued and nothing is waiting for a report."""
        return not self.pending() and (self.submitted >= self.budget or self._pick() is None)

    def next_submissions(self, limit: int = 1) -> list[str]:
        """Up to ``limit`` new submission URLs; fewer when the budget, the pending limit or the
        templates say so (more may come after the next reports)."""
        out: list[str] = []
        room = self.params["max_pending"] - len(self.pending())
        while len(out) < min(limit, room) and self.submitted < self.budget:
            url = self._issue()
            if url is None:
                break
            out.append(url)
        return out

    def _issue(self) -> str | None:
        while (index := self._pick()) is not None:
            t = self.templates[index]
            source, binding, band = self._take(t)
            self._memo.clear()
            url = submission_url(self.form, binding)
            if url in self.subs:
                continue   # another binding made the same URL: nothing spent
            sub = _Submission(url, index, binding, source, band)
            t.subs.append(len(self.order))
            self.subs[url] = sub
            self.order.append(sub)
            return url
        return None

    def _pick(self) -> int | None:
        """The template of the next submission, or None if none has one left: a template under
        test first (the oldest), then the kept template whose next submission is expected to
        find the most new links (:meth:`_expected`)."""
        best, best_yield, text = None, -1.0, None
        for index, t in enumerate(self.templates):
            if t.status == "testing" and self._has_next(t) and (
                    len(t.subs) < self.params["sample"] or self._probing(t)):
                if not t.text:
                    return index
                if text is None:
                    text = index
            if t.status == "kept" and self._has_next(t):
                y = self._expected(t)
                if y > best_yield:
                    best, best_yield = index, y
        return text if text is not None else best

    def _has_next(self, t: _Template) -> bool:
        return bool(t.queue) or (bool(t.text) and self._next_word(t) is not None)

    def _take(self, t: _Template) -> tuple[int, dict[str, str], int]:
        """The template's next (source, binding, band), consumed; only when ``_has_next(t)``."""
        if t.queue:
            source, name, value = t.queue.pop(0)
            base = self.order[source].binding if source >= 0 else {}
            return source, {**base, name: value}, 0
        word, band = self._next_word(t), self._next_band(t)
        assert word is not None
        self.tried[t.key][word] = None
        return -1, {**t.base, t.text: word}, band

    def _expected(self, t: _Template) -> float:
        """New links the template's next submission should find, by the last similar ones: for
        a probed text box, those of the frequency band its next word is from (infinite for a band
        not tried yet); in a row of combinations under way, the row's; else the template's last
        ``window`` submissions'."""
        if t.text and not t.queue:
            return self._band_score(t, self._next_band(t))
        source = t.queue[0][0]
        done = self._reported(t)
        row = [s for s in done if source >= 0 and s.source == source]
        recent = row or done[-self.params["window"]:]
        return sum(s.new_links for s in recent) / len(recent) if recent else 0.0

    def _next_word(self, t: _Template) -> str | None:
        """The word a one-input text template probes next (see the class docstring)."""
        if t.key not in self._memo:
            self._memo[t.key] = self._choose_word(t)
        return self._memo[t.key]

    def _choose_word(self, t: _Template) -> str | None:
        tried = self.tried[t.key]
        for w in self.seeds:
            if w not in tried:
                return w
        if "" not in tried:   # the empty query: many sites list every record for it (a blog's ?s=)
            return ""
        tops = self._band_tops(t)
        if tops:
            return tops[max(tops, key=lambda band: (self._band_score(t, band), band))][1]
        fallback = itertools.chain(_alternate(self.page_words, self.site_words), self.labels)
        return next((w for w in fallback if w not in tried), None)

    def _next_band(self, t: _Template) -> int:
        """The frequency band of the word ``t`` probes next (0: a seed or a page word)."""
        word = self._next_word(t)
        return 0 if word is None or word in self.seeds else self.counts.get(word, 0).bit_length()

    def _band_tops(self, t: _Template) -> dict[int, tuple[int, str]]:
        """Frequency band -> (count, word) of its most frequent word not tried in ``t``'s text box
        (the earliest seen among equals), leaving out the site's chrome: words on more than half
        of the result pages, and the form page's words (they come last)."""
        tried = self.tried[t.key]
        chrome = self.pages // 2 if self.pages >= 4 else self.pages + 1
        page = frozenset(self.page_words)
        tops: dict[int, tuple[int, str]] = {}
        for w, c in self.counts.items():
            band = c.bit_length()
            if c <= chrome and w not in tried and w not in page and (band not in tops or c > tops[band][0]):
                tops[band] = (c, w)
        return tops

    def _band_score(self, t: _Template, band: int) -> float:
        """Mean new links of the last ``_BAND_MEMORY`` reported submissions of ``band`` (seeds:
        band 0) among ``t``'s last ``_BAND_HORIZON``; infinite for a band without any."""
        got: list[int] = []
        for number in reversed(t.subs[-_BAND_HORIZON:]):
            s = self.order[number]
            if s.band == band and s.signature is not None:
                got.append(s.new_links)
                if len(got) == _BAND_MEMORY:
                    break
        return sum(got) / len(got) if got else float("inf")

    # -------------------------------------------------------------- evidence

    def report(self, url: str, *, signature: str, words: Iterable[str] = (),
               links: Iterable[str] = (), new_links: int = 0) -> None:
        """The first result page of submission ``url``: the signature of its main content
        (:func:`result_signature`), its words, its links, and how many of them were new to the
        crawl. Unknown URLs and second reports are ignored."""
        sub = self.subs.get(url)
        if sub is None or sub.signature is not None:
            return
        sub.signature = signature
        sub.paged = _paged(url, links)
        self._add_page(sub, words, new_links)
        template = self.templates[sub.template]
        if sub.source >= 0:
            self._check_row(template, sub.source)
        self._evaluate(template)
        self._combine()

    def report_more(self, url: str, *, words: Iterable[str] = (), new_links: int = 0) -> None:
        """A further result page of submission ``url``, reached through its next-page links."""
        sub = self.subs.get(url)
        if sub is not None and sub.signature is not None:
            self._add_page(sub, words, new_links)

    def _add_page(self, sub: _Submission, words: Iterable[str], new_links: int) -> None:
        self._memo.clear()
        sub.pages += 1
        sub.new_links += max(0, new_links)
        if new_links <= 0:
            # a page that led nowhere new (a "Sorry, nothing found", or records already reached)
            # teaches no words: a "no results" page's own words were probed first, and ten of them
            # had the text box dropped (hold-out sites at 0 % of their records)
            return
        self.pages += 1
        counts = self.counts
        for w in _probe_words(words):
            counts[w] = counts.get(w, 0) + 1
        if len(counts) > self.params["max_words"]:   # forget the rarest (the latest among equals)
            keep = set(sorted(counts, key=lambda w: -counts[w])[:self.params["max_words"]])
            self.counts = {w: c for w, c in counts.items() if w in keep}

    def _evaluate(self, t: _Template) -> None:
        p = self.params
        done = self._reported(t)
        if t.status == "testing":
            if len(done) >= p["sample"] or (len(done) == len(t.subs) and not self._has_next(t)):
                why = self._verdict(done)
                if why is not None and t.text and len(done) > p["sample"] and done[-1].new_links:
                    why = None   # the site's words found records after a sample of misses: kept, and
                    # judged from here on over its last `window` submissions, as any kept template
                elif why is not None and self._probe_on(t, done):
                    return
                t.status, t.reason = ("kept", "informative") if why is None else ("dropped", why)
        elif t.status == "kept" and len(done) >= p["window"]:
            why = self._verdict(done[-p["window"]:])
            if why is not None:
                t.status, t.reason = "dropped", f"{why} over its last {p['window']} submissions"
        if t.status == "dropped":
            t.queue.clear()
            if t.text and not t.base and t.reason.startswith("not informative: 1 "):
                self._pin(t)

    def _pin(self, t: _Template) -> None:
        """A text box that gave one page whatever it was sent, with the other inputs at their
        defaults, is tested again with a select (radio group) that sends nothing by default held
        at its most productive value: a site may answer every query with "choose a department
        first" until one is chosen (a hidden site reached 360 of its 1,400 records through the
        select alone). Once per text box; its words are tried anew."""
        inputs = {i.name: i for i in self.form.inputs}
        best: tuple[int, str, str] | None = None
        for e in self.templates:
            if len(e.inputs) != 1 or e.text or e.status == "dropped":
                continue
            inp = inputs.get(e.inputs[0])
            if inp is None or inp.kind not in ("select", "radio") or (inp.default and inp.default[0]):
                continue
            for s in self._reported(e):
                value = s.binding.get(inp.name)
                if s.new_links and value and (best is None or s.new_links > best[0]):
                    best = (s.new_links, inp.name, value)
        if best is None or any(u.text == t.text and u.base for u in self.templates):
            return
        pinned = _Template([t.text], text=t.text, base={best[1]: best[2]})
        self.tried.setdefault(pinned.key, {})
        self.templates.append(pinned)

    def _probe_on(self, t: _Template, done: list[_Submission]) -> bool:
        """Whether a text box whose sample found nothing goes on being tested: while words of the
        site's other pages are left to try, up to SITE_PROBES x ``sample`` submissions. Its sample
        drew on the form page's few words and the site's most widespread ones; a hold-out archive's
        records shared words with its home page, twelfth of them by how widespread."""
        if not t.text or any(s.new_links for s in done) or len(t.subs) >= SITE_PROBES * self.params["sample"]:
            return False
        tried = self.tried[t.key]
        return any(w not in tried for w in self.site_words)

    def _probing(self, t: _Template) -> bool:
        """A text box past its sample, every submission reported, still tested (:meth:`_probe_on`)."""
        done = self._reported(t)
        return bool(t.text) and len(done) == len(t.subs) and self._probe_on(t, done)

    def _reported(self, t: _Template) -> list[_Submission]:
        return [s for s in map(self.order.__getitem__, t.subs) if s.signature is not None]

    def _verdict(self, done: list[_Submission]) -> str | None:
        """None if these submissions are informative and productive, else why not. A submission
        that found links new to the crawl showed a result page unlike every earlier one, whatever
        its signature says (a site whose result list the main text misses gives every query the
        same signature): each of those counts as distinct, and the others by their signatures (a
        text box whose labels' words found records twice in ten, and the same "nothing found"
        page eight times, has three distinct pages, not two)."""
        found = [s.signature for s in done if s.new_links]   # each a page unlike every other
        distinct = len(found) + len({s.signature for s in done if not s.new_links} - set(found))
        if distinct < 2 or distinct < self.params["tau"] * len(done):
            return f"not informative: {distinct} distinct result pages of {len(done)}"
        if not any(s.new_links for s in done):
            return "no new links"
        return None

    def _check_row(self, t: _Template, source: int) -> None:
        """Abandon a row of combinations whose first ``row_test`` submissions brought nothing."""
        reported = [s for s in self._reported(t) if s.source == source]
        if len(reported) >= self.params["row_test"] and not any(s.new_links for s in reported):
            t.queue = [q for q in t.queue if q[0] != source]

    def _combine(self) -> None:
        """Queue the rows of combinations that paged submissions call for (class docstring)."""
        kept = [t for t in self.templates if len(t.inputs) == 1 and t.status == "kept"]
        inputs = {i.name: i for i in self.form.inputs}
        for a in kept:
            paged = [n for n in a.subs if self.order[n].paged]
            for b in kept if paged else ():
                inp = inputs[b.inputs[0]]
                values = _values(inp) if b is not a and inp.kind in ENUMERATED else []
                if not values or len(values) > self.params["max_combine"]:
                    continue
                named = {w for label in inp.labels for w in words_of(label)}
                pair = self._pair(a, b)
                for n in paged:
                    if n in pair.sources:
                        continue
                    pair.sources.append(n)
                    if not (a.text and set(words_of(self.order[n].binding[a.text])) <= named):
                        pair.queue += [[n, b.inputs[0], v] for v in values]

    def _pair(self, a: _Template, b: _Template) -> _Template:
        order = [i.name for i in self.form.inputs]
        names = sorted(a.inputs + b.inputs, key=order.index)
        for t in self.templates:
            if t.inputs == names:
                return t
        self.templates.append(_Template(names))
        return self.templates[-1]

    # -------------------------------------------------------------- reporting and state

    def summary(self) -> dict[str, Any]:
        """What ``skitter stats`` shows of the form: submissions, new links, each template."""
        return {"submitted": self.submitted, "reported": self.submitted - len(self.pending()),
                "budget": self.budget, "new_links": sum(s.new_links for s in self.subs.values()),
                "templates": [{"inputs": t.inputs, "fixed": t.base, "status": t.status, "reason": t.reason,
                               "submitted": len(t.subs),
                               "new_links": sum(self.order[n].new_links for n in t.subs)}
                              for t in self.templates]}

    def to_json(self) -> str:
        """The whole state, the form included, as one JSON string."""
        return json.dumps({
            "version": 1, "form": self.form.to_dict(), "budget": self.budget, "params": self.params,
            "seeds": self.seeds, "labels": self.labels, "page_words": self.page_words,
            "site_words": self.site_words, "counts": self.counts,
            "pages": self.pages, "tried": {k: list(v) for k, v in self.tried.items()},
            "subs": [list(vars(s).values()) for s in self.order],
            "templates": [vars(t) for t in self.templates]}, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str) -> FormPlanner:
        """The planner :meth:`to_json` saved, ready to go on where it stopped."""
        d = json.loads(data)
        if d.get("version") != 1:
            raise ValueError(f"unknown form planner state version {d.get('version')!r}")
        self = cls.__new__(cls)
        self.form = Form.from_dict(d["form"])
        self.budget, self.params = d["budget"], d["params"]
        self.seeds, self.labels, self.page_words = d["seeds"], d.get("labels", []), d["page_words"]
        self.site_words = d.get("site_words", [])
        self.counts, self.pages = d["counts"], d["pages"]
        self.tried = {k: dict.fromkeys(v) for k, v in d["tried"].items()}
        self.order = [_Submission(*s) for s in d["subs"]]
        self.subs = {s.url: s for s in self.order}
        self.templates = [_Template(**t) for t in d["templates"]]
        self._memo = {}
        return self


def _values(inp: FormInput) -> list[str]:
    """An enumerated input's values to try: each option (and, for checkboxes, none checked),
    except what the input sends when left alone."""
    values = list(dict.fromkeys(inp.options))
    if inp.kind == "checkbox":
        values.append("")
    default = inp.default[0] if len(inp.default) == 1 else ("" if not inp.default else None)
    return [v for v in values if v != default]


def _form_words(form: Form) -> str:
    """The words a person reads on ``form``: its legend and headings, its inputs' labels and
    options' labels, its buttons' values."""
    parts = [form.text]
    for i in form.inputs:
        parts += [i.label, *i.labels]
        if i.kind not in FREE_TEXT and i.kind not in ENUMERATED:   # a button's value is its text
            parts += list(i.default)
    return " ".join(p for p in parts if p)


def _probe_words(texts: Iterable[str]) -> list[str]:
    """The distinct words of ``texts`` worth probing a text box with, in first-seen order."""
    words = (w for text in texts for w in words_of(text))
    return [w for w in dict.fromkeys(words) if len(w) >= 3 and w not in _STOPWORDS]


def _spread(texts: Iterable[str]) -> dict[str, int]:
    """Each probe word of ``texts`` -> how many of them show it (in first-seen order)."""
    pages: dict[str, int] = {}
    for text in texts:
        for w in _probe_words([text]):
            pages[w] = pages.get(w, 0) + 1
    return pages


def _alternate(a: list[str], b: list[str]) -> Iterator[str]:
    """a[0], b[0], a[1], b[1], ... and the rest of the longer."""
    for x, y in itertools.zip_longest(a, b):
        if x is not None:
            yield x
        if y is not None:
            yield y


def _paged(url: str, links: Iterable[str]) -> bool:
    """Whether one of ``links`` is another page of the query ``url`` (:func:`is_result_page`)."""
    return any(is_result_page(url, link) for link in links)


# path segments that name a page number after them (WordPress's /page/2/?s=word)
_PAGE_SEGMENTS = frozenset({"page", "pages", "paged", "p", "pg", "seite", "pagina"})


def _page_in_path(path: str, other: str) -> bool:
    """Whether ``other`` is ``path`` with a page number's two segments put in (``/`` and
    ``/page/2/``, ``/search`` and ``/search/page/3``)."""
    a = [s for s in path.split("/") if s]
    b = [s for s in other.split("/") if s]
    if len(b) != len(a) + 2:
        return False
    for i in range(len(a) + 1):
        if b[:i] == a[:i] and b[i + 2:] == a[i:]:
            return b[i].lower() in _PAGE_SEGMENTS and b[i + 1].isdigit()
    return False


def is_result_page(submission: str, url: str) -> bool:
    """Whether ``url`` is a further page of the results of ``submission``: the same host and path,
    every pair the submission sent, and a name it did not send (``page=2``, ``start=10``); or the
    same pairs and the path with a page number put in (WordPress's ``/page/2/?s=word`` after
    ``/?s=word``: a segment such as ``page`` or ``p`` and the number). A site's
    next-page links often leave out the empty fields (``?q=&c=a`` goes on at ``?c=a&page=2``): when
    the submission sent a field with a value, its empty ones may be missing. An empty query (every
    field empty) may go on with none of them (``?q=&c=`` at ``?page=2``), but not with one of them
    set (``?q=x&page=2`` is another query)."""
    parts, other = urlsplit(submission), urlsplit(url)
    if other.netloc != parts.netloc:
        return False
    sent = parse_qsl(parts.query, keep_blank_values=True)
    got = parse_qsl(other.query, keep_blank_values=True)
    names = {k for k, _ in sent}
    if other.path != parts.path:
        if not _page_in_path(parts.path, other.path):
            return False
    elif not any(k not in names for k, _ in got):
        return False
    need = [p for p in sent if p[1]]
    if not need:
        return all(not v for k, v in got if k in names)
    return all(p in got for p in need)
