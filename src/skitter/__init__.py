"""skitter: a polite, fast, crash-safe web crawler and search engine."""

__version__ = "0.1.0"

__all__ = ["__version__"]
