"""Retrieval-quality evaluations of the memory on public conversation benchmarks (LoCoMo)."""
