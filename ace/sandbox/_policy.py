"""The sandbox child's audit hook: a policy that the code it watches can neither reach nor change.

Loaded by `_bootstrap.py` before the model's code runs; ACE never imports it. `make_audit_hook` builds the hook
from functions that read no globals and no closure cells: everything they use (the working directory, the
read-only roots, the deny lists, the C functions they call) is bound once as positional defaults, so rebinding
a global, `os`, `builtins` or `sys.modules['__main__']` changes nothing the hook sees, and rebinding a hook
function's `__defaults__` or `__code__` is itself refused. Paths must be exact `str`/`bytes` (a `PathLike` could
answer differently to the check and to the open). Each refusal raises `PermissionError` (`ImportError` for
modules, `ValueError` for `sys._getframe`) and is written, after the run's secret token, to the report
descriptor; `guard` re-raises it from a frame that holds neither. `_unaudited.remove_unaudited` replaces the
functions that raise no audit event (the events their stubs raise are denied here). A denied module is refused
by its import event, its files (`open`) and its code (`exec`), which `importlib.import_module` reaches without one.
Files the code creates count against `max_files`.
"""

from __future__ import annotations

import os
import stat
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = [
    "DENIED_EVENTS",
    "DENIED_MODULES",
    "DENIED_PREFIXES",
    "make_audit_hook",
]

AuditHook = Callable[[str, tuple[Any, ...]], None]
Refuse = Callable[..., NoReturn]
CheckPath = Callable[[str, Any, bool, bool], None]

