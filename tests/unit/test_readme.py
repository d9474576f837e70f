"""README's Python example runs as written, against the demo web on loopback instead of example.org."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_the_python_example_runs(tmp_path, monkeypatch, capsys):
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## From Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "skitter.crawl(" in code and "open_crawl" in code
    monkeypatch.chdir(tmp_path)
    with DemoServer(DemoConfig(hosts=8, pages=200, seed=4, crawl_delay=0)) as srv:
        code = code.replace('["https://example.org/"]', repr(srv.web.seeds()))
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["stopped", "20"]          # the budget of 20 reached
    pages = [line for line in out[1:] if line.endswith("links")]
    assert len(pages) >= 15 and all(line.startswith("http://127.0.0.") for line in pages)
    assert (tmp_path / "crawl" / "crawl.db").exists()
