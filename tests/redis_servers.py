"""Real redis-server processes for tests, on 127.0.0.1 free ports, each in a directory of its own.

    from redis_servers import RedisServer, RedisClusterNodes

    with RedisServer(tmp_path, password=secrets.token_hex(8), appendonly=True) as srv:
        srv.url              # "redis://:PASSWORD@127.0.0.1:PORT/0" (rediss:// with tls=...)
        srv.admin()          # a synchronous redis-py client, for checks and set-up
        srv.restart()        # SIGTERM, then the same port and directory: the AOF is read back
        srv.kill()           # SIGKILL, a crash; srv.start() brings it back
    with RedisClusterNodes(tmp_path) as cluster:   # three masters, all 16,384 slots, cluster_state:ok
        cluster.url          # the first node's URL (a cluster client finds the others)
        cluster.nodes[1].kill()

No fakes: the tests talk to the Redis that production uses (DESIGN.md, Dependencies). The
fixtures in conftest.py (``redis_server``, ``redis_servers``, ``redis_cluster``) skip a test with
a clear message when ``redis-server`` is not installed (``.ci/run`` installs Debian's).

No orphans: every process is killed by its ``with`` block or fixture even when the test fails,
by an ``atexit`` hook if those never ran, and by the kernel (``PR_SET_PDEATHSIG``) if the test
process itself is killed: so a process started from the main thread; one started from another
thread is tied to that thread's life instead, so the hook is not set there.
"""

from __future__ import annotations

import atexit
import ctypes
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import quote

import redis

__all__ = ["RedisServer", "RedisClusterNodes", "TLSFiles", "missing_reason"]

START_TIMEOUT = 15.0       # seconds for a server to answer PING (an AOF is replayed first)
CLUSTER_TIMEOUT = 30.0     # seconds for three nodes to agree on cluster_state:ok
SLOTS = 16384

_live: set[subprocess.Popen] = set()   # every process started and not yet reaped


def missing_reason() -> str | None:
    """Why the Redis tests cannot run here, or None when they can."""
    if shutil.which("redis-server") is None:
        return ("redis-server is not installed (Debian: apt-get install redis-server; "
                ".ci/run installs it)")
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_all_at_exit() -> None:
    for proc in list(_live):
        proc.kill()
        proc.wait()
    _live.clear()


atexit.register(_kill_all_at_exit)


