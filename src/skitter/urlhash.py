"""A URL's fingerprint, in a module of its own: the live index process needs the hash and not the
URL parser (``skitter.urls`` loads ada through cffi: 3.6 MB of that process's memory, issue #18).
``skitter.urls.fingerprint`` is this function."""

from __future__ import annotations

import xxhash

__all__ = ["fingerprint"]


def fingerprint(canonical_url: str) -> int:
    """64-bit xxh3 hash of the UTF-8 bytes of ``canonical_url``, as a signed 64-bit integer
    (so that it fits an SQLite INTEGER column)."""
    h = xxhash.xxh3_64_intdigest(canonical_url.encode())
    return h - 0x10000000000000000 if h >= 0x8000000000000000 else h
