"""How an optional extra looks when it is not installed, installed, or installed but broken, whatever is installed."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType

import pytest


def pretend_installed(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """`find_spec` finds `modules` (as if their packages were installed), whatever is really installed."""
    real: Callable[..., importlib.machinery.ModuleSpec | None] = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, None) if name in modules else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def absent(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """What a package that is not installed looks like to `import` and to `find_spec`."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def broken_import(monkeypatch: pytest.MonkeyPatch, module: str, message: str) -> None:
    """`importlib.import_module(module)` raises `ImportError(message)`, as a package missing a shared library does."""
    real_import = importlib.import_module

    def import_module(name: str, package: str | None = None) -> ModuleType:
        if name == module:
            raise ImportError(message)
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
