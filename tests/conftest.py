import sys
from pathlib import Path

# Make the test helpers (tests/hostile.py, ...) importable as top-level modules: `import hostile`.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Property tests have no per-example deadline: `make test` runs the suite in several processes on
# few cores, where an example can wait for a core, and Hypothesis reports an example that met its
# deadline when run again as a flaky test. What they check is results; speed is measured in bench/.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("skitter", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("skitter")


# --- real redis-server processes (tests/redis_servers.py) ------------------------------------

import pytest  # noqa: E402


def _need_redis():
    import redis_servers

    reason = redis_servers.missing_reason()
    if reason:
        pytest.skip(reason)
    return redis_servers


@pytest.fixture
def redis_servers(tmp_path):
    """A factory: ``start(password=..., appendonly=..., tls=...)`` -> a running RedisServer in a
    directory of its own; every server it started is killed after the test, pass or fail."""
    module = _need_redis()
    started = []

    def start(**options):
        server = module.RedisServer(tmp_path / f"redis{len(started)}", **options)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.kill()


@pytest.fixture
def redis_server(redis_servers):
    """One plain redis-server (no password, no persistence), empty, for this test alone."""
    return redis_servers()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A three-master Redis Cluster on loopback, shared by the session (forming one takes about a
    second): tests use key prefixes of their own, or call ``flush()``."""
    module = _need_redis()
    with module.RedisClusterNodes(tmp_path_factory.mktemp("redis-cluster")) as cluster:
        yield cluster
