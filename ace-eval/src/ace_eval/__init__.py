"""ace-eval: runs ACE on benchmarks and trace collections, and exports what it learned."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ace-eval")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
