"""The sandbox child's functions that raise no audit event, replaced by refusing stubs before the hook is installed.

Loaded by `_bootstrap.py` as a sibling file (like `_policy`, whose hook refuses and reports the events the stubs
raise); ACE never imports it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["UNAUDITED", "remove_unaudited"]

UNAUDITED = {
    "os.mknod": ("posix", "os"),
    "os.mkfifo": ("posix", "os"),
    "os.pidfd_open": ("posix", "os"),
    "signal.pidfd_send_signal": ("_signal", "signal"),
    "signal.signal": ("_signal", "signal"),
    "os.setpriority": ("posix", "os"),
    "os.sched_setaffinity": ("posix", "os"),
    "os.sched_setparam": ("posix", "os"),
    "os.sched_setscheduler": ("posix", "os"),
    "os.posix_fallocate": ("posix", "os"),
    "os.memfd_create": ("posix", "os"),
}
"""Functions (by the event their stub raises, and the modules holding them) that raise no audit event yet act on
files outside the working directory, on other processes, past the disk and memory quotas (`posix_fallocate`,
`memfd_create`) or hand the code a hook's frame (`signal`): replaced by refusing, reported stubs (no originals)."""


def remove_unaudited(denied_modules: frozenset[str]) -> None:
    """Replace the `UNAUDITED` functions by refusing stubs, and `_imp.create_builtin` with them; call before the hook.

    Every built-in module the policy allows is imported now, so the import system never needs `create_builtin`
    again (a fresh `posix` would bring the originals back); its stub refuses what is left by the import event. A
    denied module loaded at startup is forgotten (`sys.modules`, `sys.path_hooks`).
    """
    import _imp
    import signal  # noqa: F401  # holds `pidfd_send_signal` too

    for name in sys.builtin_module_names:
        if name not in sys.modules and name not in denied_modules:  # top-level names: no submodule to check
            __import__(name)
    for name in [n for n in sys.modules if n in denied_modules or n.partition(".")[0] in denied_modules]:
        del sys.modules[name]  # loaded at startup (`zipimport`): the code's import must raise its refused event
    sys.path_hooks[:] = [h for h in sys.path_hooks if getattr(h, "__module__", None) not in denied_modules]
    registries = [getattr(os, n) for n in ("supports_dir_fd", "supports_fd", "supports_follow_symlinks")]
    for event, modules in UNAUDITED.items():
        name = event.rpartition(".")[2]
        original = getattr(sys.modules[modules[0]], name, None)
        if original is None:  # not on this platform
            continue
        stub = _stub(event)
        for module in modules:
            setattr(sys.modules[module], name, stub)
        for registry in registries:  # `os.supports_dir_fd` and co. hold the functions themselves
            if original in registry:
                registry.discard(original)
                registry.add(stub)
    _imp.create_builtin = _create_builtin_stub()


def _stub(event: str) -> Callable[..., NoReturn]:
    """A function that raises `event` (which the hook refuses and reports); it holds no reference to the original."""

    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        sys.audit(event, *args)
        raise PermissionError(f"sandbox: {event} is not allowed")

    refused.__name__ = refused.__qualname__ = event.rpartition(".")[2]
    return refused


def _create_builtin_stub() -> Callable[[Any], NoReturn]:
    def create_builtin(spec: Any) -> NoReturn:
        name = getattr(spec, "name", None)
        sys.audit("import", name, None, None, None, None)  # a denied module: refused as its import
        sys.audit("_imp.create_builtin", name)  # an allowed one is imported already: making it again is refused
        raise ImportError(f"sandbox: built-in module {name!r} cannot be created again")

    return create_builtin
