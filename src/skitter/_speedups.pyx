# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled versions of the hottest loops of the worker and of the near-duplicate index, used
when this module was built (it is optional: ``skitter.parse`` and ``skitter.dedup`` fall back to
their Python versions, which stay the reference the tests compare these with):

- :func:`walk`: ``skitter.parse._walk`` over lexbor's tree, reading lexbor's node, element and
  attribute structures directly instead of creating a Python object per node;
- :func:`ascii_codepoints`, :func:`alnum_codepoints`, :func:`fill_powers`, :func:`kgram_hashes`,
  :func:`select_below`: ``skitter.dedup``'s normalisation, k-gram hashing and winnowing selection,
  each in one pass instead of several NumPy passes (and without NumPy: ``skitter.winnow``);
- :func:`count_postings`, :func:`gen_candidates`, :func:`run_lookup`, :func:`merge_runs`: the
  near-duplicate index's lookups and merges (``skitter.dedup.NearDupIndex``, ``_Run``);
- :func:`words`, :func:`column`: the search index's analyzer (``skitter.index.analyze.words`` and
  ``.column``): case folding, diacritics, the split into words, stop words and the length limit in
  one pass over the text, and the stems from a cache.

The tree is the one selectolax built: a node's address is its ``mem_id``. selectolax does not
publish lexbor's headers or C API to other extensions, so the structure layouts below are
declared here: lexbor's, as selectolax 1.0.x bundles it (lexbor 3.1). :func:`setup` checks them
against selectolax on a sample document before ``skitter.parse`` uses :func:`walk`, and
``skitter.parse`` also compares the whole walk's result with its Python walk on that document;
any difference and the Python walk is used.
"""

from libc.stdint cimport uintptr_t, uint64_t, uint32_t, uint8_t, int32_t, int64_t
from libc.math cimport floor
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcmp, memcpy
from cpython.unicode cimport (PyUnicode_DecodeUTF8, PyUnicode_DATA, PyUnicode_READ, PyUnicode_KIND,
                              PyUnicode_GET_LENGTH, Py_UNICODE_ISALNUM, PyUnicode_FromKindAndData,
                              PyUnicode_1BYTE_KIND, PyUnicode_4BYTE_KIND)
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_GetPointer

from array import array as _array

# no NumPy: the crawl process (the near-duplicate index) and the index process (the tokenizer) do
# without it (about 15 MB of a process's memory); the index's arrays are array.array buffers
cdef object _array_q = _array("q", [0])

cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil

cdef extern from *:
    """
    /* lexbor (lexbor/core/str.h, lexbor/core/hash.h, lexbor/dom/interfaces/node.h, element.h,
       attr.h, character_data.h), up to the last member skitter reads. */
    typedef struct { unsigned char *data; size_t length; } sk_str_t;
    typedef struct sk_node_s sk_node_t;
    struct sk_node_s {
        void *events;                 /* lxb_dom_event_target_t */
        uintptr_t local_name;         /* the tag id (an attribute's name id) */
        uintptr_t prefix;
        uintptr_t ns;
        void *owner_document;
        sk_node_t *next, *prev, *parent, *first_child, *last_child;
        void *user;
        int type;                     /* lxb_dom_node_type_t */
    };
    typedef struct { sk_node_t node; sk_str_t data; } sk_chardata_t;
    typedef struct sk_attr_s sk_attr_t;
    struct sk_attr_s {
        sk_node_t node;
        uintptr_t upper_name, qualified_name;
        sk_str_t *value;
        void *owner;
        sk_attr_t *next, *prev;
    };
    typedef struct {
        sk_node_t node;
        uintptr_t upper_name, qualified_name;
        sk_str_t *is_value;
        sk_attr_t *first_attr, *last_attr;
    } sk_element_t;
    /* lexbor_hash_entry_t: a name that has no static id (an attribute id that is a pointer) */
    typedef struct {
        union { unsigned char *long_str; unsigned char short_str[16 + 1]; } u;
        size_t length;
    } sk_hash_entry_t;
    """
    ctypedef struct sk_str_t:
        unsigned char *data
        size_t length
    ctypedef struct sk_node_t:
        uintptr_t local_name
        sk_node_t *next
        sk_node_t *parent
        sk_node_t *first_child
        int type
    ctypedef struct sk_chardata_t:
        sk_node_t node
        sk_str_t data
    ctypedef struct sk_attr_t:
        sk_node_t node
        uintptr_t qualified_name
        sk_str_t *value
        sk_attr_t *next
    ctypedef struct sk_element_t:
        sk_node_t node
        sk_attr_t *first_attr
    ctypedef union sk_hash_u:
        unsigned char *long_str
        unsigned char short_str[17]
    ctypedef struct sk_hash_entry_t:
        sk_hash_u u
        size_t length

cdef enum:
    ELEMENT_NODE = 1       # LXB_DOM_NODE_TYPE_ELEMENT
    TEXT_NODE = 3          # LXB_DOM_NODE_TYPE_TEXT
    SHORT_NAME = 16        # LEXBOR_HASH_SHORT_SIZE
    DYNAMIC_ID = 1 << 16   # ids below are lexbor's static ones; above, pointers to hash entries

# Element kinds: skitter.parse's flags (setup() receives them and checks they are these).
cdef enum:
    K_SKIP = 1
    K_BLOCK = 2
    K_BOLD = 4
    K_ITALIC = 8
    K_A = 16
    K_AREA = 32
    K_IMG = 64
    K_HEADING = 128
    K_META = 256
    K_LINKEL = 512
    K_BASE = 1024
    K_TITLE = 2048
    K_BREAK = 4096
    K_BOILER = 8192
    K_CONTAINER = 16384
    K_INERT = K_SKIP | K_BASE | K_BREAK
    K_LEAF = K_INERT | K_IMG | K_META | K_LINKEL | K_TITLE

# Link record indexes (skitter.parse's _L_*).
cdef enum:
    L_BOLD = 4
    L_ITALIC = 5
    L_ALT = 7
    L_END = 3
    L_PREV = 9

# The attributes the walk reads, by index.
cdef enum:
    A_HREF = 0
    A_REL = 1
    A_TITLE = 2
    A_ALT = 3
    A_NAME = 4
    A_CONTENT = 5
    A_HTTP_EQUIV = 6
    A_CLASS = 7
    A_ROLE = 8
    A_ARIA_HIDDEN = 9
    A_HIDDEN = 10
    A_STYLE = 11
    N_ATTRS = 12
_ATTR_NAMES = ("href", "rel", "title", "alt", "name", "content", "http-equiv", "class", "role",
               "aria-hidden", "hidden", "style")
_ATTR_BYTES = tuple(name.encode() for name in _ATTR_NAMES)

cdef uintptr_t _attr_id[N_ATTRS]       # lexbor's static id of the name, or 0 if it has none
cdef int *_kinds = NULL
cdef Py_ssize_t _n_kinds = 0
cdef uintptr_t _text_id = 0
cdef uintptr_t _a_id = 0
cdef set _landmark_ids = set()

# selectolax's ``LexborNode.new(node, parser)``, the first entry of LexborNode's Cython vtable
# (what a module that cimports selectolax.lexbor calls): a Python node for is_boiler.
ctypedef object (*node_new_t)(sk_node_t *, object)
cdef node_new_t _node_new = NULL
cdef bint _ready = False


cdef inline int kind_of(uintptr_t tag_id) noexcept nogil:
    if tag_id < <uintptr_t>_n_kinds:
        return _kinds[tag_id]
    return 0


cdef inline uintptr_t name_id(sk_attr_t *a) noexcept nogil:
    return a.qualified_name if a.qualified_name else a.node.local_name


cdef bint name_is(uintptr_t nid, int which):
    """Whether an attribute's (qualified) name id names attribute ``which``."""
    cdef uintptr_t sid = _attr_id[which]
    cdef sk_hash_entry_t *e
    cdef bytes want
    cdef const unsigned char *s
    if sid:
        return nid == sid
    if nid < DYNAMIC_ID:
        return False
    e = <sk_hash_entry_t *> nid
    want = _ATTR_BYTES[which]
    if e.length != <size_t>len(want):
        return False
    if e.length <= SHORT_NAME:
        s = &e.u.short_str[0]
    else:
        s = e.u.long_str
    return memcmp(s, <const char *>want, e.length) == 0


