"""The crawl's log: ``DIR/crawl.log`` (warnings and the watchdog's lines, with times) for as long as
a crawl runs, and stderr for warnings, as before a handler existed."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from collections.abc import Iterator

LOG_FILE = "crawl.log"


@contextlib.contextmanager
def crawl_log(directory: Path) -> Iterator[None]:
    logger = logging.getLogger("skitter")
    handlers: list[logging.Handler] = []
    path = Path(directory) / LOG_FILE
    if path.exists() and not path.is_file():   # the first line logged would fail mid-crawl
        from .errors import CrawlDirError   # noqa: PLC0415

        raise CrawlDirError(f"{path} is not a file: the crawl directory is damaged (remove it to go on)")
    try:
        file = logging.FileHandler(Path(directory) / LOG_FILE, encoding="utf-8", delay=True)
    except OSError:
        file = None
    if file is not None:
        file.setLevel(logging.INFO)
        file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handlers.append(file)
    if not logging.getLogger().handlers:   # no application logging set up: warnings on stderr
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.WARNING)
        err.setFormatter(logging.Formatter("skitter: %(levelname)s: %(message)s"))
        handlers.append(err)
    level = logger.level
    for h in handlers:
        logger.addHandler(h)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)
        for h in handlers:
            logger.removeHandler(h)
            h.close()
