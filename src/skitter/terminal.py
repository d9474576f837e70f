"""Text from the web on the user's terminal.

A crawled page's title, a snippet, a URL or a server's message is untrusted: it may hold escape
sequences (``ESC[2J`` clears the screen, ``ESC]0;…`` sets the window's title), other control
characters, bidirectional overrides that reorder what is shown, or square brackets that rich reads
as its markup (``[/b]`` is a closing tag, and one that closes nothing is an error). Everything of
that kind goes through :func:`printable` before a terminal sees it, and through :func:`markup`
where it is part of a rich markup string. The web UI escapes the same text as HTML (Jinja2's
autoescape) and the JSON outputs keep it as it is.
"""

from __future__ import annotations

import re

__all__ = ["printable", "markup", "text"]

# C0 controls but tab, DEL, C1 controls; the bidirectional embeddings, overrides and isolates
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(s: str) -> str:
    """``s`` with its control characters and bidirectional overrides replaced by spaces
    ("\\x1b[31mred" → " [31mred": the sequence shows as text and does nothing)."""
    return _UNPRINTABLE.sub(" ", s)


def markup(s: str) -> str:
    """``s`` made printable and escaped for rich markup (``[b]`` shows as ``[b]``)."""
    from rich.markup import escape

    return escape(printable(s))


def text(s: str):
    """``s`` made printable, as a rich ``Text`` (a table cell that is not read as markup)."""
    from rich.text import Text

    return Text(printable(s))