cdef object attr_value(sk_node_t *node, int which):
    """``node.attributes.get(name)`` (selectolax: None for an attribute without a value; a
    repeated name: the last one)."""
    cdef sk_attr_t *a = (<sk_element_t *> node).first_attr
    cdef sk_str_t *v
    cdef object found = None
    while a != NULL:
        if name_is(name_id(a), which):
            v = a.value
            if v == NULL or v.data == NULL:
                found = None
            else:
                found = PyUnicode_DecodeUTF8(<char *> v.data, v.length, "replace")
        a = a.next
    return found

cdef struct sk_buf_t:
    char *data
    size_t length
    size_t cap


cdef int buf_put(sk_buf_t *b, const char *data, size_t n) except -1:
    cdef size_t cap = b.cap
    cdef char *p
    if b.length + n > cap:
        while b.length + n > cap:
            cap *= 2
        p = <char *> realloc(b.data, cap)
        if p == NULL:
            raise MemoryError()
        b.data = p
        b.cap = cap
    memcpy(b.data + b.length, data, n)
    b.length += n
    return 0


cdef inline bint is_space(unsigned char c) noexcept nogil:
    """``str.isspace`` of an ASCII character."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


cdef Py_ssize_t add_ascii_text(sk_buf_t *b, const unsigned char *d, size_t n, Py_ssize_t clen,
                               bint pending) except -2:
    """The walk's handling of one text node whose bytes are ``d[:n]``, if they are ASCII (else -1,
    and nothing is added): its words, single-spaced (``" ".join(t.split())`` where the text has
    other white space than single spaces or an unprintable character, as the walk does), after a
    space if one is owed. Returns 0 for blank text, else ``(code points added) << 1 | (trailing
    white space)``."""
    cdef size_t i, a = 0, z = n, start
    cdef bint collapse = False
    cdef Py_ssize_t added = 0
    cdef unsigned char c
    for i in range(n):
        if d[i] >= 0x80:
            return -1
    while a < z and is_space(d[a]):
        a += 1
    if a == z:
        return 0
    while is_space(d[z - 1]):
        z -= 1
    if clen and (pending or a > 0):
        buf_put(b, " ", 1)
        added = 1
    for i in range(a, z):
        c = d[i]
        if c < 32 or c == 127 or (c == 32 and d[i + 1] == 32):
            collapse = True
            break
    if not collapse:
        buf_put(b, <const char *> d + a, z - a)
        added += z - a
    else:
        i = a
        while i < z:
            if is_space(d[i]):
                while is_space(d[i]):
                    i += 1
                buf_put(b, " ", 1)
                added += 1
            start = i
            while i < z and not is_space(d[i]):
                i += 1
            buf_put(b, <const char *> d + start, i - start)
            added += i - start
    return added << 1 | (z < n)


cdef bint has_any_attr(sk_node_t *node, int which_mask):
    """Whether the element has one of the attributes whose bits (``1 << A_...``) are set."""
    cdef sk_attr_t *a = (<sk_element_t *> node).first_attr
    cdef int which
    while a != NULL:
        for which in range(N_ATTRS):
            if which_mask >> which & 1 and name_is(name_id(a), which):
                return True
        a = a.next
    return False


cdef bint ask_boiler(sk_node_t *node, int k):
    """Whether the Python walk would ask ``is_boilerplate`` about the element (a container, or one
    that ``boilerplate.ATTRIBUTE_QUERY`` finds: ``[role], [aria-hidden], [hidden], [style],
    a[class*=skip]``), leaving out the containers it would say False of: those without attributes
    that are not landmarks (``boilerplate.is_boilerplate``; a test checks this)."""
    cdef sk_attr_t *a = (<sk_element_t *> node).first_attr
    cdef object cls
    if k & K_CONTAINER:
        return a != NULL or node.local_name in _landmark_ids
    if a == NULL:
        return False
    if has_any_attr(node, 1 << A_ROLE | 1 << A_ARIA_HIDDEN | 1 << A_HIDDEN | 1 << A_STYLE):
        return True
    if node.local_name == _a_id:
        cls = attr_value(node, A_CLASS)
        return cls is not None and "skip" in cls
    return False


cdef str deep_text(sk_node_t *node):
    """``LexborNode.text()``: the text nodes under ``node``, in document order, concatenated."""
    cdef sk_node_t *cur = node.first_child
    cdef sk_str_t *d
    cdef list parts = []
    while cur != NULL:
        if cur.local_name == _text_id:
            d = &(<sk_chardata_t *> cur).data
            if d.data != NULL:
                parts.append(PyBytes_FromStringAndSize(<char *> d.data, d.length))
        if cur.first_child != NULL:
            cur = cur.first_child
            continue
        while cur != node and cur.next == NULL:
            cur = cur.parent
        if cur == node:
            break
        cur = cur.next
    return b"".join(parts).decode("utf-8", "replace")


def setup(dict kinds, int text_id, dict flags, ids, landmarks, root_html):
    """Load skitter.parse's tag kinds and check this module's view of lexbor against
    selectolax's. ``flags``: parse's element kind flags and link record indexes by name (must
    equal this module's). ``ids``: a parsed ``<a>`` whose attributes are ``_ATTR_NAMES`` in that
    order, to learn their ids.
    ``landmarks``: the tag ids of ``boilerplate.LANDMARKS``. ``root_html``: any parsed node, to
    check the structure layouts against. Raises on a mismatch."""
    global _kinds, _n_kinds, _text_id, _ready, _node_new, _a_id, _landmark_ids
    cdef sk_node_t *el
    cdef sk_attr_t *a
    cdef int i
    cdef int *table
    _ready = False
    mine = dict(SKIP=K_SKIP, BLOCK=K_BLOCK, BOLD=K_BOLD, ITALIC=K_ITALIC, A=K_A, AREA=K_AREA,
                IMG=K_IMG, HEADING=K_HEADING, META=K_META, LINKEL=K_LINKEL, BASE=K_BASE,
                TITLE=K_TITLE, BREAK=K_BREAK, BOILER=K_BOILER, CONTAINER=K_CONTAINER,
                L_BOLD=L_BOLD, L_ITALIC=L_ITALIC, L_ALT=L_ALT, L_END=L_END, L_PREV=L_PREV)
    if flags != mine:
        raise ValueError("element kinds or link record indexes differ from skitter.parse's")
    # attribute name ids, from the sample element (its attributes in _ATTR_NAMES order)
    if list(ids.attributes) != list(_ATTR_NAMES):
        raise ValueError("the sample element does not carry the walk's attributes")
    el = <sk_node_t *> <uintptr_t> ids.mem_id
    a = (<sk_element_t *> el).first_attr
    for i in range(N_ATTRS):
        if a == NULL:
            raise ValueError("lexbor attribute list shorter than selectolax's")
        _attr_id[i] = name_id(a) if name_id(a) < DYNAMIC_ID else 0
        a = a.next
    size = max(kinds) + 1
    table = <int *> realloc(_kinds, size * sizeof(int))
    if table == NULL:
        raise MemoryError()
    _kinds = table
    _n_kinds = size
    for i in range(size):
        _kinds[i] = kinds.get(i, 0)
    _text_id = text_id
    _a_id = ids.tag_id
    _landmark_ids = set(landmarks)
    vtable = PyCapsule_GetPointer(type(ids).__pyx_vtable__, NULL)
    if vtable == NULL:
        raise ValueError("no LexborNode vtable")
    _node_new = (<node_new_t *> vtable)[0]
    _check_layout(root_html)
    _ready = True


cdef _check_layout(root):
    """Every node under ``root``: the links, tag ids, texts and attributes read here equal
    selectolax's."""
    stack = [root]
    cdef sk_node_t *n
    cdef sk_str_t *d
    while stack:
        node = stack.pop()
        n = <sk_node_t *> <uintptr_t> node.mem_id
        if n.local_name != <uintptr_t> node.tag_id:
            raise ValueError("lexbor node layout: tag id")
        if node.tag_id == _text_id:
            d = &(<sk_chardata_t *> n).data
            if (PyUnicode_DecodeUTF8(<char *> d.data, d.length, "replace") if d.data != NULL
                    else None) != node.text_content:
                raise ValueError("lexbor node layout: text")
        parent = node.parent
        if parent is not None and <uintptr_t> n.parent != <uintptr_t> parent.mem_id:
            raise ValueError("lexbor node layout: parent")
        child = node.first_child
        if (child is None) != (n.first_child == NULL) or (
                child is not None and <uintptr_t> n.first_child != <uintptr_t> child.mem_id):
            raise ValueError("lexbor node layout: first child")
        nxt = node.next
        if (nxt is None) != (n.next == NULL) or (
                nxt is not None and <uintptr_t> n.next != <uintptr_t> nxt.mem_id):
            raise ValueError("lexbor node layout: next sibling")
        again = _node_new(n, node.parser)
        if type(again) is not type(node) or again.mem_id != node.mem_id or again.tag != node.tag:
            raise ValueError("LexborNode.new through the vtable")
        if node.tag_id != _text_id and n.type == ELEMENT_NODE:   # an element: its attributes
            attrs = node.attributes
            for i, name in enumerate(_ATTR_NAMES):
                if name in attrs and attr_value(n, i) != attrs[name]:
                    raise ValueError("lexbor attribute layout")
        stack.extend(node.iter(include_text=True))


def walk(root, bint want_main, is_boiler, W):
    """``skitter.parse._walk(root, want_main)``, reading lexbor's tree directly; the same result
    (``W`` is parse's ``_Walk``). ``is_boiler(node, depth)`` is asked about the elements the
    Python walk asks it about (``ask_boiler``), given selectolax nodes."""
    if not _ready:
        raise RuntimeError("skitter._speedups.setup() has not succeeded")
    w = W()
    parser = root.parser
    cdef list ranges = w.boiler
    cdef list links = w.links
    cdef list headings = w.headings
    cdef list metas = w.metas
    cdef sk_buf_t buf
    cdef Py_ssize_t r
    cdef bytes enc
    cdef Py_ssize_t clen = 0
    cdef bint pending = False
    cdef int bold = 0, italic = 0, in_boiler = 0
    cdef Py_ssize_t boiler_start = 0
    cdef object cur = None
    cdef list block = [0, -1, None]
    cdef list blocks = [block]
    cdef list b
    cdef object rec
    cdef list recs = [block]          # the record of every open stack entry (or None)
    cdef Py_ssize_t cap = 64, top = 0
    cdef sk_node_t **nexts = <sk_node_t **> malloc(cap * sizeof(sk_node_t *))
    cdef int *stack_kinds = <int *> malloc(cap * sizeof(int))
    cdef sk_node_t *node
    cdef sk_node_t *rootp = <sk_node_t *> <uintptr_t> root.mem_id
    cdef sk_str_t *d
    cdef uintptr_t tid
    cdef int k, kind
    cdef Py_ssize_t start
    cdef str t, s
    cdef bint push
    cdef sk_node_t **p
    cdef int *q
    buf.data = <char *> malloc(4096)
    buf.length = 0
    buf.cap = 4096
    if nexts == NULL or stack_kinds == NULL or buf.data == NULL:
        free(nexts)
        free(stack_kinds)
        free(buf.data)
        raise MemoryError()
    nexts[0] = rootp.first_child
    stack_kinds[0] = K_BLOCK
    try:
        while top >= 0:
            node = nexts[top]
            if node == NULL:
                # the element of this stack entry is done
                kind = stack_kinds[top]
                rec = recs.pop()
                top -= 1
                if kind:
                    if kind & K_BOILER:
                        in_boiler -= 1
                        if not in_boiler and clen > boiler_start:
                            ranges.append((boiler_start, clen))
                    if kind & K_BLOCK:
                        pending = True
                        rec[1] = clen
                        block = rec[2]
                    elif kind & K_A:
                        rec[L_END] = clen
                        cur = rec[L_PREV]
                        rec[L_PREV] = None
                    elif kind & K_BOLD:
                        bold -= 1
                    elif kind & K_ITALIC:
                        italic -= 1
                continue
            nexts[top] = node.next
            tid = node.local_name
            if tid == _text_id:
                if node.type != TEXT_NODE:
                    continue
                d = &(<sk_chardata_t *> node).data
                if d.data == NULL or d.length == 0:
                    continue
                r = add_ascii_text(&buf, d.data, d.length, clen, pending)
                if r >= 0:          # ASCII: collapsed in C; r: code points added (0: blank)
                    if r == 0:
                        pending = True
                        continue
                    pending = r & 1
                    clen += r >> 1
                    continue
                t = PyUnicode_DecodeUTF8(<char *> d.data, d.length, "replace")
                s = t.strip()
                if not s:
                    pending = True
                    continue
                if clen and (pending or t[0] != s[0]):
                    buf_put(&buf, b" ", 1)
                    clen += 1
                pending = t[len(t) - 1] != s[len(s) - 1]
                if not s.isprintable() or "  " in s:
                    s = " ".join(s.split())
                enc = s.encode("utf-8")
                buf_put(&buf, enc, len(enc))
                clen += len(s)
                continue
            k = kind_of(tid)
            if want_main and not in_boiler and node.type == ELEMENT_NODE and ask_boiler(node, k):
                try:
                    if is_boiler(_node_new(node, parser), top - 1):
                        k |= K_BOILER
                except Exception:  # an odd attribute value: the element counts as content
                    pass
            if k & K_BOILER and not k & K_LEAF:
                if not in_boiler:
                    boiler_start = clen
                in_boiler += 1
            push = False
            rec = None
            if not k & ~(K_BOILER | K_CONTAINER):
                kind = k
                push = True
            elif k & K_INERT:
                if k & K_BREAK:
                    pending = True
                if k & K_AREA:
                    href = attr_value(node, A_HREF)
                    if href is not None:
                        start = clen + 1 if (pending and clen) else clen
                        links.append([href, attr_value(node, A_REL), start, start, bold > 0,
                                      italic > 0, block, attr_value(node, A_ALT),
                                      attr_value(node, A_TITLE), None])
                elif k & K_BASE:
                    if w.base_href is None:
                        w.base_href = attr_value(node, A_HREF)
            elif k & K_BLOCK:
                pending = True
                b = [clen, -1, block]
                blocks.append(b)
                block = b
                if k & K_HEADING:
                    headings.append(b)
                kind = k
                rec = b
                push = True
            elif k & K_A:
                href = attr_value(node, A_HREF)
                push = True
                if href is None:
                    kind = k & K_BOILER
                else:
                    start = clen + 1 if (pending and clen) else clen
                    rec = [href, attr_value(node, A_REL), start, -1, bold > 0, italic > 0, block,
                           None, attr_value(node, A_TITLE), cur]
                    links.append(rec)
                    cur = rec
                    kind = k
            elif k & (K_BOLD | K_ITALIC):
                if k & K_BOLD:
                    bold += 1
                    if cur is not None:
                        cur[L_BOLD] = True
                else:
                    italic += 1
                    if cur is not None:
                        cur[L_ITALIC] = True
                kind = k
                push = True
            elif k & K_IMG:
                if cur is not None and not cur[L_ALT]:
                    cur[L_ALT] = attr_value(node, A_ALT) or attr_value(node, A_TITLE)
            elif k & K_META:
                metas.append({"name": attr_value(node, A_NAME),
                              "content": attr_value(node, A_CONTENT),
                              "http-equiv": attr_value(node, A_HTTP_EQUIV)})
            elif k & K_LINKEL:
                if w.canonical_href is None:
                    if "canonical" in (attr_value(node, A_REL) or "").lower().split():
                        w.canonical_href = attr_value(node, A_HREF)
            elif k & K_TITLE:
                if w.title is None:
                    w.title = deep_text(node)
            else:
                kind = k & K_BOILER
                push = True
            if push:
                top += 1
                if top == cap:
                    cap *= 2
                    p = <sk_node_t **> realloc(nexts, cap * sizeof(sk_node_t *))
                    if p == NULL:
                        raise MemoryError()
                    nexts = p
                    q = <int *> realloc(stack_kinds, cap * sizeof(int))
                    if q == NULL:
                        raise MemoryError()
                    stack_kinds = q
                nexts[top] = node.first_child
                stack_kinds[top] = kind
                recs.append(rec)
        w.text = text = PyUnicode_DecodeUTF8(buf.data, buf.length, "replace")
    finally:
        free(nexts)
        free(stack_kinds)
        free(buf.data)
    for b in blocks:
        if b[1] < 0:
            b[1] = len(text)
    return w


# ------------------------------------------------------------------------------------------------
# winnowing (skitter.dedup)

ctypedef fused codepoint_t:
    uint8_t
    uint32_t


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """MurmurHash3's 64-bit finaliser (``skitter.dedup._mix``)."""
    x ^= x >> 33
    x *= 0xFF51AFD7ED558CCDULL
    x ^= x >> 33
    x *= 0xC4CEB9FE1A85EC53ULL
    x ^= x >> 33
    return x


def kgram_hashes(c, int k, const uint64_t[::1] pw, const uint64_t[::1] inv, uint64_t[::1] out):
    """``skitter.dedup.kgram_hashes`` from the code points ``c`` (a buffer of uint8 or uint32: a
    NumPy array, an ``array``, bytes), into ``out`` (``len(c) - k + 1`` values):
    ``mix(sum_j (c[i+j] + 1) * B^j)``, as the prefix sums ``P`` of ``(c[j] + 1) * B^j``:
    ``(P[i+k] - P[i]) * B^-i`` (mod 2**64). ``pw``, ``inv``: ``B^j``, ``B^-j`` for ``j < len(c)``.
    The width is chosen here, not by Cython's dispatch of a fused ``def``, which imports NumPy to
    look for arrays (the analysis worker runs without it: ``skitter.winnow``)."""
    cdef Py_ssize_t width = memoryview(c).itemsize
    if width == 1:
        _kgram_hashes[uint8_t](c, k, pw, inv, out)
    elif width == 4:
        _kgram_hashes[uint32_t](c, k, pw, inv, out)
    else:
        raise ValueError("kgram_hashes: code points must be uint8 or uint32")


cdef _kgram_hashes(const codepoint_t[::1] c, int k, const uint64_t[::1] pw, const uint64_t[::1] inv,
                   uint64_t[::1] out):
    cdef Py_ssize_t n = c.shape[0], m = n - k + 1, i
    cdef Py_ssize_t mask = 1
    cdef uint64_t p = 0
    cdef uint64_t *ring
    if k < 1 or m < 1 or out.shape[0] != m or pw.shape[0] < n or inv.shape[0] < n:
        raise ValueError("kgram_hashes: bad sizes")
    while mask < k + 1:
        mask <<= 1
    ring = <uint64_t *> malloc(mask * sizeof(uint64_t))   # the last k + 1 prefix sums (at least)
    if ring == NULL:
        raise MemoryError()
    mask -= 1
    with nogil:
        ring[0] = 0
        for i in range(n):
            p += (<uint64_t> c[i] + 1) * pw[i]
            ring[(i + 1) & mask] = p
            if i + 1 >= k:
                out[i + 1 - k] = mix64((p - ring[(i + 1 - k) & mask]) * inv[i + 1 - k])
    free(ring)


def select_below(const uint64_t[::1] h, uint64_t cut, int w, uint64_t[::1] out):
    """The hashes below ``cut`` that winnowing selects (``skitter.dedup.winnow_smallest``'s test
    for one cut, ``_selected``): with ``L`` and ``R`` the nearest positions left and right of a hash
    with a strictly smaller one (or -1 and ``n``), it is selected iff ``R - L - 1 >= w``.
    Every hash smaller than one below ``cut`` is below ``cut`` too, so the hashes below it decide.
    Writes them in text order into ``out`` (as long as ``h``) and returns how many."""
    cdef Py_ssize_t n = h.shape[0], i, j, l, r, t, m = 0, kept = 0
    cdef Py_ssize_t *pos
    cdef uint64_t v
    if out.shape[0] < n:
        raise ValueError("select_below: out too short")
    with nogil:
        for i in range(n):
            if h[i] < cut:
                m += 1
    pos = <Py_ssize_t *> malloc((m + 1) * sizeof(Py_ssize_t))
    if pos == NULL:
        raise MemoryError()
    with nogil:
        m = 0
        for i in range(n):
            if h[i] < cut:
                pos[m] = i
                m += 1
        for j in range(m):
            i = pos[j]
            v = h[i]
            l = i - w if i - w > -1 else -1
            r = i + w if i + w < n else n
            for t in range(j - 1, -1, -1):
                if i - pos[t] >= w:
                    break
                if h[pos[t]] < v:
                    if pos[t] > l:
                        l = pos[t]
                    break
            for t in range(j + 1, m):
                if pos[t] - i >= w:
                    break
                if h[pos[t]] < v:
                    if pos[t] < r:
                        r = pos[t]
                    break
            if r - l - 1 >= w:
                out[kept] = v
                kept += 1
    free(pos)
    return kept


cdef unsigned char _ALNUM_LOWER[256]       # an ASCII letter or digit (str.isalnum), lower-cased; else 0
for _c in range(256):
    _ALNUM_LOWER[_c] = ord(chr(_c).lower()) if _c < 128 and chr(_c).isalnum() else 0


def ascii_codepoints(str text, unsigned char[::1] out):
    """The code points of ``skitter.dedup.normalise(text)`` into ``out`` (at least ``len(text)``
    long) when all of them are ASCII: the text's ASCII letters and digits, lower-cased, in one
    pass, every other character dropped (©, nbsp, quotes, dashes); returns how many. -1 when
    ``text`` has a letter or digit that is not ASCII, or U+0345, the one character that is not
    one but case-folds to one (``tests/unit/test_speedups.py`` checks that against the running
    Python's Unicode tables): such a text needs ``str.casefold`` (:func:`alnum_codepoints`)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, m = 0
    cdef const unsigned char *d
    cdef unsigned char v
    cdef int kind
    cdef void *data
    cdef Py_UCS4 c
    if out.shape[0] < n:
        raise ValueError("ascii_codepoints: out too short")
    if text.isascii():
        d = <const unsigned char *> PyUnicode_DATA(text)
        with nogil:
            for i in range(n):      # branch-free: about half of a text's characters are dropped
                v = _ALNUM_LOWER[d[i]]
                out[m] = v
                m += v != 0
        return m
    kind = PyUnicode_KIND(text)
    data = PyUnicode_DATA(text)
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if c < 128:
            v = _ALNUM_LOWER[c]
            out[m] = v
            m += v != 0
        elif c == 0x345 or Py_UNICODE_ISALNUM(c):
            return -1
    return m


def fill_powers(uint64_t base, uint64_t[::1] out):
    """``out[j] = base ** j`` (mod 2**64): the k-gram hash's power tables (``skitter.winnow``;
    ``skitter.dedup._power_tables`` is the NumPy reference)."""
    cdef Py_ssize_t j, n = out.shape[0]
    cdef uint64_t x = 1
    with nogil:
        for j in range(n):
            out[j] = x
            x *= base


def alnum_codepoints(str text, uint32_t[::1] out):
    """The letters and digits (``str.isalnum``) of ``text``, in order, into ``out`` (at least
    ``len(text)`` long); returns how many. Given ``text.casefold()``, these are the code points of
    ``skitter.dedup.normalise(text)`` (``skitter.winnow`` for a text that is not ASCII)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, m = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void *d = PyUnicode_DATA(text)
    cdef Py_UCS4 c
    if out.shape[0] < n:
        raise ValueError("alnum_codepoints: out too short")
    for i in range(n):
        c = PyUnicode_READ(kind, d, i)
        if (c < 128 and _ALNUM_LOWER[c] != 0) or (c >= 128 and Py_UNICODE_ISALNUM(c)):
            out[m] = c
            m += 1
    return m


