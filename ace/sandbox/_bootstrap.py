"""The sandbox child's program: `python -I -S -X utf8 _bootstrap.py MEMORY FILE_SIZE CPU ALARM FILES UID REPORT_FD`.

ACE never imports it; `sandbox.py` runs it as a script in a fresh interpreter. Arguments: memory bytes,
file-size bytes, CPU seconds, wall-clock alarm seconds, how many files and folders the code may make, the uid
to drop to when started as root, and the descriptor of the report pipe (blocking: the parent reads it meanwhile,
so no report is lost). In its working directory it finds `trace.json`, `code.py` and `report.token` (the
secret that starts each report line, removed before the code runs). It applies the
OS-level isolation (`_isolation`), sets the resource limits, writes what it applied as one JSON line to
the report pipe, replaces the functions that raise no audit event (`_unaudited`) and installs the audit hook
(`_policy`; refusals are reported on the same pipe), then runs
the code in a fresh `__main__` module with `trace` and `messages` defined; a final bare expression is printed
like in a REPL. Exit codes: 0 ok, 1 the code raised, 3 out of memory.
"""

import ast
import builtins
import contextlib
import importlib.machinery
import json
import linecache
import os
import resource
import signal
import sys
import traceback
import types
from types import TracebackType

FILENAME = "<execute_code>"
SANDBOX_FILENAME = "<sandbox>"
TOKEN_FILE = "report.token"
EXIT_ERROR = 1
EXIT_MEMORY = 3
OPEN_FILES = 256


def set_limits(memory: int, file_size: int, cpu: int, alarm: int) -> None:
    """Hard limits the code cannot raise again (the audit hook refuses `resource.setrlimit`)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nofile = min(OPEN_FILES, *(n for n in resource.getrlimit(resource.RLIMIT_NOFILE) if n >= 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))  # files open at once, removed ones included
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large file then fails with OSError instead of killing
    signal.alarm(alarm)  # a backstop should the parent die before it can kill us


def load_sibling(name: str) -> types.ModuleType:
    """Run a module next to this file under the name `<sandbox>`: tracebacks through it never read its source."""
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), name + ".py")
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), SANDBOX_FILENAME, "exec")
    module = types.ModuleType(name)
    exec(code, module.__dict__)
    return module


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


def prepare(argv: list[str]) -> tuple[str, dict[str, object]]:
    """Isolate, limit and hook this process; return the code and the namespace of the module it runs in."""
    memory, file_size, cpu, alarm, max_files, uid, report_fd = (int(a) for a in argv[1:8])
    with open("trace.json", encoding="utf-8") as f:
        trace = json.load(f)
    with open("code.py", encoding="utf-8") as f:
        source = f.read()
    with open(TOKEN_FILE, encoding="ascii") as f:
        token = f.read()
    os.remove(TOKEN_FILE)  # gone before the code runs; from now on only the hook holds it
    home = os.path.realpath(os.getcwd())
    roots = [os.path.realpath(p) for p in sys.path if p]
    policy = load_sibling("_policy")
    isolation, library = load_sibling("_isolation").isolate(uid, roots)
    read_only = tuple(dict.fromkeys(roots + library))
    sys.path[:] = library
    sys.path_importer_cache.clear()
    native = load_sibling("_native").native_files(library, importlib.machinery.EXTENSION_SUFFIXES)
    sys.dont_write_bytecode = True  # the standard library's __pycache__ is read-only to the code
    set_limits(memory, file_size, cpu, alarm)
    os.set_blocking(report_fd, True)
    os.write(report_fd, (token + "\t" + json.dumps(isolation.as_dict()) + "\n").encode())
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace.update(
        __builtins__=builtins,
        trace=trace,
        messages=trace.get("messages", []) if isinstance(trace, dict) else [],
    )
    sys.modules["__main__"] = module  # the code's own module: this script's globals are nowhere in reach
    hook = policy.make_audit_hook(home, read_only, report_fd, native, token, max_files)
    load_sibling("_unaudited").remove_unaudited(policy.DENIED_MODULES)
    sys.addaudithook(hook)
    return source, namespace


def main() -> int:
    source, namespace = prepare(sys.argv)
    try:
        run(source, namespace)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_ERROR)
    except MemoryError:
        namespace.clear()
        limit = resource.getrlimit(resource.RLIMIT_AS)[0] >> 20
        sys.stderr.write(f"MemoryError: the code needed more than the sandbox memory limit ({limit} MB)\n")
        return EXIT_MEMORY
    except BaseException as e:
        report = traceback.TracebackException(type(e), e, user_frames(e.__traceback__), lookup_lines=False)
        ours = (__file__, SANDBOX_FILENAME)
        report.stack = traceback.StackSummary.from_list([f for f in report.stack if f.filename not in ours])
        sys.stderr.write("".join(report.format()))
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    code = main()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
