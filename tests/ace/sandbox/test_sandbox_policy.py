"""The audit hook's construction: nothing it reads can be rebound, and its decisions, called directly."""

from __future__ import annotations

import builtins
import dis
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from ace.sandbox._policy import DENIED_EVENTS, make_audit_hook

HOME = "/tmp/ace-sandbox-home"
LIBRARY = ("/usr/lib/python3.11",)
NATIVE = frozenset({("_json", LIBRARY[0] + "/lib-dynload/_json.so")})
MUTABLE_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE", "STORE_GLOBAL"}
IMMUTABLE = (str, int, bool, bytes, type(None), frozenset, types.CodeType, types.BuiltinFunctionType, type)


def hook_functions(report_fd: int = -1) -> tuple[Any, list[types.FunctionType]]:
    """The hook and every function reachable through its defaults."""
    hook = make_audit_hook(HOME, LIBRARY, report_fd, NATIVE)
    seen: list[types.FunctionType] = []
    todo: list[Any] = [hook]
    while todo:
        function = todo.pop()
        if any(function is f for f in seen):
            continue
        seen.append(function)
        todo += [d for d in function.__defaults__ or () if isinstance(d, types.FunctionType)]
    return hook, seen


def test_the_hook_reads_no_global_no_closure_and_only_immutable_defaults() -> None:
    hook, functions = hook_functions()
    assert len(functions) == 7 and hook.__globals__ == {}
    for function in functions:
        assert function.__closure__ is None and function.__kwdefaults__ is None, function
        loads = {i.opname for i in dis.get_instructions(function) if i.opname in MUTABLE_LOADS}
        assert loads == set(), (function.__name__, loads)
        assert not any(isinstance(c, types.CodeType) for c in function.__code__.co_consts)  # no nested closures

        def immutable(value: object) -> bool:
            if isinstance(value, tuple):
                return all(immutable(v) for v in value)
            return isinstance(value, (*IMMUTABLE, types.FunctionType)) or value in (os.stat, os.getcwd)

        assert all(immutable(d) for d in function.__defaults__ or ()), function.__name__
    own_codes = hook.__defaults__[0].__defaults__[-1]  # guard -> audit
    assert {c.co_name for c in own_codes} == {f.__name__ for f in functions}


def test_rebinding_builtins_and_os_after_construction_changes_nothing() -> None:
    hook, _ = hook_functions()
    saved = builtins.str, builtins.type, os.getcwd, os.path.realpath
    builtins.str, builtins.type = bytes, lambda _x: str  # type: ignore[assignment,misc]
    os.getcwd, os.path.realpath = (lambda: HOME), (lambda _p, **_k: HOME + "/x")  # type: ignore[assignment]
    try:
        hook("open", ("/etc/passwd", "w", os.O_WRONLY))
    except PermissionError as e:
        refused: PermissionError | None = e
    else:
        refused = None
    finally:
        builtins.str, builtins.type, os.getcwd, os.path.realpath = saved  # type: ignore[misc]
    assert refused is not None and "only files in the working directory" in str(refused)


@pytest.mark.parametrize(
    ("event", "args", "error", "message"),
    [
        ("open", ("/etc/hostname", "r", os.O_RDONLY), PermissionError, "only files in the working directory"),
        ("open", (LIBRARY[0] + "/os.py", "w", os.O_WRONLY), PermissionError, "only files in the working directory"),
        ("open", (HOME + "/../etc/passwd", "r", 0), PermissionError, "a path with '..' is not allowed"),
        ("open", (Path(HOME + "/x"), "r", 0), PermissionError, "a path object is not allowed"),
        ("os.remove", (HOME + "/x", 3), PermissionError, "os.remove with dir_fd is not allowed"),
        ("os.rename", (HOME + "/a", "/tmp/b", -1, -1), PermissionError, "cannot rename '/tmp/b'"),
        ("os.chdir", (3,), PermissionError, "os.fchdir is not allowed"),
        ("import", ("socket", None, [], [], []), ImportError, "module 'socket' is not available"),
        ("import", ("urllib.request.x", None, [], [], []), ImportError, "module 'urllib.request.x'"),
        ("import", ("_tkinter", "/x/_tkinter.so", None, None, None), ImportError, "module '_tkinter'"),
        ("import", ("_lsprof2", "/x/_lsprof2.so", None, None, None), ImportError, "native module '_lsprof2'"),
        ("marshal.loads", (b"\xe3",), PermissionError, "marshal.loads is only allowed"),
        ("sys._getframe", (None,), ValueError, "sys._getframe is not allowed"),
        ("object.__setattr__", (len, "__code__", None), PermissionError, "changing '__code__'"),
        *[(event, (), PermissionError, f"{event} is not allowed") for event in sorted(DENIED_EVENTS)],
    ],
)
def test_refusals(event: str, args: tuple[Any, ...], error: type[Exception], message: str) -> None:
    hook, _ = hook_functions()
    with pytest.raises(error, match=message):
        hook(event, args)