# ------------------------------------------------------------------------------------------------
# near-duplicate index lookups (skitter.dedup._Run.lookup)

cdef inline Py_ssize_t lower_bound(const uint64_t *a, Py_ssize_t lo, Py_ssize_t hi,
                                   uint64_t key) noexcept nogil:
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t find_range(const uint64_t *run, Py_ssize_t n, const uint32_t *starts,
                                   int shift, uint64_t key, Py_ssize_t *out) noexcept nogil:
    """The postings of ``key`` in ``run[:n]``: ``out[0]:out[1]``; returns their number. ``starts``:
    the run's bucket directory (NULL: bisection of the whole run)."""
    cdef Py_ssize_t lo = 0, hi = n
    cdef uint64_t b
    if starts != NULL:
        b = key >> shift if shift < 64 else 0    # (a shift by 64 is undefined in C)
        lo = starts[b]
        hi = starts[b + 1]
    lo = lower_bound(run, lo, hi, key)
    hi = lo
    while hi < n and run[hi] == key:
        hi += 1
    out[0] = lo
    out[1] = hi
    return hi - lo


cdef Py_ssize_t find_ranges(const uint64_t *run, Py_ssize_t n, const uint32_t *starts, int shift,
                            const uint64_t *keys, Py_ssize_t m, Py_ssize_t *ranges) noexcept nogil:
    """``find_range`` of every key (``ranges[2i]:ranges[2i + 1]``); returns the postings in all.
    With a directory, in three passes that prefetch each key's bucket offsets, then its keys: the
    index is cold between two pages of a crawl, and the keys' cache misses then overlap instead of
    following one another (a query's lookups were mostly memory latency)."""
    cdef Py_ssize_t i, lo, hi, total = 0
    cdef uint64_t b
    if starts == NULL or m < 4:
        for i in range(m):
            total += find_range(run, n, starts, shift, keys[i], &ranges[2 * i])
        return total
    for i in range(m):
        b = keys[i] >> shift if shift < 64 else 0
        __builtin_prefetch(&starts[b])
    for i in range(m):
        b = keys[i] >> shift if shift < 64 else 0
        lo = starts[b]
        hi = starts[b + 1]
        ranges[2 * i] = lo
        ranges[2 * i + 1] = hi
        if lo < hi:
            __builtin_prefetch(&run[lo])
            __builtin_prefetch(&run[(lo + hi) >> 1])
    for i in range(m):
        lo = lower_bound(run, ranges[2 * i], ranges[2 * i + 1], keys[i])
        hi = lo
        while hi < n and run[hi] == keys[i]:
            hi += 1
        ranges[2 * i] = lo
        ranges[2 * i + 1] = hi
        total += hi - lo
    return total


