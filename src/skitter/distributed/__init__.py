"""Distributed crawling: the pieces many workers share through one Redis (or a Redis Cluster).
"""
