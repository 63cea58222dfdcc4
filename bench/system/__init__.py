"""Benchmarks of groundbot as a running system: turn latency and throughput (latency), retrieval
as the knowledge base grows to 1M chunks (scale, scale_legs), `groundbot serve` under load with a
worker killed (load, load_traffic), and hostile input (fuzz)."""