cdef const uint32_t *directory(object starts, int shift) except? NULL:
    """The first offset of a run's bucket directory (``starts``, kept alive by the caller), or
    NULL if it has none (bisection); checks that it has the ``2**(64 - shift) + 1`` offsets."""
    cdef const uint32_t[::1] view
    if starts is None:
        return NULL
    view = starts
    if shift < 1 or shift > 64 or view.shape[0] != (<Py_ssize_t> 1 << (64 - shift)) + 1:
        raise ValueError("a run's bucket directory does not match its shift")
    return &view[0]


def count_postings(list runs, const uint64_t[::1] keys):
    """How many postings ``keys`` have in all ``runs`` together (``(keys, docs, starts or None,
    shift)`` each, as :func:`gen_candidates` takes them): ``NearDupIndex.query``'s first test,
    which ends most queries, in one call and without building the postings."""
    cdef Py_ssize_t total = 0, n, m = keys.shape[0]
    cdef const uint64_t[::1] run
    cdef const uint32_t *dirp
    cdef int shift
    cdef Py_ssize_t *ranges
    if m == 0:
        return 0
    ranges = <Py_ssize_t *> malloc(2 * m * sizeof(Py_ssize_t))
    if ranges == NULL:
        raise MemoryError()
    try:
        for item in runs:
            run = item[0]
            n = run.shape[0]
            if n == 0:
                continue
            shift = item[3]
            dirp = directory(item[2], shift)
            with nogil:
                total += find_ranges(&run[0], n, dirp, shift, &keys[0], m, ranges)
    finally:
        free(ranges)
    return total


