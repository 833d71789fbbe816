"""The end-to-end run: settings, preflight, the pipeline plan, training, benchmark episodes and grading."""
