"""Step 5 of the crawl loop: what one fetch means for the crawl. Pure: no I/O, no clock of its own.

``decide(candidate, result, analysis, verdict, rules, now)`` gives one :class:`Decision`:

- **retry**: a timeout, a refused connection, a body cut short, a 5xx or a 429, while the candidate has retries
  left: the URL comes back after an exponential backoff (1, 2, 4 … 60 s), or later if the server
  said so (Retry-After). Nothing is stored.
- **redirect**: a 3xx with a Location: the target (canonical) becomes a candidate of its own at
  the same depth, so it passes robots.txt, the URL-seen test and politeness like any link; a bad
  Location, a hop beyond ``max_redirects`` or a redirect to itself is recorded as the error.
- **content**: a 2xx: the page is stored unless the content-seen test found its body before
  (``duplicate_of``); its links are followed unless it is a duplicate or near-duplicate whose
  links its original already had (the :class:`~skitter.neardup.Verdict`: a copy at another URL
  may resolve its relative links elsewhere).
- **final**: anything else (4xx, a 5xx out of retries, a failed fetch): stored as it is.

Separately, ``retry_after``: seconds a 429 or 503 asked the host to wait, whatever else is decided.
"""

from __future__ import annotations

from dataclasses import dataclass

from .analyse import Analysis
from .neardup import Verdict
from .frontier.politeness import parse_retry_after
from .models import Candidate, FetchResult
from .urls import URLError, canonicalize, header_url, resolve

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class Rules:
    retries: int = 2
    max_redirects: int = 5


@dataclass(frozen=True, slots=True)
class Decision:
    kind: str                          # "retry", "redirect", "content" or "final"
    retry_in: float = 0.0              # retry: seconds until the URL is due again
    retry_after: float | None = None   # a 429/503's wish, for the host's politeness clock
    redirect_to: str | None = None     # redirect: the canonical target, None if not followed
    error: str | None = None           # the fetch record's error
    duplicate_of: str | None = None
    near_duplicate_of: str | None = None
    follow_links: bool = False


def backoff(attempts: int) -> float:
    """Seconds before retry number ``attempts + 1``."""
    return min(60.0, 1.0 * (2 ** attempts))


def decide(cand: Candidate, result: FetchResult, analysis: Analysis | None, verdict: Verdict | None,
           rules: Rules, now: float) -> Decision:
    """``now``: seconds since the epoch (a Retry-After may be an HTTP date)."""
    status = result.status
    retry_after = parse_retry_after(result.header("retry-after"), now) if status in (429, 503) else None
    retryable = result.retryable if result.error else (status is not None and (status >= 500 or status == 429))
    if retryable and cand.attempts < rules.retries:
        return Decision("retry", retry_in=max(retry_after or 0.0, backoff(cand.attempts)), retry_after=retry_after)
    if status in REDIRECT_CODES and result.header("location"):
        target, error = _redirect_target(cand, result.header("location") or "", rules)
        return Decision("redirect", retry_after=retry_after, redirect_to=target, error=error)
    if status is not None and 200 <= status < 300:
        v = verdict or Verdict()
        page = analysis.page if analysis is not None else None
        return Decision("content", retry_after=retry_after, error=result.error, duplicate_of=v.duplicate_of,
                        near_duplicate_of=v.near_duplicate_of,
                        follow_links=page is not None and v.follow_links)
    if status in REDIRECT_CODES and result.error is None:   # a redirect that names no target
        return Decision("final", retry_after=retry_after, error=f"redirect: HTTP {status} without a Location")
    return Decision("final", retry_after=retry_after, error=result.error)


def _redirect_target(cand: Candidate, location: str, rules: Rules) -> tuple[str | None, str | None]:
    target = resolve(cand.url, header_url(location))
    try:
        target = canonicalize(target) if target else None
    except URLError:
        target = None
    if target is None:
        return None, "redirect: bad Location header"
    if cand.redirects >= rules.max_redirects:
        return target, f"redirect: more than {rules.max_redirects} hops"
    if target == cand.url:
        return target, "redirect: loop to itself"
    if cand.redirects and target == cand.parent:   # a -> b -> a: b was reached by a's redirect
        return target, "redirect: loop back to the URL that redirected here"
    return target, None
