"""Agents and tools built on the skillbook: skill manager, reflectors, search and rendering."""
