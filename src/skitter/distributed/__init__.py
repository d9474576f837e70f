"""Distributed crawling: what many workers share through one Redis or a Redis Cluster.

- ``ring``: which worker crawls a host (consistent hashing with virtual nodes; pure, no I/O);
- ``seen``: the URL-seen set every worker tests against (exact, in Redis);
- ``redis_url``: ``--redis URL`` to a checked asyncio client, or one clear error line.

Imported by module, not re-exported here: the pure ring must not pull in redis.
"""
