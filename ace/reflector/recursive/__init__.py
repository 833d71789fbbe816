"""The recursive reflector: a tool-using session that reads a trace by slices and computes over it in a sandbox."""

from ace.reflector.recursive.agent import RecursiveReflector
from ace.reflector.recursive.config import RecursiveConfig, cache_retention
from ace.reflector.recursive.tools import RRDeps, rr_tools
from ace.sandbox import SandboxIsolation, SandboxLimits, SandboxResult, run_code

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
