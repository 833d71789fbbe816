"""Pipeline steps, one per module: reflect, update, deduplicate, export, persist."""