def run_lookup(const uint64_t[::1] run, starts, int shift,
               const uint64_t[::1] keys, out_pos, out_keys):
    """``skitter.dedup._Run.lookup``: the postings of ``keys`` in the sorted ``run``, key by key in
    the order given, each key's postings in run order. ``starts``: the run's bucket directory (the
    first posting of each bucket of the top ``64 - shift`` bits), or None: bisection.
    ``out_pos``, ``out_keys``: called with the number of postings found, they return arrays
    (intp, uint64) of that size to fill. Returns the filled pair, or None if nothing was found."""
    cdef Py_ssize_t n = run.shape[0], m = keys.shape[0], i, total = 0, j, at = 0
    cdef Py_ssize_t *ranges
    cdef Py_ssize_t[::1] pos
    cdef uint64_t[::1] hs
    cdef const uint32_t *dirp
    if m == 0 or n == 0:
        return None
    dirp = directory(starts, shift)
    ranges = <Py_ssize_t *> malloc(2 * m * sizeof(Py_ssize_t))
    if ranges == NULL:
        raise MemoryError()
    try:
        with nogil:
            total = find_ranges(&run[0], n, dirp, shift, &keys[0], m, ranges)
        if total == 0:
            return None
        a = out_pos(total)
        k = out_keys(total)
        pos = a
        hs = k
        with nogil:
            for i in range(m):
                for j in range(ranges[2 * i], ranges[2 * i + 1]):
                    pos[at] = j
                    hs[at] = keys[i]
                    at += 1
        return a, k
    finally:
        free(ranges)