def _die_with_parent() -> None:
    """In the child before exec: the kernel SIGKILLs it when the thread that started it ends."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class TLSFiles:
    """PEM files for a TLS server: its certificate chain, its key, and the CA that signed it."""

    def __init__(self, cert: Path, key: Path, ca: Path) -> None:
        self.cert, self.key, self.ca = cert, key, ca

    @classmethod
    def throwaway(cls, directory: Path) -> TLSFiles:
        """A new CA and a certificate it signed for 127.0.0.1 (trustme), written to ``directory``."""
        import trustme

        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        files = cls(Path(directory) / "cert.pem", Path(directory) / "key.pem", Path(directory) / "ca.pem")
        cert.cert_chain_pems[0].write_to_path(files.cert)
        for extra in cert.cert_chain_pems[1:]:
            extra.write_to_path(files.cert, append=True)
        cert.private_key_pem.write_to_path(files.key)
        ca.cert_pem.write_to_path(files.ca)
        return files


class RedisServer:
    """One redis-server process; ``start`` picks a free port once and keeps it across restarts."""

    def __init__(self, directory: Path, *, password: str | None = None, appendonly: bool = False,
                 cluster: bool = False, tls: TLSFiles | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.appendonly = appendonly
        self.cluster = cluster
        self.tls = tls
        self.port: int | None = None
        self.bus_port: int | None = None
        self.proc: subprocess.Popen | None = None

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> RedisServer:
        """Start the server and wait for its PING. A first start retries on a port taken in the
        meantime by someone else; a restart must get its old port back."""
        attempts = 3 if self.port is None else 1
        for attempt in range(attempts):
            if self.port is None or attempt > 0:
                self.port, self.bus_port = free_port(), free_port()
            self._spawn()
            try:
                self._wait_ready()
                return self
            except RuntimeError:
                self.kill()
                if attempt == attempts - 1 or "Address already in use" not in self.log_tail():
                    raise
        return self

    def stop(self) -> None:
        """SIGTERM (with appendonly, the AOF is flushed first), SIGKILL if it takes over 10 s."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._forget()

    def kill(self) -> None:
        """SIGKILL: a crash. What was acknowledged is in the AOF (Redis writes it before replying)."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self._forget()

    def restart(self) -> RedisServer:
        self.stop()
        return self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()

    # --- addresses and clients ----------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "rediss" if self.tls else "redis"
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return f"{scheme}://{auth}127.0.0.1:{self.port}/0"

    def admin(self, **kwargs) -> redis.Redis:
        """A synchronous client for checks and set-up (the code under test uses asyncio)."""
        options = {"host": "127.0.0.1", "port": self.port, "password": self.password,
                   "socket_timeout": 10, "socket_connect_timeout": 2}
        if self.tls:
            options.update(ssl=True, ssl_ca_certs=str(self.tls.ca))
        return redis.Redis(**(options | kwargs))

    def log_tail(self, lines: int = 20) -> str:
        log = self.directory / "redis.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""

    # --- internals ----------------------------------------------------------------------------

    def _config(self) -> str:
        lines = ["bind 127.0.0.1", f'dir "{self.directory}"', "logfile redis.log", 'save ""',
                 f"appendonly {'yes' if self.appendonly else 'no'}", "appendfsync everysec"]
        if self.tls:
            lines += ["port 0", f"tls-port {self.port}", f'tls-cert-file "{self.tls.cert}"',
                      f'tls-key-file "{self.tls.key}"', f'tls-ca-cert-file "{self.tls.ca}"',
                      "tls-auth-clients no"]
        else:
            lines.append(f"port {self.port}")
        if self.password:
            lines.append(f"requirepass {self.password}")
        if self.cluster:
            lines += ["cluster-enabled yes", "cluster-config-file nodes.conf",
                      f"cluster-port {self.bus_port}", "cluster-node-timeout 2000"]
        return "\n".join(lines) + "\n"

    def _spawn(self) -> None:
        conf = self.directory / "redis.conf"
        conf.write_text(self._config())
        conf.chmod(0o600)   # it holds the password
        main = threading.current_thread() is threading.main_thread()
        self.proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", str(conf)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent if main else None)
        _live.add(self.proc)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        client = self.admin(socket_timeout=1, socket_connect_timeout=0.5)
        try:
            while time.monotonic() < deadline:
                if self.proc is None or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited at start:\n{self.log_tail()}")
                try:
                    client.ping()
                    return
                except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                    time.sleep(0.02)
        finally:
            client.close()
        raise RuntimeError(f"redis-server did not answer PING in {START_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def _forget(self) -> None:
        _live.discard(self.proc)
        self.proc = None


class RedisClusterNodes:
    """A Redis Cluster of ``n`` masters on loopback (no replicas), slots split evenly.

    Created as ``redis-cli --cluster create`` does, without the tool: each node takes its slot
    range and a distinct config epoch while it knows only itself, then the first node MEETs the
    others; ready when every node reports ``cluster_state:ok`` and knows all ``n`` nodes.
    """

    def __init__(self, directory: Path, *, n: int = 3, password: str | None = None,
                 appendonly: bool = False) -> None:
        self.nodes = [RedisServer(Path(directory) / f"node{i}", password=password,
                                  appendonly=appendonly, cluster=True) for i in range(n)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisClusterNodes:
        try:
            for node in self.nodes:
                node.start()
            self._create()
            self.wait_ok()
        except BaseException:
            self.kill()
            raise
        return self

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def __enter__(self) -> RedisClusterNodes:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def flush(self) -> None:
        """Empty every node (a test starting on a clean cluster without a new one)."""
        for node in self.nodes:
            with node.admin() as client:
                client.flushall()

    def wait_ok(self, timeout: float = CLUSTER_TIMEOUT) -> None:
        """Until every node says ``cluster_state:ok`` with all nodes known (after a restart too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self._node_ok(node) for node in self.nodes):
                return
            time.sleep(0.05)
        logs = "\n".join(f"node {node.port}:\n{node.log_tail(5)}" for node in self.nodes)
        raise RuntimeError(f"the cluster did not reach cluster_state:ok in {timeout:.0f} s:\n{logs}")

    def _create(self) -> None:
        n = len(self.nodes)
        for i, node in enumerate(self.nodes):
            with node.admin() as client:
                client.execute_command("CLUSTER ADDSLOTSRANGE", i * SLOTS // n, (i + 1) * SLOTS // n - 1)
                client.execute_command("CLUSTER SET-CONFIG-EPOCH", i + 1)
        with self.nodes[0].admin() as client:
            for node in self.nodes[1:]:
                client.execute_command("CLUSTER MEET", "127.0.0.1", node.port, node.bus_port)

    def _node_ok(self, node: RedisServer) -> bool:
        try:
            with node.admin(socket_timeout=1) as client:
                info = client.execute_command("CLUSTER INFO")
        except redis.RedisError:
            return False
        fields = {str(k): str(v) for k, v in info.items()}   # redis-py parses CLUSTER INFO
        return (fields.get("cluster_state") == "ok"
                and fields.get("cluster_known_nodes") == str(len(self.nodes))
                and fields.get("cluster_slots_ok") == str(SLOTS))
