"""Every setting in the registry is documented, and the README leads with the two commands."""

from pathlib import Path

from skitter.config import SETTINGS

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented():
    text = (ROOT / "docs" / "settings.md").read_text()
    for s in SETTINGS:
        flag = "--" + s.name.replace("_", "-")
        assert f"`{flag}`" in text, f"{flag} is not in docs/settings.md"
        assert str(s.default) in text or s.name == "user_agent", f"default of {flag} not in docs/settings.md"


def test_readme_quick_start():
    text = (ROOT / "README.md").read_text()
    assert text.index("make demo") < text.index("make test") < text.index("skitter crawl")


def test_public_names():
    import skitter

    assert skitter.__all__ and all(hasattr(skitter, n) for n in skitter.__all__)


def test_pure_modules_do_no_io():
    """The I/O-free core (STYLE.md habit 2) imports no asyncio, sqlite3, HTTP client or redis."""
    import ast

    pure = ["urls.py", "parse.py", "linkfilter.py", "models.py", "errors.py", "robots/rules.py",
            "frontier/politeness.py", "strategies/bfs.py", "strategies/dfs.py", "strategies/base.py",
            "strategies/pdd.py", "strategies/weight.py", "strategies/cosine.py", "strategies/shark.py",
            "strategies/importance.py", "strategies/topic.py", "dedup.py", "search/query.py", "search/compile.py",
            "sitemaps.py", "demo/changing.py", "recrawl/estimate.py", "recrawl/policy.py",
            "recrawl/freshness.py", "forms.py", "demo/hidden.py", "distributed/ring.py"]
    banned = {"asyncio", "sqlite3", "aiohttp", "redis", "socket", "httpx", "subprocess"}
    for rel in pure:
        tree = ast.parse((ROOT / "src" / "skitter" / rel).read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module.split(".")[0]]
            assert not banned.intersection(names), f"{rel} imports {banned.intersection(names)}"
