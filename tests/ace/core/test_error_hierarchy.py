"""Every exception class of `ace` and `ace_eval` is a `UserError` or a `RunError` (`ace.exceptions`), so the CLI
reports it with its message and exit status, never a traceback."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import click

import ace
import ace_eval
from ace.exceptions import AceError, RunError, UserError

_SKIP = {"ace_eval.__main__"}


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        if info.name not in _SKIP and ".rr._bootstrap" not in info.name:  # the sandbox's bootstrap runs on import
            found.append(importlib.import_module(info.name))
    return found


def error_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined (not imported) in a module of the two packages, by qualified name."""
    out: dict[str, type[BaseException]] = {}
    for module in [*_modules(ace), *_modules(ace_eval)]:
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                out[f"{module.__name__}.{name}"] = value
    return out


def test_every_error_class_is_a_user_error_or_a_run_error() -> None:
    classes = error_classes()
    assert len(classes) >= 30, sorted(classes)
    outside = sorted(
        name
        for name, cls in classes.items()
        if cls not in (AceError, UserError, RunError)
        and not issubclass(cls, UserError | RunError)
        and not issubclass(cls, click.ClickException)  # the CLI's own reports of them
        and not issubclass(cls, KeyboardInterrupt)  # a stop signal (serve's LearningStopped, as Ctrl-C), not an error
    )
    assert outside == [], "subclass ace.exceptions.UserError (the user fixes it) or RunError (a run failed)"


def test_the_families_do_not_overlap() -> None:
    both = sorted(
        name for name, cls in error_classes().items() if issubclass(cls, UserError) and issubclass(cls, RunError)
    )
    assert both == []
