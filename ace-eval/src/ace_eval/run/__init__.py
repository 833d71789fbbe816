"""The run folder and its record: lock, `run.json`, the samples journal, sessions, usage, spans and checkpoint."""