def test_allowed_events_and_the_report_line() -> None:
    read, write = os.pipe()
    try:
        hook, functions = hook_functions(write)
        assert hook("open", (HOME + "/notes.txt", "w", os.O_WRONLY | os.O_CREAT)) is None  # not there yet: created
        assert hook("open", (LIBRARY[0] + "/json/__init__.py", "r", os.O_RDONLY)) is None
        assert hook("open", (3, "r", 0)) is None  # an open descriptor
        assert hook("import", ("_json", LIBRARY[0] + "/lib-dynload/_json.so", None, None, None)) is None
        for name, path in [("_json", HOME + "/evil.so"), ("_bisect", LIBRARY[0] + "/lib-dynload/_json.so")]:
            with pytest.raises(ImportError, match=r"native module .* is not available"):
                hook("import", (name, path, None, None, None))  # an allowed name from another file, or vice versa
        assert hook("os.listdir", (HOME + "/sub",)) is None
        assert hook("object.__setattr__", (hook_functions, "__doc__", "x")) is None  # not a hook function
        with pytest.raises(PermissionError, match="'__defaults__' of a function is not allowed"):
            hook("object.__setattr__", (functions[1], "__defaults__", ()))
        with pytest.raises(PermissionError):
            hook("os.remove", ("/etc/passwd", -1))
        os.close(write)
        write = -1
        lines = os.read(read, 65536).decode().splitlines()
        assert lines[:2] == [
            f"import\tnative module '_json' from '{HOME}/evil.so' is not available (only the standard library's own "
            "data-processing extensions load)",
            f"import\tnative module '_bisect' from '{LIBRARY[0]}/lib-dynload/_json.so' is not available (only the "
            "standard library's own data-processing extensions load)",
        ]
        assert lines[2:] == [
            "object.__setattr__\tchanging '__defaults__' of a function is not allowed",
            "os.remove\tcannot remove '/etc/passwd': only the working directory",
        ]
    finally:
        os.close(read)
        if write != -1:
            os.close(write)


def test_removed_functions_are_referenced_nowhere_and_builtins_cannot_be_made_again() -> None:
    # In a fresh interpreter (it replaces functions of `os`): the originals of the unaudited functions are only
    # in our own list afterwards, so no snippet can find them (`os.supports_dir_fd` held them too).
    code = f"""
import gc, importlib.machinery, os, posix, sys, types
originals = [getattr(posix, n) for n in ("mknod", "mkfifo")]
sandbox = {str(Path(__file__).parents[3] / "ace/sandbox")!r}
policy, unaudited = types.ModuleType("policy"), types.ModuleType("unaudited")
exec(compile(open(sandbox + "/_policy.py").read(), "<sandbox>", "exec"), policy.__dict__)
exec(compile(open(sandbox + "/_unaudited.py").read(), "<sandbox>", "exec"), unaudited.__dict__)
unaudited.remove_unaudited(policy.DENIED_MODULES)
print([len(gc.get_referrers(f)) for f in originals], os.mknod in os.supports_dir_fd, os.mknod is posix.mknod)
try:
    import _imp
    _imp.create_builtin(importlib.machinery.ModuleSpec("posix", None))
except ImportError as e:
    print(e)
"""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[1, 1] True True", "sandbox: built-in module 'posix' cannot be created again"]


def test_a_refusal_leads_to_no_frame_that_holds_the_report_token() -> None:
    # What a snippet can reach from a caught refusal: its traceback's frames, their locals, and whatever
    # functions, tuples and exceptions those lead to. The token (and the report descriptor) must not be there.
    token = "0123456789abcdef-secret"
    hook = make_audit_hook(HOME, LIBRARY, -1, NATIVE, token)
    with pytest.raises(PermissionError) as caught:
        hook("os.remove", ("/etc/passwd", -1))
    error = caught.value
    assert error.__context__ is None and error.__cause__ is None
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    assert [f.f_code.co_name for f in frames][-1] == "guard"  # the hook's only frame: `audit`'s are not there
    seen: list[Any] = []
    todo: list[Any] = [v for f in frames[-1:] for v in f.f_locals.values()]
    while todo:
        value = todo.pop()
        if any(value is v for v in seen):
            continue
        seen.append(value)
        assert not (isinstance(value, str) and token in value), "the token is reachable from the traceback"
        if isinstance(value, types.FunctionType):
            todo += [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
        elif isinstance(value, (tuple, list, frozenset)):
            todo += list(value)
        elif isinstance(value, BaseException):
            todo += [value.__context__, value.__cause__, *value.args]
    assert all(not isinstance(v, types.FunctionType) for v in seen), "a hook function is reachable"
