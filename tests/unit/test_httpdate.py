"""skitter.httpdate: HTTP dates read as email.utils reads them, IMF-fixdate without it."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.httpdate import parse_http_date


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
       st.sampled_from(["fixdate", "rfc850", "asctime", "offset"]))
def test_http_dates_read_like_email_utils(when, form) -> None:
    """IMF-fixdate is read without email.utils (the live index process then needs none), and
    every HTTP date form exactly as email.utils reads it."""
    when = when.replace(microsecond=0, tzinfo=UTC)
    text = {"fixdate": email.utils.format_datetime(when, usegmt=True),
            "rfc850": when.strftime("%A, %d-%b-%y %H:%M:%S GMT"),
            "asctime": when.strftime("%a %b %d %H:%M:%S %Y").replace(" 0", "  ", 1),
            "offset": when.strftime("%a, %d %b %Y %H:%M:%S +0000")}[form]
    try:
        want = email.utils.parsedate_to_datetime(text)
    except (ValueError, TypeError, IndexError):
        want = None
    try:
        got = parse_http_date(text)
    except (ValueError, TypeError, IndexError):
        got = None
    assert got == want
    if form == "fixdate" and when.year >= 1000:
        assert got == when


@given(st.text(max_size=40) | st.from_regex(r"[A-Z][a-z]{2}, [0-9 ]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT",
                                            fullmatch=True))
def test_http_date_of_any_text_is_email_utils_or_an_error(text) -> None:
    def read(fn):
        try:
            return fn(text)
        except (ValueError, TypeError, IndexError):
            return "error"

    assert read(parse_http_date) == read(email.utils.parsedate_to_datetime)