cdef int _cmp_u32(const void *a, const void *b) noexcept nogil:
    cdef uint32_t x = (<const uint32_t *> a)[0], y = (<const uint32_t *> b)[0]
    return (x > y) - (x < y)


def gen_candidates(list runs, const uint64_t[::1] keys, const int32_t[::1] sk_len, double need,
                   int min_sample):
    """``NearDupIndex._candidates_np`` for one generation, when no hash is over ``max_df``: the
    documents (indexes into the generation) that the postings of ``keys`` in its ``runs``
    (``(keys, docs, starts or None, shift)`` each) name, with how many postings each has (its
    hits), kept if ``hits >= max(1, floor(need * min(sk_len[doc], min_sample)))``. Returns
    ``(documents met, kept documents, their hits)`` (``array('q')`` each), the documents ascending."""
    cdef Py_ssize_t m = keys.shape[0], i, j, n, total = 0, at = 0, found = 0, kept = 0
    cdef Py_ssize_t *ranges = NULL
    cdef const uint64_t[::1] run
    cdef const uint32_t[::1] rdocs
    cdef const uint32_t *dirp
    cdef uint32_t *docs = NULL
    cdef Py_ssize_t cap = 256
    cdef uint32_t *grown
    cdef int shift
    cdef int64_t[::1] out_docs
    cdef int64_t[::1] out_hits
    cdef uint32_t d
    cdef Py_ssize_t h, length
    if m == 0:
        return 0, None, None
    docs = <uint32_t *> malloc(cap * sizeof(uint32_t))
    ranges = <Py_ssize_t *> malloc(2 * m * sizeof(Py_ssize_t))
    if docs == NULL or ranges == NULL:
        free(docs)
        free(ranges)
        raise MemoryError()
    try:
        for item in runs:
            run = item[0]
            rdocs = item[1]
            n = run.shape[0]
            if n == 0:
                continue
            if rdocs.shape[0] != n:
                raise ValueError("gen_candidates: a run's docs and keys differ in length")
            shift = item[3]
            dirp = directory(item[2], shift)
            with nogil:
                total = find_ranges(&run[0], n, dirp, shift, &keys[0], m, ranges)
            if total == 0:
                continue
            if at + total > cap:
                while at + total > cap:
                    cap *= 2
                grown = <uint32_t *> realloc(docs, cap * sizeof(uint32_t))
                if grown == NULL:
                    raise MemoryError()
                docs = grown
            for i in range(m):
                for j in range(ranges[2 * i], ranges[2 * i + 1]):
                    docs[at] = rdocs[j]
                    at += 1
        if at == 0:
            return 0, None, None
        qsort(docs, at, sizeof(uint32_t), _cmp_u32)
        for i in range(at):
            found += i == 0 or docs[i] != docs[i - 1]
        a = _array_q * found
        b = _array_q * found
        out_docs = a
        out_hits = b
        i = 0
        while i < at:
            d = docs[i]
            j = i
            while j < at and docs[j] == d:
                j += 1
            h = j - i
            if d >= <uint32_t> sk_len.shape[0]:
                raise ValueError("gen_candidates: a document outside the generation")
            length = sk_len[d]
            if length > min_sample:
                length = min_sample
            if h >= 1 and h >= floor(need * length):
                out_docs[kept] = d
                out_hits[kept] = h
                kept += 1
            i = j
        return found, a[:kept], b[:kept]
    finally:
        free(docs)
        free(ranges)


def bucket_starts(const uint64_t[::1] keys, int shift, uint32_t[::1] starts):
    """``skitter.neardup._Run.build_directory``: ``starts[b]``, the first position of the sorted
    ``keys`` whose top ``64 - shift`` bits are at least ``b``, for every bucket ``b`` (and
    ``len(keys)`` last), in one pass."""
    cdef Py_ssize_t n = keys.shape[0], i, b = 0, nb = starts.shape[0] - 1
    cdef Py_ssize_t kb
    if shift < 1 or shift > 64 or nb != (<Py_ssize_t> 1 << (64 - shift)) or n > 0xFFFFFFFF:
        raise ValueError("bucket_starts: a directory that does not match its shift")
    with nogil:
        for i in range(n):
            kb = <Py_ssize_t> (keys[i] >> shift) if shift < 64 else 0   # (a shift by 64 is undefined in C)
            while b <= kb:
                starts[b] = <uint32_t> i
                b += 1
        while b <= nb:
            starts[b] = <uint32_t> n
            b += 1


def merge_runs(const uint64_t[::1] k1, const uint32_t[::1] d1, const uint64_t[::1] k2,
               const uint32_t[::1] d2, uint64_t[::1] keys, uint32_t[::1] docs):
    """``skitter.dedup._merge``: two sorted runs (keys, docs) into ``keys``, ``docs``, the first
    run's postings first among equal keys (a stable merge), in one sequential pass."""
    cdef Py_ssize_t n1 = k1.shape[0], n2 = k2.shape[0], i = 0, j = 0, o = 0
    if d1.shape[0] != n1 or d2.shape[0] != n2 or keys.shape[0] != n1 + n2 or docs.shape[0] != n1 + n2:
        raise ValueError("merge_runs: bad sizes")
    with nogil:
        while i < n1 and j < n2:
            if k2[j] < k1[i]:
                keys[o] = k2[j]
                docs[o] = d2[j]
                j += 1
            else:
                keys[o] = k1[i]
                docs[o] = d1[i]
                i += 1
            o += 1
        while i < n1:
            keys[o] = k1[i]
            docs[o] = d1[i]
            i += 1
            o += 1
        while j < n2:
            keys[o] = k2[j]
            docs[o] = d2[j]
            j += 1
            o += 1


# ------------------------------------------------------------------------------------------------
# the search index's analyzer (skitter.index.analyze.words, .column)
#
# words(text) == [w for w in re.findall(r"[^\W_]+", fold(text)) if w not in stop and len(w) <= max]
# where fold(text) maps each character of text.lower() that is not ASCII to fold_char(c) (NFKD,
# combining marks dropped, lower case: skitter.index.analyze). `[^\W_]` is exactly
# Py_UNICODE_ISALNUM (str.isalnum), which is what re's \w tests, less "_". One pass: the folded
# form of a non-ASCII character comes from a cache; an ASCII word is checked against the stop
# words in a small hash table of its bytes before a str is made of it.

cdef enum:
    STOP_SLOTS = 1024          # a power of two, > 4 x the stop words
    STOP_MAX = 16              # ASCII stop words up to this length are in the table
    WORD_BUF = 64              # characters kept of a word: max_token must be below
    FOLD_SMALL = 0x3000        # code points below: folded forms in a list, above: in a dict

cdef uint64_t _stop_a[STOP_SLOTS]
cdef uint64_t _stop_b[STOP_SLOTS]
cdef unsigned char _stop_len[STOP_SLOTS]    # 0: an empty slot
cdef frozenset _stop_set = frozenset()
cdef bint _stop_long = False                # an ASCII stop word longer than STOP_MAX exists
cdef Py_ssize_t _max_token = 0
cdef object _fold_char = None
cdef list _fold_small = [None] * FOLD_SMALL
cdef dict _fold_big = {}
cdef list _latin1_fold = [None] * 256       # the folded form of chr(c).lower(), c >= 128
cdef bint _analyzer_ready = False


