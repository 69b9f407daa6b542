"""Benchmarks (`make bench`); each module runs with `python -m bench.<name>`."""
