"""Trace collections, training and the end-to-end run."""
