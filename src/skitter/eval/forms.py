"""The form crawl's evaluation (``skitter eval-forms``): the share of a hidden site's records a crawl
reached against the number of submissions it made, as a table and a PNG curve (issue #22).

A record (a URL of the ground truth) counts as reached when the crawl fetched it with a 2xx. It is
credited to the submission it was reached through (the export's ``via_form``: the submission's own
result pages, or a page first found on them), so the curve says how many records the first N
submissions reached, whenever the crawl got round to fetching them; a record reached by ordinary
links counts from submission 0. Submissions are numbered in the order the planners issued them
(robots.txt refusals included: they spent budget too).

Ground truth: a text file of URLs, one a line (``#`` comments and blank lines skipped), such as
``skitter demo --forms`` writes for the demo's hidden site (``hidden-records.txt``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store.db import CrawlDB
from ..store.forms import SUBMISSION, has_form_tables
from ..urls import URLError, canonicalize

#: The table's columns: records reached after this many submissions.
POINTS = (25, 50, 100, 150, 200, 300, 400, 500, 750, 1000)


@dataclass
class FormCoverage:
    records: int                      # ground-truth records
    submissions: int                  # submissions issued
    requests: int                     # requests the crawl made (all URLs)
    by_links: int = 0                 # records reached without a submission
    reached: list[int] = field(default_factory=list)   # reached[n]: records reached by the first n submissions

    @property
    def total(self) -> int:
        return self.reached[-1] if self.reached else self.by_links

    def share(self, n: int) -> float:
        """Share of the records reached by the first ``n`` submissions."""
        if not self.records:
            return 0.0
        return self.reached[min(n, len(self.reached) - 1)] / self.records

    def first_reaching(self, share: float) -> int | None:
        """The fewest submissions that reached ``share`` of the records, or None."""
        need = share * self.records
        for n, r in enumerate(self.reached):
            if r >= need:
                return n
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "reached": self.total, "share": round(self.total / self.records, 4)
                if self.records else 0.0, "submissions": self.submissions, "requests": self.requests,
                "by_links": self.by_links, "ninety_percent_at": self.first_reaching(0.9),
                "curve": {n: round(100 * self.share(n), 1) for n in POINTS if n <= self.submissions}}


def load_truth(path: Path | str) -> set[str]:
    """The ground truth's URLs, canonical; a UsageError for a file that cannot be read or is empty."""
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise UsageError(f"--truth: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--truth: {path} is not UTF-8 text") from None
    out = set()
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                out.add(canonicalize(line))
            except URLError:
                raise UsageError(f"--truth: {path}: not a URL: {line!r}") from None
    if not out:
        raise UsageError(f"--truth: {path} holds no URL")
    return out


def form_coverage(directory: Path | str, truth: set[str]) -> FormCoverage:
    """The coverage curve of the crawl in ``directory`` against ``truth`` (module docstring)."""
    db = CrawlDB(Path(directory), readonly=True)
    try:
        conn = db.conn
        requests = conn.execute("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL").fetchone()[0]
        if not has_form_tables(conn):
            subs: list[str] = []
            via: dict[str, str] = {}
        else:
            subs = [u for (u,) in conn.execute("SELECT url FROM form_urls WHERE role = ? AND url = via_form"
                                               " ORDER BY id", (SUBMISSION,))]
            via = dict(conn.execute("SELECT url, via_form FROM form_urls"))
        reached = [u for (u,) in conn.execute("SELECT url FROM fetches WHERE fetch_order IS NOT NULL"
                                              " AND status BETWEEN 200 AND 299") if u in truth]
    finally:
        db.conn.close()
    number = {u: i + 1 for i, u in enumerate(subs)}
    credits = sorted(number.get(via.get(u, ""), 0) for u in reached)
    cov = FormCoverage(records=len(truth), submissions=len(subs), requests=requests,
                       by_links=bisect_right(credits, 0))
    cov.reached = [bisect_right(credits, n) for n in range(len(subs) + 1)]
    return cov


def report(name: str, cov: FormCoverage) -> str:
    """The coverage as a Markdown table: records reached (%) after N submissions."""
    points = [n for n in POINTS if n < cov.submissions]
    head = ["crawl", *map(str, points), f"all ({cov.submissions})", "records reached", "requests", "90 % at"]
    ninety = cov.first_reaching(0.9)
    row = [name, *(f"{100 * cov.share(n):.1f}" for n in points), f"{100 * cov.share(cov.submissions):.1f}",
           f"{cov.total:,} of {cov.records:,}", f"{cov.requests:,}", "—" if ninety is None else str(ninety)]
    lines = ["Records reached (%) after N submissions" + (f" ({cov.by_links} by links alone)" if cov.by_links
                                                          else ""),
             "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head), "| " + " | ".join(row) + " |"]
    return "\n".join(lines)


def plot(results: dict[str, FormCoverage], path: Path | str) -> None:
    """The curves, one a crawl, as a PNG file."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, cov in results.items():
        ys = [100 * r / cov.records for r in cov.reached] if cov.records else []
        ax.plot(range(len(ys)), ys, label=f"{name} ({cov.records:,} records)", linewidth=1.6)
    ax.axhline(90, color="gray", linestyle=":", linewidth=1)
    ax.set(title="hidden records reached against submissions", xlabel="submissions", ylabel="records reached (%)",
           ylim=(0, 101))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(str(path), format="png", dpi=90)
