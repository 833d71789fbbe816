"""The program the sandbox child runs: `python -I -S -X utf8 _bootstrap.py MEMORY FILE_SIZE CPU ALARM`.

ACE never imports it; `sandbox.py` runs it as a script in a fresh interpreter. Arguments: memory bytes,
file-size bytes, CPU seconds, wall-clock alarm seconds. In its working directory it finds `trace.json` and
`code.py`. It sets the
resource limits, installs an audit hook (no files outside the working directory, no network, no processes,
no native code, no raising its own limits), then runs the code with `trace` and `messages` defined; a final
bare expression is printed like in a REPL. Exit codes: 0 ok, 1 the code raised, 3 out of memory.
"""

import ast
import contextlib
import json
import linecache
import os
import resource
import signal
import sys
import traceback
from types import TracebackType

FILENAME = "<execute_code>"
EXIT_ERROR = 1
EXIT_MEMORY = 3
DENIED_MODULES = frozenset(
    {
        "_ctypes",
        "_multiprocessing",
        "_posixsubprocess",
        "_socket",
        "_ssl",
        "asyncio",
        "ctypes",
        "ftplib",
        "http",
        "imaplib",
        "multiprocessing",
        "poplib",
        "pty",
        "select",
        "selectors",
        "smtplib",
        "socket",
        "ssl",
        "subprocess",
        "telnetlib",
        "urllib.request",
        "xmlrpc",
    }
)
DENIED_EVENTS = frozenset(
    {"os.system", "os.kill", "os.killpg", "os.forkpty", "pty.spawn", "resource.setrlimit", "resource.prlimit"}
)
DENIED_PREFIXES = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "_ssl.")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
HOME = os.path.realpath(os.getcwd())
READ_ONLY = tuple(os.path.realpath(p) for p in sys.path if p)  # the standard library, for lazy imports


def set_limits(memory: int, file_size: int, cpu: int, alarm: int) -> None:
    """Hard limits the code cannot raise again (the audit hook refuses `resource.setrlimit`)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new process or thread (root ignores it)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large file then fails with OSError instead of killing
    signal.alarm(alarm)  # a backstop should the parent die before it can kill us


def inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return
        name = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else str(path)
        full = os.path.realpath(name)
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and bool(flags & WRITE_FLAGS)
        )
        if inside(full, (HOME,)) or (not writing and inside(full, READ_ONLY)):
            return
        raise PermissionError(f"sandbox: cannot open {name!r}: only files in the working directory can be opened")
    if event == "import":
        module = str(args[0])
        if module in DENIED_MODULES or any(module.startswith(m + ".") for m in DENIED_MODULES):
            raise ImportError(
                f"sandbox: module {module!r} is not available (no network, processes or native code); "
                "use json, re, math, statistics, collections, itertools, datetime"
            )
    elif event in DENIED_EVENTS or event.startswith(DENIED_PREFIXES):
        raise PermissionError(f"sandbox: {event} is not allowed")


def user_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame of the model's code on (the bootstrap's frames are noise to it)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next
    return tb


def run(source: str, namespace: dict[str, object]) -> None:
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
    tree = ast.parse(source, FILENAME)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, FILENAME, "exec"), namespace)
    if isinstance(last, ast.Expr):
        value = eval(compile(ast.Expression(last.value), FILENAME, "eval"), namespace)
        if value is not None:
            print(repr(value))


def main() -> int:
    memory, file_size, cpu, alarm = (int(a) for a in sys.argv[1:5])
    with open("trace.json", encoding="utf-8") as f:
        trace = json.load(f)
    with open("code.py", encoding="utf-8") as f:
        source = f.read()
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "trace": trace,
        "messages": trace.get("messages", []) if isinstance(trace, dict) else [],
    }
    set_limits(memory, file_size, cpu, alarm)
    sys.addaudithook(audit)
    try:
        run(source, namespace)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_ERROR)
    except MemoryError:
        namespace.clear()
        sys.stderr.write(f"MemoryError: the code needed more than the sandbox memory limit ({memory >> 20} MB)\n")
        return EXIT_MEMORY
    except BaseException as e:
        report = traceback.TracebackException(type(e), e, user_frames(e.__traceback__))
        report.stack = traceback.StackSummary.from_list([f for f in report.stack if f.filename != __file__])
        sys.stderr.write("".join(report.format()))
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
