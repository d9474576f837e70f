"""Serve a static demo web (``DemoWeb.write_static``) with nginx, on loopback only.

One ``server`` block per host: host ``g`` listens on ``ips[g]:port`` and serves ``root/<g>/``.
Everything nginx writes (config, pid file, error log, temp dirs) lives under a work directory;
nginx runs in the foreground (``daemon off``) as a child process, and :meth:`Nginx.stop` (also
registered with ``atexit``) ends it. ``worker_processes 1``: the benchmark shares 2 cores.

What plain static files cannot do is added from ``root/manifest.json`` as exact-match locations:
the redirects (``return 301/302``) and the extra headers (``X-Robots-Tag``, a Content-Type with
a charset; an empty Content-Type sends none). Spider traps are absent (404), and nothing is
gzipped (``gzip off``): both crawlers and the bare client get the same identity-encoded bytes.

The wild web's manifest (``WildWeb.write_static``) has four keys more: ``statuses`` (other
answers, ``return 410;``), ``aliases`` (a path answered with another file, e.g. a directory
without its slash: nginx would redirect it), ``default_type`` (a server's type for files without
an extension) and ``query_files`` (a URL with a query is the file ``/_q<path>/<query>.html``:
``try_files``).
"""

from __future__ import annotations

import atexit
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["Nginx", "find_nginx", "free_port", "loopback_ips", "nginx_version"]


def find_nginx() -> str | None:
    for cand in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def ensure_nginx() -> str:
    """The nginx binary; installs Debian's package (apt-get) if it is missing and we are root."""
    exe = find_nginx()
    if exe:
        return exe
    if os.geteuid() != 0:
        raise RuntimeError("nginx is not installed (apt-get install -y nginx, as root)")
    print("bench: nginx not found, installing Debian's package ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "-qq", "nginx"], check=True, env=env, timeout=900)
    exe = find_nginx()
    if not exe:
        raise RuntimeError("apt-get install nginx did not provide an nginx binary")
    return exe


def nginx_version(exe: str) -> str:
    out = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=30)
    text = (out.stderr or out.stdout).strip()
    return text.split("/", 1)[-1] if "/" in text else text


def loopback_ips(n: int, first: str = "127.0.0.2") -> list[str]:
    base = ipaddress.IPv4Address(first)
    ips = [base + i for i in range(n)]
    net = ipaddress.IPv4Network("127.0.0.0/8")
    for ip in ips:
        if ip not in net:
            raise ValueError(f"{ip} is not a loopback address")
    return [str(ip) for ip in ips]


