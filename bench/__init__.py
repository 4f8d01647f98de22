"""Benchmarks: memorybank against the raw driver doing the same work, in one run.

``python -m bench`` (``make bench``) runs every store's benchmark whose server is
reachable and prints markdown tables of medians, p95 and ratios. Ratios, not
wall-clock times, are what the targets in the issues are stated in.
"""
