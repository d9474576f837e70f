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


PURE = ["urls.py", "parse.py", "linkfilter.py", "models.py", "errors.py", "robots/rules.py", "decide.py",
        "frontier/politeness.py", "strategies/bfs.py", "strategies/dfs.py", "strategies/base.py",
        "strategies/pdd.py", "strategies/weight.py", "strategies/cosine.py", "strategies/shark.py",
        "strategies/importance.py", "strategies/topic.py", "dedup.py", "search/query.py", "search/compile.py",
        "sitemaps.py", "demo/changing.py", "recrawl/estimate.py", "recrawl/policy.py",
        "recrawl/freshness.py", "forms.py", "demo/hidden.py", "distributed/ring.py", "eval/crawl.py"]


def test_pure_modules_do_no_io():
    """The I/O-free core (STYLE.md habit 2) imports no asyncio, sqlite3, HTTP client or redis."""
    import ast

    banned = {"asyncio", "sqlite3", "aiohttp", "redis", "socket", "httpx", "subprocess", "pycurl", "urllib.request"}
    for rel in PURE:
        tree = ast.parse((ROOT / "src" / "skitter" / rel).read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module.split(".")[0]]
            assert not banned.intersection(names), f"{rel} imports {banned.intersection(names)}"


# what a call may not be in a pure module: I/O, the clock, the environment, the process
IO_NAMES = {"open", "print", "input", "exec", "eval", "__import__"}
IO_ATTRIBUTES = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "exists", "is_file", "is_dir",
                 "iterdir", "glob", "rglob", "mkdir", "unlink", "rmdir", "stat", "touch", "getenv", "environ",
                 "system", "popen", "sleep", "time", "monotonic", "perf_counter", "now", "today", "utcnow",
                 "urandom", "getpid"}


def test_pure_modules_call_no_io():
    """Checked by what they call, not only by what they import: no file, clock, environment or
    process access (a module on the list may still be handed an object that does I/O)."""
    import ast

    for rel in PURE:
        tree = ast.parse((ROOT / "src" / "skitter" / rel).read_text())
        bad = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in IO_NAMES:
                    bad.append(f"{f.id}() at line {node.lineno}")
                elif isinstance(f, ast.Attribute) and f.attr in IO_ATTRIBUTES:
                    bad.append(f".{f.attr}() at line {node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr == "environ":
                bad.append(f".environ at line {node.lineno}")
        assert not bad, f"{rel} does I/O: {', '.join(bad)}"
