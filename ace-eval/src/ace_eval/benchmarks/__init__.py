"""Benchmarks ACE can run an agent on."""