cdef inline uint64_t _stop_slot(uint64_t a, uint64_t b, Py_ssize_t n) noexcept nogil:
    return ((a * <uint64_t>0x9E3779B97F4A7C15ULL) ^ (b * <uint64_t>0xC2B2AE3D27D4EB4FULL) ^ <uint64_t>n) >> 40


cdef inline void _pack16(const unsigned char *w, Py_ssize_t n, uint64_t *a, uint64_t *b) noexcept nogil:
    cdef Py_ssize_t i
    a[0] = 0
    b[0] = 0
    for i in range(n if n < 8 else 8):
        a[0] |= (<uint64_t>w[i]) << (8 * i)
    for i in range(8, n):
        b[0] |= (<uint64_t>w[i]) << (8 * (i - 8))


cdef inline bint _is_stop_ascii(const unsigned char *w, Py_ssize_t n) noexcept nogil:
    cdef uint64_t a, b, h
    if n > STOP_MAX:
        return False
    _pack16(w, n, &a, &b)
    h = _stop_slot(a, b, n) & (STOP_SLOTS - 1)
    while _stop_len[h]:
        if _stop_len[h] == n and _stop_a[h] == a and _stop_b[h] == b:
            return True
        h = (h + 1) & (STOP_SLOTS - 1)
    return False


def analyzer_setup(stop_words, Py_ssize_t max_token, fold_char):
    """Give the analyzer its stop words (a set of str), word length limit and the function that
    folds one non-ASCII character (``skitter.index.analyze._fold_char``)."""
    global _stop_set, _stop_long, _max_token, _fold_char, _fold_big, _analyzer_ready
    cdef bytes raw
    cdef uint64_t a, b, h
    cdef Py_ssize_t i
    if not 0 < max_token < WORD_BUF:
        raise ValueError(f"max_token must be in 1..{WORD_BUF - 1}")
    stop = frozenset(stop_words)
    if len(stop) * 4 > STOP_SLOTS:
        raise ValueError("too many stop words for the compiled analyzer's table")
    for i in range(STOP_SLOTS):
        _stop_len[i] = 0
    _stop_long = False
    for w in stop:
        if not w.isascii():
            continue
        if len(w) > STOP_MAX:
            _stop_long = True
            continue
        raw = w.encode()
        _pack16(raw, len(raw), &a, &b)
        h = _stop_slot(a, b, len(raw)) & (STOP_SLOTS - 1)
        while _stop_len[h]:
            h = (h + 1) & (STOP_SLOTS - 1)
        _stop_a[h] = a
        _stop_b[h] = b
        _stop_len[h] = len(raw)
    _stop_set = stop
    _max_token = max_token
    _fold_char = fold_char
    for i in range(FOLD_SMALL):
        _fold_small[i] = None
    _fold_big = {}
    for i in range(128, 256):
        _latin1_fold[i] = "".join([x if x.isascii() else fold_char(x) for x in chr(i).lower()])
    _analyzer_ready = True


cdef object _folded(Py_UCS4 ch):
    """fold_char(chr(ch)), cached."""
    cdef object f
    cdef PyObject *p
    if ch < FOLD_SMALL:
        f = <object>PyList_GET_ITEM(_fold_small, <Py_ssize_t>ch)
        if f is None:
            f = _fold_char(chr(ch))
            if type(f) is not str:
                raise TypeError("fold_char must return a str")
            _fold_small[<Py_ssize_t>ch] = f
        return f
    cdef object key = <long>ch
    p = PyDict_GetItem(_fold_big, key)
    if p != NULL:
        return <object>p
    f = _fold_char(chr(ch))
    if type(f) is not str:
        raise TypeError("fold_char must return a str")
    if len(_fold_big) < 65536:
        _fold_big[key] = f
    return f


cdef struct VEntry:
    uint64_t h
    PyObject *word          # owned; NULL: an empty slot
    PyObject *stem          # owned; NULL: not stemmed yet
    Py_ssize_t n            # occurrences in the current column() call

cdef VEntry *_vt = NULL     # the vocabulary: open addressing, at most half full
cdef Py_ssize_t _vt_cap = 0, _vt_used = 0
cdef Py_ssize_t *_occ = NULL            # column(): the entries of the text's words, in order
cdef Py_ssize_t _occ_n = 0, _occ_cap = 0
cdef Py_ssize_t *_touched = NULL        # column(): the distinct entries met
cdef Py_ssize_t _touched_n = 0
cdef bint _in_column = False            # a column() call is running (it may let other threads run)


cdef void _vocab_clear() noexcept:
    global _vt, _vt_cap, _vt_used
    cdef Py_ssize_t i
    if _vt != NULL:
        for i in range(_vt_cap):
            if _vt[i].word != NULL:
                Py_XDECREF(_vt[i].word)
                Py_XDECREF(_vt[i].stem)
        free(_vt)
    _vt = NULL
    _vt_cap = 0
    _vt_used = 0


cdef int _vocab_grow() except -1:
    global _vt, _vt_cap
    cdef Py_ssize_t cap = _vt_cap * 2 if _vt_cap else 4096, i, j
    cdef VEntry *t = <VEntry *> calloc(cap, sizeof(VEntry))
    cdef Py_ssize_t *remap
    if t == NULL:
        raise MemoryError()
    remap = <Py_ssize_t *> malloc((_vt_cap if _vt_cap else 1) * sizeof(Py_ssize_t))
    if remap == NULL:
        free(t)
        raise MemoryError()
    for i in range(_vt_cap):
        if _vt[i].word != NULL:
            j = _vt[i].h & (cap - 1)
            while t[j].word != NULL:
                j = (j + 1) & (cap - 1)
            t[j] = _vt[i]
            remap[i] = j
    for i in range(_occ_n):             # entries already met in this call move
        _occ[i] = remap[_occ[i]]
    for i in range(_touched_n):
        _touched[i] = remap[_touched[i]]
    free(remap)
    free(_vt)
    _vt = t
    _vt_cap = cap
    return 0


cdef inline uint64_t _word_hash(const Py_UCS4 *w, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = <uint64_t>14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ <uint64_t>w[i]) * <uint64_t>1099511628211ULL
    return h ^ (h >> 29)


cdef inline bint _word_is(PyObject *s, const Py_UCS4 *w, Py_ssize_t n) noexcept:
    cdef object o = <object>s
    cdef int kind
    cdef void *data
    cdef Py_ssize_t i
    if PyUnicode_GET_LENGTH(o) != n:
        return False
    kind = PyUnicode_KIND(o)
    data = PyUnicode_DATA(o)
    for i in range(n):
        if PyUnicode_READ(kind, data, i) != w[i]:
            return False
    return True


