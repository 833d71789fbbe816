"""Finding and resolving near-duplicate skills."""
