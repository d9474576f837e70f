"""HTTP dates (RFC 9110 5.6.7): Last-Modified, Retry-After, Expires.

:func:`parse_http_date` reads IMF-fixdate, ``Sun, 06 Nov 1994 08:49:37 GMT`` (the form servers
send), itself; the obsolete forms (RFC 850, asctime) go to ``email.utils``, imported only then:
1.4 MB a process (the live index's) does not load for the usual Last-Modified. Its answers and
errors are ``email.utils.parsedate_to_datetime``'s, for any text (tests/unit/test_httpdate.py)."""

from __future__ import annotations

from datetime import UTC, datetime

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec"), 1)}


def parse_http_date(value: str) -> datetime:
    """The datetime of an HTTP date (aware, UTC, for IMF-fixdate); raises as ``email.utils``
    does (ValueError, TypeError, IndexError) on text that is none."""
    if len(value) == 29 and value[3:5] == ", " and value.endswith(" GMT") and value[0:3].isalpha():
        month = _MONTHS.get(value[8:11])
        if (month is not None and value[7] == value[11] == value[16] == " " and value[19] == value[22] == ":"
                and value[12] != "0"):   # email.utils reads years below 100 as 19xx or 20xx
            return datetime(int(value[12:16]), month, int(value[5:7]), int(value[17:19]), int(value[20:22]),
                            int(value[23:25]), tzinfo=UTC)
    from email.utils import parsedate_to_datetime   # noqa: PLC0415

    return parsedate_to_datetime(value)


def http_time(value: str | None) -> float | None:
    """The epoch seconds of an HTTP date (a Last-Modified), or None for none or for text that is
    none."""
    if not value:
        return None
    try:
        return parse_http_date(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
