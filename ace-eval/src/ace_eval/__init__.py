"""ace-eval: runs ACE on benchmarks and trace collections, and exports what it learned."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    """`__version__`, read from the installed metadata on first use (importlib.metadata costs ~80 ms to import,
    which `ace-eval --help` need not pay)."""
    if name != "__version__":
        raise AttributeError(f"module 'ace_eval' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("ace-eval")
    except PackageNotFoundError:  # running from a source tree that was not installed
        value = "0.0.0"
    globals()["__version__"] = value
    return value
