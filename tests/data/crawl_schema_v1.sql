-- The crawl database's schema 1 (skitter 0.1.0 before the seams of issue 19), as a fixture for
-- the migration test (tests/unit/test_db.py). From src/skitter/store/db.py at commit 07d0d04.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL,
    parent TEXT,
    priority REAL NOT NULL,
    seq INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS urls_queued ON urls (host, priority DESC, seq) WHERE state = 0;
CREATE TABLE IF NOT EXISTS fetches (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    fetch_order INTEGER,
    url TEXT NOT NULL,
    final_url TEXT,
    status INTEGER,
    error TEXT,
    fetched_at TEXT,
    depth INTEGER,
    parent TEXT,
    host TEXT,
    content_type TEXT,
    content_length INTEGER,
    content_hash TEXT,
    duplicate_of TEXT,
    near_duplicate_of TEXT,
    title TEXT,
    outlinks INTEGER,
    score REAL,
    pagerank REAL,
    hub REAL,
    authority REAL,
    canonical TEXT,
    noindex INTEGER NOT NULL DEFAULT 0,
    nofollow INTEGER NOT NULL DEFAULT 0,
    elapsed REAL,
    ip TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    warc_length INTEGER
);
CREATE INDEX IF NOT EXISTS fetches_order ON fetches (fetch_order);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    url TEXT NOT NULL,
    title TEXT, description TEXT, keywords TEXT, headings TEXT, text TEXT,
    lang TEXT, encoding TEXT, last_modified TEXT, etag TEXT
);
CREATE TABLE IF NOT EXISTS links (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    dst_url TEXT NOT NULL,
    anchor TEXT,
    visibility INTEGER, position INTEGER, distance INTEGER,
    nofollow INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS links_src ON links (src);
CREATE TABLE IF NOT EXISTS contents (hash TEXT PRIMARY KEY, url TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS near_fps (doc_id INTEGER NOT NULL, hash INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS near_sketches (doc_id INTEGER NOT NULL, sketch BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS robots (
    origin TEXT PRIMARY KEY, fetched_at TEXT, outcome TEXT, crawl_delay REAL, sitemaps TEXT
);
CREATE INDEX IF NOT EXISTS links_dst ON links (dst);
