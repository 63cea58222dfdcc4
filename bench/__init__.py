"""Benchmarks and evaluations on real data; not run by pytest by default."""
