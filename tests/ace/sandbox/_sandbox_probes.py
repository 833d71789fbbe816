"""Red-team probes for `execute_code`'s sandbox: each tries one escape that worked, or could work, on an audit hook.

`HOST` is a host skillbook outside the sandbox, `HOST_DIR` its folder, `SECRET` the name of a variable set in
the parent's environment. A probe passes when the attempt is refused (`expect` in the model-visible text), the
refusal is reported (`event` in `SandboxResult.refused`, unless `event` is None) and nothing changed on the host.
Also run by `_sandbox_probe_driver.py` under an unprivileged parent, so: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

HOST_TEXT = '{"schema_version": "2", "skills": ["the host skillbook"]}'
SECRET_VALUE = "sk-proj-redteam-4242-do-not-leak"


@dataclass(frozen=True)
class Probe:
    name: str
    code: str
    expect: str
    """Text the model sees when the attempt is refused."""
    event: str | None
    """The audit event reported in `SandboxResult.refused`; None for a refusal that is not reported."""

    def source(self, host: str, host_dir: str, secret: str, rr_dir: str) -> str:
        """The code with the placeholders filled in."""
        code = self.code.replace("RR_DIR", repr(rr_dir)).replace("HOST_DIR", repr(host_dir))
        return code.replace("HOST", repr(host)).replace("SECRET", repr(secret))


MAIN = "import sys\nmain = sys.modules['__main__']\n"
DENIED = "PermissionError: sandbox:"
NO_MODULE = "ImportError: sandbox: module"

PROBES = (
    # --- the policy itself: rebinding, clearing, monkeypatching, finding the hook -----------------------------
    Probe(
        "main-inside-rebound", MAIN + "main.inside = lambda p, r: True\nopen(HOST, 'w').write('pwned')", DENIED, "open"
    ),
    Probe(
        "main-denied-sets-cleared",
        MAIN
        + "for n in list(vars(main)):\n    if n.startswith('DENIED'): setattr(main, n, frozenset())\nimport subprocess",
        NO_MODULE,
        "import",
    ),
    Probe(
        "policy-globals-rebound-everywhere",
        "import sys\nfor m in list(sys.modules.values()):\n    for n in ('DENIED_EVENTS', 'DENIED_MODULES', 'inside', "
        "'HOME', 'READ_ONLY'):\n        if hasattr(m, n): setattr(m, n, frozenset())\nimport os\nos.system('id')",
        "os.system is not allowed",
        "os.system",
    ),
    Probe(
        "os-and-builtins-monkeypatched",
        "import os, builtins, posixpath\nposixpath.realpath = os.path.realpath = lambda p, **k: os.getcwd() + '/x'\n"
        "os.getcwd = lambda: '/'\nbuiltins.isinstance = lambda *a: True\nbuiltins.str = bytes\n"
        "builtins.type = lambda x: 1\n"
        "open(HOST, 'a').write('pwned')",
        DENIED,
        "open",
    ),
    Probe(
        "hook-functions-from-a-traceback",
        "import os\ntry:\n    open(HOST, 'w')\nexcept PermissionError as e:\n    tb = e.__traceback__\n"
        "funcs = []\nwhile tb is not None:\n    funcs += [v for v in tb.tb_frame.f_locals.values() if callable(v) and "
        "hasattr(v, '__defaults__') and v.__defaults__]\n    tb = tb.tb_next\nassert funcs, 'found no hook function'\n"
        "for f in funcs:\n    f.__defaults__ = tuple(() for _ in f.__defaults__)\nopen(HOST, 'w').write('pwned')",
        "AssertionError: found no hook function",  # since audit 13 #4 (the report token): no frame leads to them
        "open",
    ),
    Probe(  # audit 13 #4: lines the code writes to the report descriptor are not shown as refusals
        "report-forged",
        "import os, sys\nos.write(int(sys.argv[-1]), b'os.system\\tforged line\\n')",
        "line(s) to the sandbox's report descriptor; they are not refusals",
        "report.forged",
    ),
    Probe(  # a finalizer the garbage collector runs inside the hook sees the hook's frame as its f_back
        "finalizer-frames-in-the-hook",
        "import os\nleaked = []\nclass C:\n    def __del__(self):\n        try:\n            raise ValueError\n"
        "        except ValueError as e:\n            f = e.__traceback__.tb_frame.f_back\n"
        "        while f is not None:\n            if f.f_code.co_filename == '<sandbox>':\n"
        "                leaked.extend(n for n, v in f.f_locals.items() if getattr(v, '__defaults__', None))\n"
        "            f = f.f_back\n"
        "for _ in range(20000):\n    a, b = C(), C()\n    a.b, b.a = b, a\n    del a, b\n"
        "    try:\n        os.remove(HOST)\n    except OSError:\n        pass\n    if leaked:\n        break\n"
        "assert not leaked, leaked\nprint('no hook function reached from a finalizer')",
        "no hook function reached from a finalizer",
        "os.remove",
    ),
    Probe(  # a signal handler gets the frame it interrupts: perhaps one of the hook's
        "signal-handler-frames",
        "import signal\nsignal.signal(signal.SIGALRM, lambda n, frame: print(frame.f_locals))",
        "signal.signal is not allowed",
        "signal.signal",
    ),
    Probe(
        "gc-import",
        "import gc\nprint([o for o in gc.get_objects() if getattr(o, '__name__', '') == 'audit'])",
        NO_MODULE,
        "import",
    ),
    Probe(  # since audit 13 E2 the module is refused; before, only its heap walk was
        "gc-via-importlib", "import importlib\nimportlib.import_module('gc').get_objects()", NO_MODULE, "import"
    ),
    Probe(
        "sys-getframe",
        "import sys\nsys._getframe(1).f_globals",
        "ValueError: sandbox: sys._getframe is not allowed",
        None,
    ),
    Probe(
        "sys-addaudithook",
        "import sys\nsys.addaudithook(lambda e, a: None)",
        "sys.addaudithook is not allowed",
        "sys.addaudithook",
    ),
    Probe("sys-settrace", "import sys\nsys.settrace(lambda *a: None)", "sys.settrace is not allowed", "sys.settrace"),
    Probe(
        "sys-setprofile",
        "import sys\nsys.setprofile(lambda *a: None)",
        "sys.setprofile is not allowed",
        "sys.setprofile",
    ),
    Probe(
        "sys-current-frames",
        "import sys\nsys._current_frames()",
        "sys._current_frames is not allowed",
        "sys._current_frames",
    ),
    Probe(
        "function-code-swapped",
        "def f():\n    return 1\nf.__code__ = (lambda: open(HOST, 'w')).__code__\nf()",
        "changing '__code__' of a function is not allowed",
        "object.__setattr__",
    ),
    Probe(
        "code-object-forged",
        "(lambda: 0).__code__.replace(co_code=b'\\x00' * 8)",
        "code.__new__ is not allowed",
        "code.__new__",
    ),
    Probe(
        "marshal-crafted-bytecode",
        "import marshal\nmarshal.loads(marshal.dumps(compile('1', 'x', 'eval')))",
        "marshal.loads is only allowed for the standard library",
        "marshal.loads",
    ),
    Probe(
        "importlib-compile-bytecode-direct",
        "import marshal, importlib._bootstrap_external as e\n"
        "e._compile_bytecode(marshal.dumps(compile('1', 'x', 'eval')))",
        "marshal.loads is only allowed for the standard library",
        "marshal.loads",
    ),
    Probe(
        "function-new",
        "import types\ntypes.FunctionType((lambda: 0).__code__, {})",
        "function.__new__ is not allowed",
        "function.__new__",
    ),
    Probe(
        "bootstrap-imported-again",
        "import sys\nsys.path.insert(0, RR_DIR)\nimport _policy",
        "ModuleNotFoundError",
        "os.listdir",
    ),
    # --- native code ----------------------------------------------------------------------------------------
    Probe("ctypes-import", "import ctypes\nctypes.CDLL(None).system(b'id')", NO_MODULE, "import"),
    Probe(
        "native-module-loaded-by-path",
        "import glob, importlib.util, sys\nso = [p for d in sys.path for p in glob.glob(d + '/_ctypes*.so')]\n"
        "spec = importlib.util.spec_from_file_location('_ctypes', so[0] if so else '/nonexistent/_ctypes.so')\n"
        "importlib.util.module_from_spec(spec).dlopen(None, 0)",
        "ImportError: sandbox:",
        "import",
    ),
    Probe(
        "native-copy-of-allowed-extension",  # audit 13 E1: a patched copy of _json ran shellcode; a copy suffices
        "import glob, importlib.util, shutil, sys\n"
        "shutil.copyfile([p for d in sys.path for p in glob.glob(d + '/_json.*.so')][0], 'evil.so')\n"
        "spec = importlib.util.spec_from_file_location('_json', 'evil.so')\n"
        "print(importlib.util.module_from_spec(spec))",
        "ImportError: sandbox: native module '_json' from",
        "import",
    ),
    Probe("posixsubprocess", "import _posixsubprocess", NO_MODULE, "import"),
    Probe("subinterpreters", "import _xxsubinterpreters", NO_MODULE, "import"),
    Probe("sqlite3-opens-files-natively", "import sqlite3\nsqlite3.connect(HOST)", NO_MODULE, "import"),
    # --- processes ------------------------------------------------------------------------------------------
    Probe("subprocess", "import subprocess\nsubprocess.run(['id'])", NO_MODULE, "import"),
    Probe("os-system", "import os\nos.system('touch /tmp/pwned')", "os.system is not allowed", "os.system"),
    Probe("os-fork", "import os\nos.fork()", "os.fork is not allowed", "os.fork"),
    Probe("os-execv", "import os\nos.execv('/bin/sh', ['sh', '-c', 'id'])", "os.exec is not allowed", "os.exec"),
    Probe(
        "os-posix-spawn",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})",
        "os.posix_spawn is not allowed",
        "os.posix_spawn",
    ),
    Probe("os-spawnv", "import os\nos.spawnv(os.P_WAIT, '/bin/true', ['true'])", "os.fork is not allowed", "os.fork"),
    Probe("pty", "import pty\npty.spawn('/bin/sh')", NO_MODULE, "import"),
    Probe("threads", "import threading\nthreading.Thread(target=print).start()", NO_MODULE, "import"),
    Probe("kill-parent", "import os\nos.kill(os.getppid(), 9)", "os.kill is not allowed", "os.kill"),
    Probe(  # audit 13 E3: no audit event; with SIGKILL it killed an unprivileged parent (0 only asks)
        "pidfd-signal-parent",
        "import os, signal\nsignal.pidfd_send_signal(os.pidfd_open(os.getppid()), 0)",
        "os.pidfd_open is not allowed",
        "os.pidfd_open",
    ),
    Probe(
        "pidfd-send-signal",
        "import signal\nsignal.pidfd_send_signal(0, 0)",
        "signal.pidfd_send_signal is not allowed",
        "signal.pidfd_send_signal",
    ),
    Probe(
        "renice-parent",
        "import os\nos.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
        "os.setpriority is not allowed",
        "os.setpriority",
    ),
    # --- network --------------------------------------------------------------------------------------------
    Probe("socket", "import socket\nsocket.create_connection(('1.1.1.1', 80))", NO_MODULE, "import"),
    Probe("socket-extension", "import _socket", NO_MODULE, "import"),
    Probe("urllib-request", "import urllib.request\nurllib.request.urlopen('http://1.1.1.1')", NO_MODULE, "import"),
    # --- files outside the working directory ----------------------------------------------------------------
    Probe("remove", "import os\nos.remove(HOST)", DENIED, "os.remove"),
    Probe("unlink", "import os\nos.unlink(HOST)", DENIED, "os.remove"),
    Probe("rename-out", "import os\nos.rename(HOST, 'stolen.json')", DENIED, "os.rename"),
    Probe("replace-over-host", "import os\nos.replace('code.py', HOST)", DENIED, "os.rename"),
    Probe("truncate", "import os\nos.truncate(HOST, 0)", DENIED, "os.truncate"),
    Probe(
        "hard-link",
        "import os\nos.link(HOST, 'link')\nopen('link', 'w').write('pwned')",
        "os.link is not allowed",
        "os.link",
    ),
    Probe(
        "symlink",
        "import os\nos.symlink(HOST, 'link')\nopen('link', 'w').write('pwned')",
        "os.symlink is not allowed",
        "os.symlink",
    ),
    Probe("listdir", "import os\nprint(os.listdir(HOST_DIR))", DENIED, "os.listdir"),
    Probe("scandir", "import os\nprint(list(os.scandir(HOST_DIR)))", DENIED, "os.scandir"),
    Probe(  # the hole before the hook checked os.chdir: a relative path was then checked against the new directory
        "chdir-then-relative", "import os\nos.chdir(HOST_DIR)\nos.remove('skillbook.json')", DENIED, "os.chdir"
    ),
    Probe(
        "directory-descriptor-as-dir-fd",
        "import os\nfd = os.open(HOST_DIR, os.O_RDONLY | os.O_DIRECTORY)\n"
        "os.open('skillbook.json', os.O_WRONLY | os.O_TRUNC, dir_fd=fd)",
        DENIED,
        "open",
    ),
    Probe(
        "own-directory-descriptor",
        "import os\nfd = os.open('.', os.O_RDONLY)\nos.open('../../' + HOST, os.O_WRONLY, dir_fd=fd)",
        "only regular files can be opened",
        "open",
    ),
    Probe(
        "remove-with-dir-fd",
        "import os\nos.remove('skillbook.json', dir_fd=0)",
        "os.remove with dir_fd is not allowed",
        "os.remove",
    ),
    Probe("dotdot-traversal", "open('../' * 20 + HOST.lstrip('/'), 'w')", "a path with '..' is not allowed", "open"),
    Probe(
        "path-object-toctou",
        "class P:\n    n = 0\n    def __fspath__(self):\n        P.n += 1\n        return HOST if P.n == 1 else 'x'\n"
        "import os\nos.open(P(), os.O_WRONLY)",
        DENIED,  # the check sees the path the open uses: __fspath__ is asked once
        "open",
    ),
    Probe("chmod", "import os\nos.chmod(HOST, 0o777)", DENIED, "os.chmod"),
    Probe("chown", "import os\nos.chown(HOST, 0, 0)", "os.chown is not allowed", "os.chown"),
    Probe("utime", "import os\nos.utime(HOST, (0, 0))", DENIED, "os.utime"),
    Probe("mkdir-outside", "import os\nos.mkdir(HOST_DIR + '/new')", DENIED, "os.mkdir"),
    Probe("rmdir-outside", "import os\nos.rmdir(HOST_DIR)", DENIED, "os.rmdir"),
    Probe("shutil-copy-over-host", "import shutil\nshutil.copyfile('code.py', HOST)", DENIED, "open"),
    Probe("shutil-rmtree", "import shutil\nshutil.rmtree(HOST_DIR)", DENIED, "open"),
    Probe("io-open-code", "import io\nio.open_code(HOST).read()", DENIED, "open"),
    Probe("fileio-direct", "import _io\n_io.FileIO(HOST, 'w')", DENIED, "open"),
    Probe(  # no FIFO or device at all now (audit 13 E2); a directory still does not open: own-directory-descriptor
        "fifo-or-device", "import os\nos.mkfifo('pipe')\nopen('pipe', 'w')", "os.mkfifo is not allowed", "os.mkfifo"
    ),
    Probe(  # audit 13 E2: os.mknod raises no audit event
        "mknod-outside",
        "import os, stat\nos.mknod(HOST_DIR + '/made-by-mknod', stat.S_IFREG | 0o666)",
        "os.mknod is not allowed",
        "os.mknod",
    ),
    Probe("mkfifo-outside", "import os\nos.mkfifo(HOST_DIR + '/fifo')", "os.mkfifo is not allowed", "os.mkfifo"),
    Probe(
        "posix-created-again-for-mknod",
        "import _imp, importlib.machinery, stat\n"
        "posix = _imp.create_builtin(importlib.machinery.ModuleSpec('posix', None))\n"
        "posix.mknod(HOST_DIR + '/made-by-mknod', stat.S_IFREG | 0o666)",
        "_imp.create_builtin is not allowed",
        "_imp.create_builtin",
    ),
    Probe(
        "builtin-module-without-import-event",
        "import importlib, sys\nsys.modules.pop('posix', None)\nimportlib.import_module('posix').mkfifo('fifo')",
        "_imp.create_builtin is not allowed",
        "_imp.create_builtin",
    ),
    Probe("stdlib-write", "import os\nopen(os.path.dirname(os.__file__) + '/pwned.py', 'w')", DENIED, "open"),
    # --- secrets ----------------------------------------------------------------------------------------------
    Probe("parent-environ", "import os\nopen(f'/proc/{os.getppid()}/environ', 'rb').read()", DENIED, "open"),
    Probe(
        "main-bypass-then-parent-environ",
        MAIN + "main.inside = lambda p, r: True\nimport os\nprint(os.environ.get(SECRET))\n"
        "print(open(f'/proc/{os.getppid()}/environ', 'rb').read())",
        DENIED,
        "open",
    ),
    Probe("putenv-then-listdir-proc", "import os\nprint(os.listdir('/proc/1'))", DENIED, "os.listdir"),
    Probe(
        "raise-own-limits",
        "import resource\nresource.setrlimit(resource.RLIMIT_NPROC, (-1, -1))",
        "resource.setrlimit is not allowed",
        "resource.setrlimit",
    ),
    Probe(
        "swallowed-refusal-is-still-reported",
        "import os\ntry:\n    os.remove(HOST)\nexcept OSError:\n    pass\nprint('carried on')",
        "Refused by the sandbox",
        "os.remove",
    ),
)
