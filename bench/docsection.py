"""Replace one marked section of docs/benchmarks.md, the part between ``<!-- bench:NAME:start -->``
and ``<!-- bench:NAME:end -->`` (appended if absent; the rest of the file is left alone). Every
bench script writes its own section through this."""

from __future__ import annotations

from pathlib import Path


def write_section(path: Path, section: str) -> None:
    """``section`` starts with its start marker and ends with its end marker."""
    section = section.strip("\n")
    start, end = section.splitlines()[0], section.splitlines()[-1]
    if not (start.startswith("<!-- bench:") and start.endswith(":start -->") and end.endswith(":end -->")):
        raise ValueError("a section must start and end with its bench markers")
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")