def _can_bind(ips: list[str], port: int) -> bool:
    socks = []
    try:
        for ip in ips:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((ip, port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def free_port(ips: list[str], preferred: int) -> int:
    """``preferred`` if every IP can bind it, else a port the kernel picks that every IP can bind."""
    if preferred and _can_bind(ips, preferred):
        return preferred
    for _ in range(50):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((ips[0], 0))
        port = s.getsockname()[1]
        s.close()
        if _can_bind(ips, port):
            return port
    raise RuntimeError("no free port on all loopback addresses")


def _q(value: str) -> str:
    """An nginx string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Nginx:
    def __init__(self, exe: str, root: Path, workdir: Path, ips: list[str], port: int) -> None:
        self.exe = exe
        self.root = Path(root).resolve()
        self.workdir = Path(workdir).resolve()
        self.ips = ips
        self.port = port
        self.proc: subprocess.Popen | None = None
        self.conf = self.workdir / "nginx.conf"
        self.pidfile = self.workdir / "nginx.pid"

    # ------------------------------------------------------------------ config

    def config_text(self) -> str:
        manifest_path = self.root / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
        redirects = manifest.get("redirects", {})
        headers = manifest.get("headers", {})
        statuses = manifest.get("statuses", {})
        aliases = manifest.get("aliases", {})
        w = self.workdir
        lines = [
            "# generated by bench/nginx.py: the static demo web on loopback",
            "daemon off;",
            "master_process on;",
            "worker_processes 1;",
            "worker_rlimit_nofile 16384;",
            f"pid {w / 'nginx.pid'};",
            f"error_log {w / 'error.log'} warn;",
            "events { worker_connections 4096; multi_accept on; }",
            "http {",
            "    include /etc/nginx/mime.types;",
            "    default_type application/octet-stream;",
            "    access_log off;",
            "    log_not_found off;",
            "    server_tokens off;",
            "    sendfile on;",
            "    tcp_nopush on;",
            "    tcp_nodelay on;",
            "    keepalive_timeout 75s;",
            "    keepalive_requests 1000000;",
            "    gzip off;",
            "    etag on;",
            "    absolute_redirect off;",
            "    open_file_cache off;  # a cache of open fds would need one fd per cached page",
            f"    client_body_temp_path {w / 'tmp' / 'client_body'};",
            f"    proxy_temp_path {w / 'tmp' / 'proxy'};",
            f"    fastcgi_temp_path {w / 'tmp' / 'fastcgi'};",
            f"    uwsgi_temp_path {w / 'tmp' / 'uwsgi'};",
            f"    scgi_temp_path {w / 'tmp' / 'scgi'};",
        ]
        if not (Path("/etc/nginx/mime.types").exists()):
            lines[lines.index("    include /etc/nginx/mime.types;")] = (
                "    types { text/html html htm; text/plain txt; application/pdf pdf; "
                "application/xml xml; }")
        for g, ip in enumerate(self.ips):
            lines += [
                "    server {",
                f"        listen {ip}:{self.port};",
                f"        root {self.root / str(g)};",
                "        index index.html;",
            ]
            if manifest.get("default_type"):
                lines.append(f"        default_type {_q(manifest['default_type'])};")
            if manifest.get("query_files"):
                lines.append("        location / { try_files /_q$uri/$args.html $uri $uri/ =404; }")
            for path, status in sorted(statuses.get(str(g), {}).items()):
                lines.append(f"        location = {_q(path)} {{ return {int(status)}; }}")
            for path, file in sorted(aliases.get(str(g), {}).items()):
                lines.append(f"        location = {_q(path)} {{ try_files {_q(file)} =404; }}")
            for path, (status, loc) in sorted(redirects.get(str(g), {}).items()):
                lines.append(f"        location = {_q(path)} {{ return {int(status)} {_q(loc)}; }}")
            for path, hdrs in sorted(headers.get(str(g), {}).items()):
                body = []
                for name, value in hdrs:
                    if name.lower() == "content-type":
                        body.append(f"types {{ }} default_type {_q(value)};")
                    else:
                        body.append(f"add_header {name} {_q(value)} always;")
                lines.append(f"        location = {_q(path)} {{ {' '.join(body)} }}")
            lines.append("    }")
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 20.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.workdir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(self.config_text())
        base = [self.exe, "-p", str(self.workdir) + "/", "-c", str(self.conf), "-e", str(self.workdir / "error.log")]
        test = subprocess.run(base + ["-t", "-q"], capture_output=True, text=True, timeout=60)
        if test.returncode != 0:
            raise RuntimeError(f"nginx -t failed:\n{test.stderr.strip()}")
        self.stderr = open(self.workdir / "nginx.stderr", "wb")
        self.proc = subprocess.Popen(base, stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr,
                                     start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        pending = list(self.ips)
        while pending:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.proc.returncode}: "
                                   f"{(self.workdir / 'error.log').read_text(errors='replace')[-2000:]}")
            ip = pending[0]
            try:
                with socket.create_connection((ip, self.port), timeout=1.0):
                    pending.pop(0)
                    continue
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nginx did not listen on {ip}:{self.port} within {timeout} s")
            time.sleep(0.05)

    def check(self, hosts_with_robots: list[int]) -> None:
        """GET / and robots.txt of every host once (a handful of requests, loopback only)."""
        for g, ip in enumerate(self.ips):
            url = f"http://{ip}:{self.port}/"
            with urllib.request.urlopen(url, timeout=10) as r:
                if r.status != 200:
                    raise RuntimeError(f"{url}: status {r.status}")
            if g in hosts_with_robots:
                with urllib.request.urlopen(url + "robots.txt", timeout=10) as r:
                    if r.status != 200:
                        raise RuntimeError(f"{url}robots.txt: status {r.status}")

    def pids(self) -> list[int]:
        if self.proc is None or self.proc.poll() is not None:
            return []
        try:
            import psutil

            p = psutil.Process(self.proc.pid)
            return [p.pid] + [c.pid for c in p.children(recursive=True)]
        except Exception:
            return [self.proc.pid]

    def cpu_seconds(self) -> float:
        """user+sys CPU seconds of the nginx master and workers so far."""
        import psutil

        total = 0.0
        for pid in self.pids():
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGQUIT)  # graceful: workers finish their requests
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        try:
            self.stderr.close()
        except Exception:
            pass

    def __enter__(self) -> Nginx:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
