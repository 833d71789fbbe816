"""The recursive reflector: a tool-using session that reads a trace by slices and computes over it in a sandbox."""

from ace.implementations.rr.agent import RecursiveReflector
from ace.implementations.rr.config import RecursiveConfig, cache_retention
from ace.implementations.rr.sandbox import SandboxIsolation, SandboxLimits, SandboxResult, run_code
from ace.implementations.rr.tools import RRDeps, rr_tools

__all__ = [
    "RRDeps",
    "RecursiveConfig",
    "RecursiveReflector",
    "SandboxIsolation",
    "SandboxLimits",
    "SandboxResult",
    "cache_retention",
    "rr_tools",
    "run_code",
]
