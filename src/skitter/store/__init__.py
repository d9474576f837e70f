"""Durable storage of a crawl: the SQLite crawl database and the WARC archive files."""
