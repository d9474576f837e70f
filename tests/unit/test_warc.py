"""WARC output (skitter.store.warc): real files in tmp_path, warcio as the independent reader."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from datetime import datetime, UTC
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from skitter.errors import CrawlDirError
from skitter.models import FetchResult
from skitter.store.warc import WarcLocation, WarcWriter, export_warc, read_record, validate

STARTED = 1_700_000_000.123456


def _result(i: int = 0, body: bytes | None = None, **kw) -> FetchResult:
    raw = body if body is not None else f"<html><body>page {i}</body></html>".encode()
    defaults = dict(
        url=f"http://example.com/dir/page{i}.html?x={i}&y=2",
        status=200,
        reason="OK",
        headers=[("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(raw)))],
        raw_body=raw,
        body=raw,
        request_headers=[("User-Agent", "skitter-test/1"), ("Accept", "*/*")],
        ip="192.0.2.7",
        started=STARTED + i,
    )
    defaults.update(kw)
    return FetchResult(**defaults)


def _html(n: int, rnd: random.Random) -> bytes:
    words = [b"crawl", b"spider", b"index", b"frontier", b"robots", b"anchor", b"link", b"page"]
    out = bytearray(b"<html><body>")
    while len(out) < n:
        out += b"<p>" + b" ".join(rnd.choice(words) for _ in range(12)) + b" %d</p>\n" % rnd.randrange(10**6)
    return bytes(out[:n])


def _records(path: Path) -> list:
    """All records of a file via warcio, digests verified, payload (as stored) read."""
    out = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f, check_digests="raise")
        for rec in it:
            out.append((rec.rec_type, rec.rec_headers, rec.http_headers, rec.raw_stream.read()))
    return out


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.name.endswith(".warc.gz"))


def _members(data: bytes) -> list[bytes]:
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        assert d.eof, "torn gzip member"
        data = d.unused_data
    return out


def _sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


# ----------------------------------------------------------------------------- record content


def test_records_readable_by_warcio(tmp_path: Path) -> None:
    plain = _result(0)
    gz_body = gzip.compress(b"<html>compressed</html>" * 50)
    encoded = _result(
        1,
        body=gz_body,
        headers=[
            ("Content-Type", "text/html"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Encoding", "gzip"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ],
    )
    missing = _result(2, status=404, reason="", headers=[("Content-Length", "999")], body=b"")
    with WarcWriter(tmp_path) as w:
        locs = [w.write(r) for r in (plain, encoded, missing)]
        assert w.write(_result(3, status=None, error="dns: nope")) is None
    assert all(isinstance(loc, WarcLocation) for loc in locs)

    (path,) = _files(tmp_path)
    recs = _records(path)
    assert [r[0] for r in recs] == ["warcinfo"] + ["request", "response"] * 3
    info = recs[0][1]
    assert info.get_header("WARC-Filename") == path.name
    assert info.get_header("Content-Type") == "application/warc-fields"
    assert b"software: skitter/0.1.0" in recs[0][3]

    for k, result in enumerate((plain, encoded, missing)):
        _, req_h, req_http, _ = recs[1 + 2 * k]
        _, resp_h, resp_http, payload = recs[2 + 2 * k]
        for h in (req_h, resp_h):
            assert h.protocol == "WARC/1.1"
            assert h.get_header("WARC-Target-URI") == result.url
            assert h.get_header("WARC-IP-Address") == "192.0.2.7"
            expected_date = datetime.fromtimestamp(result.started, UTC)
            assert h.get_header("WARC-Date") == expected_date.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert req_h.get_header("WARC-Concurrent-To") == resp_h.get_header("WARC-Record-ID")
        assert resp_h.get_header("WARC-Concurrent-To") == req_h.get_header("WARC-Record-ID")
        assert req_h.get_header("Content-Type") == "application/http; msgtype=request"
        assert resp_h.get_header("Content-Type") == "application/http; msgtype=response"
        # digests: recomputed here (warcio also verified them with check_digests="raise")
        assert resp_h.get_header("WARC-Payload-Digest") == _sha1(result.raw_body)
        assert payload == result.raw_body
        # HTTP headers as parsed by warcio
        request_line = f"{req_http.protocol} {req_http.statusline}"
        assert request_line == f"GET /dir/page{k}.html?x={k}&y=2 HTTP/1.1"
        assert req_http.get_header("Host") == "example.com"
        assert req_http.get_header("User-Agent") == "skitter-test/1"
        assert resp_http.get_statuscode() == str(result.status)
        assert resp_http.get_header("Content-Length") == str(len(result.raw_body))
        assert resp_http.get_header("Transfer-Encoding") is None
    assert recs[4][2].get_header("Content-Encoding") == "gzip"
    assert [v for n, v in recs[4][2].headers if n == "Set-Cookie"] == ["a=1", "b=2"]
    assert recs[6][2].statusline == "404 Not Found"

    # block digest recomputed from the raw bytes of one response member
    raw = path.read_bytes()
    member = _members(raw[locs[0].offset : locs[0].offset + locs[0].length])[1]
    head, _, block = member.partition(b"\r\n\r\n")
    block = block[: -len(b"\r\n\r\n")]
    assert f"WARC-Block-Digest: {_sha1(block)}".encode() in head
    assert block.endswith(plain.raw_body)

    # content_stream() decodes the kept Content-Encoding back to the page
    with open(path, "rb") as f:
        f.seek(locs[1].offset)
        it = iter(ArchiveIterator(f))
        next(it)
        assert next(it).content_stream().read() == b"<html>compressed</html>" * 50


def _fastwarc_pair(result: FetchResult, uri: str, request_id: bytes, response_id: bytes) -> tuple[bytes, bytes]:
    """The two records as fastwarc's ``WarcRecord.write`` serialises them (digests computed by
    fastwarc), with the given record ids: the reference for :func:`skitter.store.warc._pair`."""
    import io

    from fastwarc.warc import WarcRecord, WarcRecordType

    from skitter.store.warc import _clean, _request_block, _response_block_head, _warc_date

    req, resp = WarcRecord(), WarcRecord()
    req.init_headers(WarcRecordType.request)
    resp.init_headers(WarcRecordType.response)
    for rec, own, other in ((req, request_id, response_id), (resp, response_id, request_id)):
        rec.headers["WARC-Record-ID"] = own.decode()
        rec.headers["WARC-Date"] = _warc_date(result.started)
        rec.headers["WARC-Target-URI"] = _clean(uri)
        if result.ip:
            rec.headers["WARC-IP-Address"] = _clean(result.ip)
        rec.headers["WARC-Concurrent-To"] = other.decode()
        rec.is_http = True
    req.set_bytes_content(_request_block(result))
    resp.set_bytes_content(_response_block_head(result) + result.raw_body)
    out = []
    for rec, digest in ((req, None), (resp, hashlib.sha1(result.raw_body).digest())):
        buf = io.BytesIO()
        rec.write(buf, checksum_data=True, payload_digest=digest)
        out.append(buf.getvalue())
    return out[0], out[1]


_header_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(path=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FF), max_size=40),
       ip=st.sampled_from([None, "192.0.2.7", "::1", "10.0.0.1\r\nX: y"]),
       status=st.sampled_from([200, 204, 301, 404, 599]), reason=st.sampled_from(["", "OK", "Weird Reason"]),
       headers=st.lists(st.tuples(st.sampled_from(["Content-Type", "X-A", "Set-Cookie", "Transfer-Encoding",
                                                    "Content-Length"]), _header_text), max_size=6),
       body=st.binary(max_size=3000), started=st.floats(1, 4e9))
def test_records_are_fastwarcs_byte_for_byte(path, ip, status, reason, headers, body, started) -> None:
    """skitter writes the request and response records itself (fastwarc's serialiser took a
    quarter of the worker's archiving time, docs/benchmarks.md); they are fastwarc's records,
    header for header and byte for byte, digests included."""
    from skitter.store.warc import _pair

    result = _result(0, body=body, url="http://example.com/" + path, ip=ip, status=status, reason=reason,
                     headers=headers, started=started)
    ids = (b"<urn:uuid:00000000-0000-4000-8000-000000000001>", b"<urn:uuid:00000000-0000-4000-8000-000000000002>")
    assert _pair(result, result.url, *ids) == _fastwarc_pair(result, result.url, *ids)


def test_header_values_cannot_break_record_structure(tmp_path: Path) -> None:
    evil = _result(0, headers=[("X-Evil", "a\r\n\r\nWARC/1.1"), ("X-Utf8", "caf\u00e9")])
    with WarcWriter(tmp_path) as w:
        loc = w.write(evil, target_uri="http://example.com/canonical")
    (path,) = _files(tmp_path)
    assert validate(path) == 3
    headers, payload = read_record(path, loc.offset)
    assert payload == evil.raw_body
    assert ("X-Evil", "a    WARC/1.1") in headers
    recs = _records(path)
    assert recs[2][1].get_header("WARC-Target-URI") == "http://example.com/canonical"


def test_failed_fetch_writes_nothing(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    before = w.flush()
    assert w.write(_result(0, status=None, error="connect: refused")) is None
    assert w.flush() == before
    w.close()
    assert validate(_files(tmp_path)[0]) == 1


# ----------------------------------------------------------------------------- offsets, members


def test_offsets_seek_straight_to_each_pair(tmp_path: Path) -> None:
    rnd = random.Random(5)
    results = [_result(i, body=_html(rnd.randrange(100, 30_000), rnd)) for i in range(12)]
    with WarcWriter(tmp_path) as w:
        locs = [w.write(r) for r in results]
        name, end = w.flush()
    (path,) = _files(tmp_path)
    assert name == path.name and end == path.stat().st_size == locs[-1].offset + locs[-1].length
    data = path.read_bytes()
    # every record is its own gzip member
    assert len(_members(data)) == 1 + 2 * len(results)
    for loc, result in zip(locs, results):
        assert loc.filename == path.name
        pair = _members(data[loc.offset : loc.offset + loc.length])
        assert len(pair) == 2 and b"WARC-Type: request" in pair[0] and b"WARC-Type: response" in pair[1]
        with open(path, "rb") as f:
            f.seek(loc.offset)
            it = ArchiveIterator(f, check_digests="raise")
            req = next(it)
            assert req.rec_type == "request"
            resp = next(it)
            assert resp.rec_type == "response"
            assert resp.rec_headers.get_header("WARC-Target-URI") == result.url
            assert resp.raw_stream.read() == result.raw_body
        headers, payload = read_record(path, loc.offset)
        assert payload == result.raw_body
        assert dict(headers)["Content-Length"] == str(len(result.raw_body))
        # the response member's own offset works too
        first_len = len(data[loc.offset :]) - len(_gzip_rest(data[loc.offset :]))
        assert read_record(path, loc.offset + first_len)[1] == result.raw_body
    with pytest.raises(ValueError):
        read_record(path, 0)  # the warcinfo record is not a response


def _gzip_rest(data: bytes) -> bytes:
    d = zlib.decompressobj(31)
    d.decompress(data)
    return d.unused_data


def test_rolls_over_max_file_bytes(tmp_path: Path) -> None:
    rnd = random.Random(7)
    limit = 40_000
    with WarcWriter(tmp_path, prefix="roll", max_file_bytes=limit) as w:
        locs = [w.write(_result(i, body=rnd.randbytes(9_000))) for i in range(20)]
    files = _files(tmp_path)
    assert len(files) > 3
    serials = [int(p.name.rsplit("-", 1)[1].split(".")[0]) for p in files]
    assert serials == list(range(1, len(files) + 1))
    assert all(p.name.startswith("roll-") for p in files)
    pairs = 0
    for p in files:
        recs = _records(p)
        assert recs[0][0] == "warcinfo" and recs[0][1].get_header("WARC-Filename") == p.name
        assert validate(p) == len(recs)
        pairs += (len(recs) - 1) // 2
        # a file is only rolled once past the limit: its last pair starts below it
        last = [loc for loc in locs if loc.filename == p.name][-1]
        assert last.offset < limit
    assert pairs == 20
    # a new writer in the same directory continues the serials
    with WarcWriter(tmp_path, prefix="roll") as w2:
        assert w2.filename.endswith(f"-{len(files) + 1:05d}.warc.gz")


def test_failed_write_is_cut_back_and_next_write_uses_a_new_file(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    good = w.write(_result(0))
    name, end = w.flush()

    class Exploding:
        """Stands in for the file: lets some bytes reach it, then fails (a full disk)."""

        def __init__(self, f):
            self.f = f

        def write(self, data):
            self.f.write(bytes(data[:100]))
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

    w._f = Exploding(w._f)
    with pytest.raises(OSError):
        w.write(_result(1))
    assert w.flush() == (name, end)
    assert (tmp_path / name).stat().st_size == end
    loc = w.write(_result(2))
    w.close()
    assert loc.filename != name
    for p in _files(tmp_path):
        validate(p)
    assert read_record(tmp_path / good.filename, good.offset)[1] == _result(0).raw_body
    assert read_record(tmp_path / loc.filename, loc.offset)[1] == _result(2).raw_body


# ----------------------------------------------------------------------------- validate


def test_validate_rejects_unclean_files(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as w:
        locs = [w.write(_result(i)) for i in range(3)]
    (path,) = _files(tmp_path)
    good = path.read_bytes()
    assert validate(path) == 7

    bad = tmp_path / "bad.warc.gz"
    # torn tail: half of the last member
    bad.write_bytes(good[: len(good) - (locs[-1].length // 3)])
    with pytest.raises(ValueError):
        validate(bad)
    # garbage after the last member
    bad.write_bytes(good + b"\0garbage")
    with pytest.raises(ValueError):
        validate(bad)
    # two records in one gzip member
    members = _members(good)
    bad.write_bytes(
        b"".join(gzip.compress(m) for m in members[:-2]) + gzip.compress(members[-2] + members[-1])
    )
    with pytest.raises(ValueError):
        validate(bad)
    # a payload byte changed (gzip framing intact): the digests no longer match
    last = members[-1]
    i = last.rindex(b"page 2")
    tampered = last[:i] + b"PAGE 2" + last[i + 6 :]
    bad.write_bytes(b"".join(gzip.compress(m) for m in members[:-1]) + gzip.compress(tampered))
    with pytest.raises(ValueError):
        validate(bad)


def test_validate_without_warcio_uses_fastwarc(tmp_path: Path, monkeypatch) -> None:
    with WarcWriter(tmp_path) as w:
        w.write(_result(0, body=gzip.compress(b"x" * 1000), headers=[("Content-Encoding", "gzip")]))
        w.write(_result(1))
    (path,) = _files(tmp_path)
    monkeypatch.setitem(sys.modules, "warcio", None)  # import warcio -> ImportError
    assert validate(path) == 5
    members = _members(path.read_bytes())
    last = members[-1]
    i = last.rindex(b"page 1")
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(
        b"".join(gzip.compress(m) for m in members[:-1])
        + gzip.compress(last[:i] + b"PAGE 1" + last[i + 6 :])
    )
    with pytest.raises(ValueError):
        validate(bad)


# ----------------------------------------------------------------------------- crash repair


def test_resume_truncates_uncommitted_and_torn_records(tmp_path: Path) -> None:
    rnd = random.Random(11)
    w = WarcWriter(tmp_path, max_file_bytes=60_000)
    committed_locs = [w.write(_result(i, body=rnd.randbytes(5_000))) for i in range(5)]
    committed = w.flush()
    for i in range(5, 30):  # uncommitted, rolls into further files
        w.write(_result(i, body=rnd.randbytes(5_000)))
    w.flush()
    # and a torn half record at the end of the last file
    last_file = _files(tmp_path)[-1]
    with open(last_file, "ab") as f:
        f.write(gzip.compress(b"WARC/1.1\r\n" + rnd.randbytes(4000))[:1500])
    # no close(): the process "died"
    assert len(_files(tmp_path)) >= 3

    w2 = WarcWriter.resume(tmp_path, committed, max_file_bytes=60_000)
    files = _files(tmp_path)
    assert [p.name for p in files] == [committed[0], w2.filename]
    assert (tmp_path / committed[0]).stat().st_size == committed[1]
    recs = _records(tmp_path / committed[0])
    urls = [r[1].get_header("WARC-Target-URI") for r in recs if r[0] == "response"]
    assert urls == [_result(i).url for i in range(5)]
    for loc in committed_locs:
        read_record(tmp_path / loc.filename, loc.offset)
    # new writes go to the new file, never the repaired one
    loc = w2.write(_result(99))
    assert loc.filename == w2.filename != committed[0]
    assert w2.filename.endswith("-00002.warc.gz")
    w2.close()
    assert [validate(p) for p in _files(tmp_path)] == [11, 3]


def test_resume_other_forms_and_errors(tmp_path: Path) -> None:
    a = tmp_path / "a"
    w = WarcWriter(a, max_file_bytes=1)  # one pair per file
    for i in range(3):
        w.write(_result(i))
    first = w.flush()
    w.write(_result(3))
    second = w.flush()
    w.write(_result(4))
    names = [p.name for p in _files(a)]
    assert len(names) == 5
    # mapping form: several files with their committed ends
    w2 = WarcWriter.resume(a, {first[0]: first[1], second[0]: second[1]}, max_file_bytes=1)
    w2.close()
    kept = [p.name for p in _files(a)]
    # files 1-4 as committed; file 5 (uncommitted) was deleted and the new writer took serial 5
    assert kept[:4] == names[:4] and len(kept) == 5 and kept[4].endswith("-00005.warc.gz")
    assert [validate(p) for p in _files(a)] == [3, 3, 3, 3, 1]

    # None: nothing was ever committed, every file of the prefix goes; other prefixes stay
    b = tmp_path / "b"
    WarcWriter(b).write(_result(0))
    with WarcWriter(b, prefix="other") as o:
        o.write(_result(1))
    w3 = WarcWriter.resume(b, None)
    w3.close()
    names_b = sorted(p.name for p in _files(b))
    assert len(names_b) == 2 and any(n.startswith("other-") for n in names_b)
    assert all(validate(b / n) in (1, 3) for n in names_b)

    # committed data that is not there is an error, not a silent repair
    c = tmp_path / "c"
    wc = WarcWriter(c)
    wc.write(_result(0))
    name, end = wc.flush()
    wc.close()
    with pytest.raises(CrawlDirError):
        WarcWriter.resume(c, (name, end + 10))
    with pytest.raises(CrawlDirError):
        WarcWriter.resume(c, ("skitter-20200101000000-00042.warc.gz", 10))
    assert (c / name).stat().st_size == end  # nothing was touched


CHILD = textwrap.dedent(
    """
    import json, os, random, sys, time
    from pathlib import Path
    from skitter.models import FetchResult
    from skitter.store.warc import WarcWriter

    directory, commit, seed, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rnd = random.Random(seed)
    bodies = [rnd.randbytes(rnd.randrange(1_000, 250_000)) for _ in range(50)]
    w = WarcWriter(directory, max_file_bytes=limit)
    print("ready", flush=True)
    t0 = time.perf_counter()
    for i in range(50):
        w.write(FetchResult(url=f"http://example.com/{i}", status=200, reason="OK",
                            headers=[("Content-Type", "application/octet-stream")],
                            raw_body=bodies[i], started=time.time()))
        if (i + 1) % 10 == 0:
            name, offset = w.flush()
            tmp = commit.with_suffix(".tmp")
            with open(tmp, "w") as f:
                json.dump({"file": name, "offset": offset, "n": i + 1}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, commit)
    print("done", time.perf_counter() - t0, flush=True)
    """
)


def _run_child(tmp_path: Path, run: int, delay: float | None) -> tuple[Path, Path, float]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    d = tmp_path / f"warcs{run}"
    commit = tmp_path / f"commit{run}.json"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(d), str(commit), str(run), "2000000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        if delay is None:
            out = proc.stdout.readline().split()
            assert out[0] == "done"
            proc.wait(30)
            return d, commit, float(out[1])
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        return d, commit, delay
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_survives_kill_9_at_random_moments(tmp_path: Path) -> None:
    # calibrate: how long the 50 writes take on this machine
    _, _, duration = _run_child(tmp_path, 0, None)
    rnd = random.Random(2024)
    outcomes = []
    for run in range(1, 7):
        d, commit, _ = _run_child(tmp_path, run, rnd.uniform(0, duration * 1.1))
        if commit.exists():
            c = json.loads(commit.read_text())
            committed, n = (c["file"], c["offset"]), c["n"]
        else:
            committed, n = None, 0
        # what the crash left behind, for the report: uncommitted bytes, a torn last member
        files = _files(d)
        extra = sum(p.stat().st_size for p in files) - (committed[1] if committed else 0)
        extra -= sum(p.stat().st_size for p in files if committed and p.name < committed[0])
        try:
            validate(files[-1])
            torn = False
        except ValueError:
            torn = True
        outcomes.append((n, extra, torn))
        w = WarcWriter.resume(d, committed, max_file_bytes=2_000_000)
        w.close()
        urls = []
        for p in _files(d):
            assert validate(p) >= 1
            urls += [r[1].get_header("WARC-Target-URI") for r in _records(p) if r[0] == "response"]
        assert urls == [f"http://example.com/{i}" for i in range(n)], (run, committed)
    print(f"\nkill -9 runs (committed fetches, uncommitted bytes, torn last member): {outcomes}")


# ----------------------------------------------------------------------------- export


def test_export_copies_pairs_byte_for_byte(tmp_path: Path) -> None:
    src = tmp_path / "warcs"
    rnd = random.Random(3)
    results = [_result(i, body=_html(rnd.randrange(100, 20_000), rnd)) for i in range(10)]
    with WarcWriter(src, max_file_bytes=12_000) as w:
        locs = [w.write(r) for r in results]
    assert len({loc.filename for loc in locs}) > 1
    pick = [locs[7], locs[1], (locs[4].filename, locs[4].offset, locs[4].length)]
    out = tmp_path / "export.warc.gz"
    placed = export_warc(pick, out, directory=src)
    assert not (tmp_path / "export.warc.gz.part").exists()
    assert validate(out) == 1 + 2 * 3
    recs = _records(out)
    assert [r[0] for r in recs] == ["warcinfo"] + ["request", "response"] * 3
    assert [r[3] for r in recs if r[0] == "response"] == [results[k].raw_body for k in (7, 1, 4)]
    data = out.read_bytes()
    for loc, new in zip((locs[7], locs[1], locs[4]), placed):
        original = (src / loc.filename).read_bytes()[loc.offset : loc.offset + loc.length]
        assert data[new.offset : new.offset + new.length] == original
        assert new.filename == out.name
    assert read_record(out, placed[1].offset)[1] == results[1].raw_body

    # a damaged WARC file is the crawl directory's error (one line from the CLI), not an internal one
    with pytest.raises(CrawlDirError, match="damaged: no gzip member"):
        export_warc([(locs[0].filename, locs[0].offset + 1, 10)], tmp_path / "x.warc.gz", directory=src)
    with pytest.raises(CrawlDirError, match="damaged: .* past the end"):
        export_warc([(locs[-1].filename, locs[-1].offset, 10**9)], tmp_path / "y.warc.gz", directory=src)
    assert not (tmp_path / "x.warc.gz").exists() and not (tmp_path / "y.warc.gz").exists()


# ----------------------------------------------------------------------------- speed


def test_write_throughput_20kb(tmp_path: Path) -> None:
    rnd = random.Random(1)
    bodies = [_html(20_000, rnd) for _ in range(20)]
    results = [_result(i, body=bodies[i % 20]) for i in range(600)]
    with WarcWriter(tmp_path) as w:
        t0 = time.perf_counter()
        for r in results:
            w.write(r)
        w.flush()
        elapsed = time.perf_counter() - t0
    rate = len(results) / elapsed
    size = sum(p.stat().st_size for p in _files(tmp_path))
    print(f"\nWarcWriter.write: {rate:.0f} fetches/s ({2 * rate:.0f} records/s), 20 KB payloads, "
          f"{size / len(results) / 1000:.1f} KB per pair on disk")
    assert rate > 200
