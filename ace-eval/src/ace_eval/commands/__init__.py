"""Click command groups of `ace-eval`, one module each."""