cdef int _vocab_add(const Py_UCS4 *w, Py_ssize_t n, object s) except -1:
    """Count one occurrence of the word w[:n] (its str is ``s`` if already made, else None)."""
    global _vt_used, _occ, _occ_cap, _occ_n, _touched, _touched_n
    cdef uint64_t h = _word_hash(w, n)
    cdef Py_ssize_t i
    cdef Py_ssize_t *grown
    if (_vt_used + 1) * 2 > _vt_cap:
        _vocab_grow()
    i = h & (_vt_cap - 1)
    while _vt[i].word != NULL:
        if _vt[i].h == h and _word_is(_vt[i].word, w, n):
            break
        i = (i + 1) & (_vt_cap - 1)
    else:
        if s is None:
            s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, w, n)
        Py_INCREF(s)
        _vt[i].word = <PyObject *>s
        _vt[i].stem = NULL
        _vt[i].h = h
        _vt[i].n = 0
        _vt_used += 1
    if _occ_n == _occ_cap:
        _occ_cap = _occ_cap * 2 if _occ_cap else 4096
        grown = <Py_ssize_t *> realloc(_occ, _occ_cap * sizeof(Py_ssize_t))
        if grown == NULL:
            raise MemoryError()
        _occ = grown
        grown = <Py_ssize_t *> realloc(_touched, _occ_cap * sizeof(Py_ssize_t))
        if grown == NULL:
            raise MemoryError()
        _touched = grown
    _occ[_occ_n] = i
    _occ_n += 1
    if _vt[i].n == 0:
        _touched[_touched_n] = i
        _touched_n += 1
    _vt[i].n += 1
    return 0


cdef int _emit(list out, const Py_UCS4 *w, Py_ssize_t n, bint ascii) except -1:
    """A word found: kept (appended to ``out``, or counted in the vocabulary if ``out`` is None)
    unless it is too long or a stop word."""
    cdef unsigned char b[WORD_BUF]
    cdef Py_ssize_t i
    cdef object s = None
    if n > _max_token:
        return 0
    if ascii:
        for i in range(n):
            b[i] = <unsigned char>w[i]
        if _is_stop_ascii(b, n):
            return 0
        if _stop_long and n > STOP_MAX:
            s = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, b, n)
            if s in _stop_set:
                return 0
        if out is not None:
            if s is None:
                s = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, b, n)
            out.append(s)
            return 0
    else:
        s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, w, n)
        if s in _stop_set:
            return 0
        if out is not None:
            out.append(s)
            return 0
    _vocab_add(w, n, s)
    return 0


cdef struct WordBuf:
    Py_UCS4 c[WORD_BUF]     # the word's first WORD_BUF characters
    Py_ssize_t n            # its length so far
    bint ascii


cdef inline int _feed_folded(str f, WordBuf *w, list out) except -1:
    """The characters of a folded form: letters and digits extend the word, others end it."""
    cdef int kind = PyUnicode_KIND(f)
    cdef void *data = PyUnicode_DATA(f)
    cdef Py_ssize_t j
    cdef Py_UCS4 c
    for j in range(PyUnicode_GET_LENGTH(f)):
        c = PyUnicode_READ(kind, data, j)
        if (_ALNUM_LOWER[c] != 0) if c < 128 else Py_UNICODE_ISALNUM(c):
            if w.n < WORD_BUF:
                w.c[w.n] = c
            w.n += 1
            if c >= 128:
                w.ascii = False
        elif w.n:
            _emit(out, w.c, w.n, w.ascii)
            w.n = 0
            w.ascii = True
    return 0


cdef int _scan(str text, list out) except -1:
    """The words of ``text`` to :func:`_emit`. A text of one-byte characters (Latin-1) is read as
    it is, each character lower-cased and folded through a table (``str.lower`` maps each of them
    on its own); any other text is lower-cased first (capital sigma's lower case depends on what
    follows it)."""
    cdef str low
    cdef Py_ssize_t n, i
    cdef int kind
    cdef void *data
    cdef const unsigned char *d1
    cdef Py_UCS4 ch
    cdef unsigned char a
    cdef WordBuf w
    if not _analyzer_ready:
        raise RuntimeError("analyzer_setup() was not called")
    w.n = 0
    w.ascii = True
    if PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND:
        n = PyUnicode_GET_LENGTH(text)
        d1 = <const unsigned char *>PyUnicode_DATA(text)
        for i in range(n):
            ch = d1[i]
            if ch < 128:
                a = _ALNUM_LOWER[ch]
                if a:
                    if w.n < WORD_BUF:
                        w.c[w.n] = a
                    w.n += 1
                elif w.n:
                    _emit(out, w.c, w.n, w.ascii)
                    w.n = 0
                    w.ascii = True
            else:
                _feed_folded(<str>PyList_GET_ITEM(_latin1_fold, <Py_ssize_t>ch), &w, out)
    else:
        low = text.lower()
        n = PyUnicode_GET_LENGTH(low)
        kind = PyUnicode_KIND(low)
        data = PyUnicode_DATA(low)
        for i in range(n):
            ch = PyUnicode_READ(kind, data, i)
            if ch < 128:
                a = _ALNUM_LOWER[ch]
                if a:
                    if w.n < WORD_BUF:
                        w.c[w.n] = a
                    w.n += 1
                elif w.n:
                    _emit(out, w.c, w.n, w.ascii)
                    w.n = 0
                    w.ascii = True
            else:
                _feed_folded(_folded(ch), &w, out)
    if w.n:
        _emit(out, w.c, w.n, w.ascii)
    return 0


class ColumnBusy(RuntimeError):
    """column() was called while another thread's call runs (the vocabulary is one)."""


def words(str text):
    """``skitter.index.analyze.words(text)`` (after :func:`analyzer_setup`)."""
    cdef list out = []
    _scan(text, out)
    return out


def vocabulary_size():
    """Words in the compiled analyzer's vocabulary (each with its stem once stemmed)."""
    return _vt_used


def clear_vocabulary():
    """Forget the vocabulary (``analyze.column`` does when it holds more than its limit)."""
    if _in_column:
        raise ColumnBusy("clear_vocabulary() during column()")
    _vocab_clear()


def column(str text, dict counts, stem_words):
    """``skitter.index.analyze.column(text, counts)``: the space-joined stems of the words of
    ``text``, each word counted in ``counts``. The words are looked up in a vocabulary that keeps
    each word's str and stem (so a word met again costs no allocation, no stemming and one
    ``counts`` update per text, not per occurrence); the stems of words met for the first time
    come from one call of ``stem_words`` (a list of words -> the list of their stems)."""
    global _occ_n, _touched_n, _in_column
    cdef Py_ssize_t i, k, n
    cdef VEntry *e
    cdef list misses
    cdef list out
    cdef object w, got, s
    cdef PyObject *p
    if _in_column:   # another thread's call (fold_char and stem_words are Python: they may switch)
        raise ColumnBusy("column() is running in another thread")
    _in_column = True
    try:
        _scan(text, None)
        n = _occ_n
        if n == 0:
            return ""
        misses = [<object>_vt[_touched[k]].word for k in range(_touched_n) if _vt[_touched[k]].stem == NULL]
        if misses:
            got = stem_words(misses)
            if len(got) != len(misses):
                raise ValueError("stem_words returned another number of stems")
            i = 0
            for k in range(_touched_n):
                e = &_vt[_touched[k]]
                if e.stem == NULL:
                    s = got[i]
                    if type(s) is not str:
                        raise TypeError("stem_words must return str")
                    i += 1
                    Py_INCREF(s)
                    e.stem = <PyObject *>s
        for k in range(_touched_n):
            e = &_vt[_touched[k]]
            w = <object>e.word
            p = PyDict_GetItem(counts, w)
            PyDict_SetItem(counts, w, e.n if p == NULL else <object>p + e.n)
        out = PyList_New(n)
        for i in range(n):
            s = <object>_vt[_occ[i]].stem
            Py_INCREF(s)
            PyList_SET_ITEM(out, i, s)
        return " ".join(out)
    finally:
        for k in range(_touched_n):
            _vt[_touched[k]].n = 0
        _occ_n = 0
        _touched_n = 0
        _in_column = False
