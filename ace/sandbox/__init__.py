"""Confinement of model-written code: `run_code` runs it in a separate, limited Python process.

The layers (audit hook, namespaces, Landlock, resource limits) are described in `runner`'s docstring and in the
docs' threat model.
"""

from ace.sandbox.runner import SandboxIsolation, SandboxLimits, SandboxResult, run_code

__all__ = ["SandboxIsolation", "SandboxLimits", "SandboxResult", "run_code"]