# The deny tables are written as text, one name per word, so the formatter keeps them readable.
DENIED_MODULES = frozenset(
    """
_ctypes _multiprocessing _posixsubprocess _posixshmem _socket _ssl _sqlite3 _dbm
_gdbm _xxsubinterpreters _xxinterpchannels _lsprof _tkinter _curses _curses_panel
asyncio concurrent ctypes dbm faulthandler fcntl ftplib gc http imaplib
mmap multiprocessing nis nntplib ossaudiodev poplib pty readline select
selectors shelve smtplib socket socketserver spwd sqlite3 ssl subprocess
syslog telnetlib termios threading tkinter tty urllib.request webbrowser
xmlrpc zipimport runpy pdb bdb cProfile profile trace tracemalloc
""".split()  # noqa: SIM905 (a table as text)
)
"""Modules refused on import (and their submodules): network, processes, native code, threads, debuggers."""
DENIED_EVENTS = frozenset(
    """
os.system os.kill os.killpg os.forkpty os.link os.symlink os.chown os.setxattr
os.removexattr signal.pthread_kill resource.setrlimit resource.prlimit subprocess.Popen
sys.addaudithook sys.settrace sys.setprofile sys._current_frames sys._current_exceptions
gc.get_objects gc.get_referrers gc.get_referents code.__new__ function.__new__
marshal.load cpython.PyInterpreterState_New fcntl.ioctl webbrowser.open ensurepip.bootstrap
pdb.Pdb builtins.breakpoint sqlite3.connect syslog.openlog syslog.syslog
os.mknod os.mkfifo os.pidfd_open signal.pidfd_send_signal os.setpriority
os.sched_setaffinity os.sched_setparam os.sched_setscheduler _imp.create_builtin signal.signal
os.posix_fallocate os.memfd_create
""".split()  # noqa: SIM905 (a table as text)
)
"""Events refused outright: processes, signals, links, hooks and tracing, heap walks, code objects, limits."""
DENIED_PREFIXES = ("socket.", "ctypes.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "_ssl.", "pty.")
READ_EVENTS = frozenset({"os.listdir", "os.scandir", "os.getxattr", "os.listxattr"})
"""Events whose first argument is a path that may be read (working directory or standard library)."""
WRITE_EVENTS = frozenset({"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.utime", "os.truncate", "os.chdir"})
"""Events whose first argument is a path that may only be in the working directory (an open descriptor is fine)."""
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
DIR_FD_ARG = {"os.remove": 1, "os.rmdir": 1, "os.mkdir": 2, "os.chmod": 2, "os.utime": 3}
"""Position of the `dir_fd` argument: only the current directory (-1/None) is accepted."""


def make_audit_hook(
    home: str,
    read_only: tuple[str, ...],
    report_fd: int,
    native: frozenset[tuple[str, str]] = frozenset(),
    token: str = "",
    max_files: int = 0,
) -> AuditHook:
    """The audit hook for a child whose working directory is `home`; `read_only` roots hold the standard library.

    Paths absolute and free of symbolic links (`os.path.realpath`). Refusals also go to `report_fd`, each line
    after the secret `token`. `native`: the only `(module, file)` pairs a C extension may load as
    (`_native.native_files`). `max_files` (0: none) bounds the files (a tenth: folders) the code makes in `home`.
    """
    import importlib._bootstrap_external as external

    had_gc = "gc" in sys.modules
    import gc  # for `guard` alone: the code's `import gc` must still raise its (refused) import event

    if not had_gc:
        del sys.modules["gc"]

    created: list[int] = []  # 1 per file, 2 per folder the code made; reachable only through the hook
    compile_bytecode = external._compile_bytecode.__code__  # type: ignore[attr-defined]  # the only caller allowed to `marshal.loads`

    def resolve(
        path: Any, type_: Any = type, str_: Any = str, bytes_: Any = bytes, getcwd: Any = os.getcwd
    ) -> str | None:
        """`path` made absolute and normalised; `None` if it is not a plain str/bytes or climbs with `..`."""
        kind = type_(path)
        if kind is bytes_:
            path = path.decode("utf-8", "surrogateescape")
        elif kind is not str_:
            return None
        if path[:1] != "/":
            path = getcwd() + "/" + path
        parts = []
        for part in path.split("/"):
            if part == ".." or "\x00" in part:
                return None
            if part and part != ".":
                parts.append(part)
        return "/" + "/".join(parts)

    def within(path: str, roots: tuple[str, ...]) -> bool:
        for root in roots:  # noqa: SIM110  # not any(...): a generator is a closure
            if path == root or path.startswith(root + "/"):
                return True
        return False

    def refuse(
        event: str,
        detail: str,
        error: Any,
        silent: bool = False,
        fd: int = report_fd,
        write: Any = os.write,
        oserror: Any = OSError,
        prefix: str = "\n" + token + "\t" if token else "",  # a line of its own, whatever the code wrote before
    ) -> NoReturn:
        """Report the refusal on the report descriptor, then raise `error` with a reason the model can act on."""
        if not silent:
            try:
                line = prefix + event + "\t" + detail.replace("\n", " ")[:500] + "\n"
                write(fd, line.encode("utf-8", "backslashreplace"))
            except oserror:
                pass
        raise error("sandbox: " + detail)

    def check_path(
        event: str,
        path: Any,
        writing: bool,
        opening: bool,
        home: tuple[str, ...] = (home,),
        read_only: tuple[str, ...] = read_only,
        resolve: Any = resolve,
        within: Any = within,
        refuse: Refuse = refuse,
        type_: Any = type,
        str_: Any = str,
        bytes_: Any = bytes,
        int_: Any = int,
        bool_: Any = bool,
        stat_: Any = os.stat,
        is_file: Any = stat.S_ISREG,
        missing: Any = FileNotFoundError,
        oserror: Any = OSError,
        denied: Any = PermissionError,
        max_files: int = max_files,
        add: Any = created.append,
        tally: Any = created.count,
        forget: Any = created.remove,
        exists: Any = os.access,
    ) -> None:
        kind = type_(path)
        if kind is int_ or kind is bool_:  # an open descriptor: only ever one the checks allowed
            if opening or event != "os.chdir":
                return None
            refuse(event, "os.fchdir is not allowed", denied)
        full = resolve(path)
        if full is None:
            what = "a path with '..'" if kind is str_ or kind is bytes_ else "a path object"
            fix = "pass the path as a str inside the working directory (str(path), no '..')"
            refuse(event, f"{event}: {what} is not allowed; {fix}", denied)
        if not (within(full, home) or (not writing and within(full, read_only))):
            where = "only files in the working directory can be opened" if opening else "only the working directory"
            refuse(event, f"cannot {event.removeprefix('os.')} {full!r}: {where}", denied)
        if opening or event == "os.mkdir":
            try:
                mode = stat_(full).st_mode
            except missing:
                if writing and max_files:  # a folder is 2 (at most a tenth of them: slow to remove from a disk)
                    folders, folder = tally(2), 2 if event == "os.mkdir" else 1
                    if tally(1) + folders >= max_files or (folder == 2 and folders >= max_files // 10):
                        what = f"at most {max_files} files and {max_files // 10} folders made by the code; remove some"
                        refuse(event, f"cannot create {full!r}: {what}, or write fewer, larger files", denied)
                    add(folder)
                return None
            except oserror:
                refuse(event, f"cannot {event.removeprefix('os.')} {full!r}", denied)
            if opening and not is_file(mode):
                refuse(event, f"cannot open {full!r}: only regular files can be opened", denied)
        elif event == "os.remove" and tally(1) and exists(full.rpartition("/")[0] or "/", 3):  # its folder W_OK | X_OK
            # stat raises what the removal would; a folder's place is never freed (rmdir fails unless it is empty)
            forget(1) if is_file(stat_(full).st_mode) else None
        return None

    def trusted_bytecode(
        data: Any,
        read_only: tuple[str, ...] = read_only,
        code: Any = compile_bytecode,
        within: Any = within,
        type_: Any = type,
        str_: Any = str,
        bytes_: Any = bytes,
        getframe: Any = sys._getframe,
        open_: Any = os.open,
        read: Any = os.read,
        close: Any = os.close,
        flags: int = os.O_RDONLY,
    ) -> bool:
        """Whether `marshal.loads(data)` is the import system loading a standard-library `.pyc`, unmodified."""
        caller = getframe(0).f_back.f_back.f_back  # this frame, `audit`'s, `guard`'s, then the caller of marshal.loads
        if caller is None or caller.f_code is not code:
            return False
        path = caller.f_locals.get("bytecode_path")
        if type_(path) is not str_ or not path.endswith(".pyc") or "/../" in path or not within(path, read_only):
            return False
        fd = open_(path, flags)
        try:
            chunks = []
            while chunk := read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            close(fd)
        return type_(data) is bytes_ and b"".join(chunks)[16:] == data

    def audit(
        event: Any,
        args: tuple[Any, ...],
        denied_events: frozenset[str] = DENIED_EVENTS,
        denied_prefixes: tuple[str, ...] = DENIED_PREFIXES,
        denied_modules: frozenset[str] = DENIED_MODULES,
        extensions: frozenset[tuple[str, str]] = native,
        read_events: frozenset[str] = READ_EVENTS,
        write_events: frozenset[str] = WRITE_EVENTS,
        dir_fd_arg: tuple[tuple[str, int], ...] = tuple(DIR_FD_ARG.items()),
        check_path: CheckPath = check_path,
        trusted_bytecode: Callable[[Any], bool] = trusted_bytecode,
        refuse: Refuse = refuse,
        resolve: Any = resolve,
        read_only: tuple[str, ...] = read_only,
        code_type: Any = types.CodeType,
        type_: Any = type,
        str_: Any = str,
        bytes_: Any = bytes,
        int_: Any = int,
        write_flags: int = WRITE_FLAGS,
        function: Any = types.FunctionType,
        denied: Any = PermissionError,
        import_error: Any = ImportError,
        value_error: Any = ValueError,
        own_codes: tuple[Any, ...] = (),
    ) -> None:
        if type_(event) is not str_:
            refuse("audit", "an audit event with a non-str name is not allowed", denied)
        if event == "import" or event == "open" or event == "exec":  # `importlib` loads a file without "import"
            target = args[0]
            if event == "exec":
                target = target.co_filename if type_(target) is code_type else None
            if event == "import" and type_(target) is not str_:
                refuse(event, "import of a non-str module name is not allowed", import_error)
            names = [target] if event == "import" else []
            if type_(target) is str_ and target[:8] == "<frozen ":
                names.append(target[8:-1])
            elif event != "import" and (type_(target) is str_ or type_(target) is bytes_):
                full = resolve(target)
                for root in read_only:  # a file of the library: the module it holds
                    if full is not None and full.startswith(root + "/"):
                        parts = full.removeprefix(root + "/").split("/")
                        if parts[-2:-1] == ["__pycache__"]:
                            del parts[-2]
                        last = parts.pop().partition(".")[0]
                        names.append(".".join(parts if last == "__init__" else [*parts, last]))
            for module in names:
                name = module
                while name:
                    if name in denied_modules:
                        fix = "use json, re, math, statistics, collections, itertools, datetime"
                        why = "no network, processes, threads, debuggers or native code"
                        refuse("import", f"module {module!r} is not available ({why}); {fix}", import_error)
                    name = name.rpartition(".")[0]
            if event == "exec":
                return None
        if event == "open":
            path, mode, flags = args
            writing = (type_(mode) is str_ and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
                type_(flags) is int_ and flags & write_flags != 0
            )
            check_path(event, path, writing, True)
            return None
        if event == "import":
            module = args[0]
            path = args[1]
            if path is not None and (type_(path) is not str_ or (module, path) not in extensions):
                where = f" from {path!r}" if type_(path) is str_ else ""
                fix = "only the standard library's own data-processing extensions load"
                refuse(event, f"native module {module!r}{where} is not available ({fix})", import_error)
            return None
        if event in denied_events or event.startswith(denied_prefixes):
            refuse(event, f"{event} is not allowed", denied)
        if event in read_events or event in write_events:
            for name, index in dir_fd_arg:
                dir_fd = args[index : index + 1]
                if event == name and dir_fd and dir_fd[0] is not None and dir_fd[0] != -1:
                    refuse(event, f"{event} with dir_fd is not allowed", denied)
            if event in read_events:
                check_path(event, "." if args[0] is None else args[0], False, False)
                return None
            check_path(event, args[0], True, False)
            return None
        if event == "os.rename":
            if args[2] not in (None, -1) or args[3] not in (None, -1):
                refuse(event, "os.rename with dir_fd is not allowed", denied)
            check_path(event, args[0], True, False)
            check_path(event, args[1], True, False)
            return None
        if event == "object.__setattr__" or event == "object.__delattr__":
            target = args[0]
            if args[1] == "__code__":
                refuse(event, "changing '__code__' of a function is not allowed", denied)
            if type_(target) is function:
                code = target.__code__
                for own in own_codes:  # identity: an equal code object compiled by the snippet is not ours
                    if code is own:
                        refuse(event, f"changing {args[1]!r} of a function is not allowed", denied)
            return None
        if event == "sys._getframe":
            if args and args[0] is not None:
                code = args[0].f_code
                for own in own_codes:
                    if code is own:
                        return None  # the hook's own look at its caller (`trusted_bytecode`)
            # Silent: the standard library asks too (namedtuple, typing, enum) and takes ValueError as "no frame".
            refuse(event, "sys._getframe is not allowed", value_error, True)
        if event == "marshal.loads" and not trusted_bytecode(args[0]):
            refuse(event, "marshal.loads is only allowed for the standard library's bytecode", denied)
        return None

    def guard(
        event: Any,
        args: Any,
        audit: Any = None,
        base: Any = BaseException,
        pause: Any = gc.disable,
        resume: Any = gc.enable,
        running: Any = gc.isenabled,
    ) -> None:
        """The hook: `audit`'s refusal raised again from a frame that no longer holds `audit` (nor the token).

        The garbage collector is paused meanwhile: a finalizer it ran here would see these frames as `f_back`.
        """
        was = running()
        pause()
        try:
            audit(event, args)
            error = None
        except base as e:
            error = e
        if error is None:
            if was:
                resume()
            return None
        del audit, pause, running
        if was:
            resume()
        del resume
        error.__context__ = error.__cause__ = None
        raise error.with_traceback(None)

    functions = (guard, audit, check_path, resolve, within, refuse, trusted_bytecode)
    defaults = audit.__defaults__
    assert defaults is not None
    own = tuple(f.__code__ for f in functions)
    inner = types.FunctionType(audit.__code__, {}, "audit", (*defaults[:-1], own))
    assert guard.__defaults__ is not None
    return types.FunctionType(guard.__code__, {}, "guard", (inner, *guard.__defaults__[1:]))
