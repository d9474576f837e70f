"""robots.txt (RFC 9309): pure rules in :mod:`.rules`, an async per-origin cache in :mod:`.cache`."""

from skitter.robots.cache import Getter, RobotsCache, origin_of, robots_url
from skitter.robots.rules import MAX_BYTES, RobotsRules, product_token

__all__ = ["MAX_BYTES", "Getter", "RobotsCache", "RobotsRules", "origin_of", "product_token", "robots_url"]
