"""Red-team probes added for issue #24: filling the disk, denied modules without an import event, a flooded report.

Like `_sandbox_probes.py` (standard library only, the same placeholders `HOST`, `HOST_DIR`): a probe passes when
`expect` is in the model-visible text, `event` (unless None) is in `SandboxResult.refused`, `refusals` (unless
None) is `SandboxResult.refused_count`, and the host (its skillbook, its free disk) is untouched. A probe that
fills the host's disk counts as an escape, whatever the text says.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FILES = 1_000
MAX_DISK_MB = 64


@dataclass(frozen=True)
class Probe:
    name: str
    code: str
    expect: str
    event: str | None
    refusals: int | None = None
    """The exact `refused_count` (report probes: nothing may be dropped)."""

    def source(self, host: str, host_dir: str) -> str:
        return self.code.replace("HOST_DIR", repr(host_dir)).replace("HOST", repr(host))


DENIED = "PermissionError: sandbox:"
NO_MODULE = "ImportError: sandbox: module"
TOO_MANY = "folders made by the code; remove some, or write fewer, larger files"
FULL = "No space left on device"
FILL = (  # write 1 MiB blocks to new files until something refuses; print how far it got
    "import os\ntotal = 0\ntry:\n    for i in range(100_000):\n        with open(f'fill{i}', 'wb') as f:\n"
    "            for _ in range(16):\n                f.write(b'x' * (1 << 20))\n                f.flush()\n"
    "                total += 1 << 20\nexcept OSError as e:\n"
    "    print(f'stopped after {total >> 20} MiB: {e.strerror}')\n"
)

DISK_PROBES = (
    # --- disk blocks reserved without writing them ------------------------------------------------------------
    Probe(
        "fallocate-one-huge-file",
        "import os\nfd = os.open('big', os.O_CREAT | os.O_WRONLY)\nos.posix_fallocate(fd, 0, 8 << 30)",
        "os.posix_fallocate is not allowed",
        "os.posix_fallocate",
    ),
    Probe(  # the audit's finding: 7.7 GB reserved in 0.03 s, each file under RLIMIT_FSIZE
        "fallocate-many-files",
        "import os\nfor i in range(2000):\n    fd = os.open(f'f{i}', os.O_CREAT | os.O_WRONLY)\n"
        "    try:\n        os.posix_fallocate(fd, 0, 15 << 20)\n    except OSError:\n        pass\n"
        "    os.close(fd)\n",
        "os.posix_fallocate is not allowed",
        "os.posix_fallocate",
    ),
    Probe(
        "fallocate-through-posix",
        "import posix\nfd = posix.open('big', posix.O_CREAT | posix.O_WRONLY)\nposix.posix_fallocate(fd, 0, 1 << 30)",
        "os.posix_fallocate is not allowed",
        "os.posix_fallocate",
    ),
    Probe(
        "fallocate-from-a-fresh-posix",
        "import _imp, importlib.machinery\nposix = _imp.create_builtin(importlib.machinery.ModuleSpec('posix', None))\n"
        "posix.posix_fallocate(posix.open('big', 0o101), 0, 1 << 30)",
        "_imp.create_builtin is not allowed",
        "_imp.create_builtin",
    ),
    # --- sparse files: holes cost nothing, and no file grows past RLIMIT_FSIZE --------------------------------
    Probe(
        "sparse-truncate-one-terabyte",
        "import os\nopen('s', 'w').close()\nos.truncate('s', 1 << 40)",
        "File too large",
        None,
    ),
    Probe(
        "sparse-ftruncate-many-files",
        "import os\nn = 0\nfor i in range(900):\n    with open(f's{i}', 'wb') as f:\n"
        "        os.ftruncate(f.fileno(), 15 << 20)\n        n += 1\nprint('sparse files:', n)",
        "sparse files: 900",
        None,
    ),
    Probe(
        "sparse-seek-and-write-many-files",
        "import os\nn = 0\nfor i in range(900):\n    with open(f's{i}', 'wb') as f:\n"
        "        f.seek((15 << 20) - 1)\n        f.write(b'x')\n        n += 1\nprint('sparse files:', n)",
        "sparse files: 900",
        None,
    ),
    Probe(
        "sparse-then-filled",
        "import os\ntotal = 0\ntry:\n    for i in range(900):\n        with open(f's{i}', 'wb') as f:\n"
        "            os.ftruncate(f.fileno(), 15 << 20)\n            for _ in range(15):\n"
        "                f.write(b'y' * (1 << 20))\n                f.flush()\n                total += 1 << 20\n"
        "except OSError as e:\n    print(f'stopped after {total >> 20} MiB: {e.strerror}')",
        FULL,
        None,
    ),
    Probe("write-past-the-file-size-limit", "open('one', 'wb').write(b'x' * (64 << 20))", "File too large", None),
    # --- dense writes: the total is bounded, not just each file -----------------------------------------------
    Probe("fill-with-writes", FILL, FULL, None),
    Probe(
        "fill-with-copy-file-range",
        "import os\nsrc = os.open('blob', os.O_CREAT | os.O_RDWR)\nos.write(src, b'z' * (8 << 20))\ntotal = 0\n"
        "try:\n    for i in range(10_000):\n        dst = os.open(f'c{i}', os.O_CREAT | os.O_WRONLY)\n"
        "        total += os.copy_file_range(src, dst, 8 << 20, 0)\n"
        "        total += os.sendfile(dst, src, 0, 8 << 20)\n"
        "        os.close(dst)\nexcept OSError as e:\n    print(f'stopped after {total >> 20} MiB: {e.strerror}')",
        FULL,
        None,
    ),
    Probe(
        "fill-in-subfolders",
        "import os\ntotal = 0\ntry:\n    for d in range(500):\n        os.mkdir(f'd{d}')\n"
        "        with open(f'd{d}/x', 'wb') as f:\n            f.write(b'x' * (4 << 20))\n            f.flush()\n"
        "            total += 4 << 20\nexcept OSError as e:\n"
        "    print(f'stopped after {total >> 20} MiB: {e.strerror}')",
        FULL,
        None,
    ),
    Probe(  # removed files still take their space while open: the tree alone does not show them
        "fill-removed-but-open-files",
        "import os\nkept, total = [], 0\ntry:\n    for i in range(10_000):\n        f = open(f'u{i}', 'wb')\n"
        "        os.remove(f'u{i}')\n        kept.append(f)\n        for _ in range(16):\n"
        "            f.write(b'u' * (1 << 20))\n            f.flush()\n            total += 1 << 20\n"
        "except OSError as e:\n    print(f'stopped after {total >> 20} MiB: {e.strerror}')",
        FULL,
        None,
    ),
    Probe(  # anonymous memory files: on no quota at all, and no audit event
        "memfd-fill",
        "import os\nfor i in range(10_000):\n    os.write(os.memfd_create(f'm{i}'), b'm' * (16 << 20))",
        "os.memfd_create is not allowed",
        "os.memfd_create",
    ),
    Probe(
        "unnamed-tmpfile",
        "import os\nos.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)",
        "only regular files can be opened",
        "open",
    ),
    Probe(
        "too-many-open-files",
        "import os\nfds = [os.open('trace.json', os.O_RDONLY) for _ in range(100_000)]",
        "Too many open files",
        None,
    ),
    # --- many small files and folders ---------------------------------------------------------------------------
    Probe(  # the audit's finding: 80,000 empty files in 5 s, 7 s for the host to clean up
        "hundred-thousand-small-files",
        "for i in range(100_000):\n    open(f'f{i}', 'w').write('x')",
        TOO_MANY,
        "open",
    ),
    Probe(
        "hundred-thousand-empty-files-os-open",
        "import os\nfor i in range(100_000):\n    os.close(os.open(f'e{i}', os.O_CREAT | os.O_WRONLY | os.O_EXCL))",
        TOO_MANY,
        "open",
    ),
    Probe(
        "many-files-pathlib-touch",
        "import pathlib\nfor i in range(100_000):\n    pathlib.Path(f't{i}').touch()",
        TOO_MANY,
        "open",
    ),
    Probe(
        "many-files-tempfile",
        "import os, tempfile\nfor i in range(100_000):\n    os.close(tempfile.mkstemp(dir='.')[0])",
        TOO_MANY,
        "open",
    ),
    Probe("mkdir-wide", "import os\nfor i in range(100_000):\n    os.mkdir(f'd{i}')", TOO_MANY, "os.mkdir"),
    Probe(
        "mkdir-deep",
        "import os\nfor i in range(100_000):\n    os.mkdir('d')\n    os.chdir('d')",
        TOO_MANY,
        "os.mkdir",
    ),
    Probe(
        "makedirs-tree",
        "import os\nfor i in range(1000):\n    os.makedirs('/'.join(f'{i}-{j}' for j in range(50)))",
        TOO_MANY,
        "os.mkdir",
    ),
    Probe(
        "hard-links-many",
        "import os\nfor i in range(100_000):\n    os.link('trace.json', f'l{i}')",
        "os.link is not allowed",
        "os.link",
    ),
    Probe(
        "hard-link-to-host",
        "import os\nos.link(HOST, 'host-link')",
        "os.link is not allowed",
        "os.link",
    ),
    Probe(
        "xattr-fill",
        "import os\nos.setxattr('trace.json', 'user.fill', b'x' * 60_000)",
        "os.setxattr is not allowed",
        "os.setxattr",
    ),
    # --- the file count cannot be fooled into freeing places -----------------------------------------------------
    Probe(
        "remove-of-missing-files-frees-nothing",
        "import os\nfor i in range(100_000):\n    try:\n        os.remove('never-made')\n    except OSError:\n"
        "        pass\n    open(f'f{i}', 'w').close()",
        TOO_MANY,
        "open",
    ),
    Probe(
        "rmdir-of-a-full-folder-frees-nothing",
        "import os\nos.mkdir('d')\nopen('d/keep', 'w').close()\nfor i in range(100_000):\n    try:\n"
        "        os.rmdir('d')\n    except OSError:\n        pass\n    open(f'f{i}', 'w').close()",
        TOO_MANY,
        "open",
    ),
    Probe(
        "remove-in-a-read-only-folder-frees-nothing",
        "import os\nos.mkdir('d')\nopen('d/keep', 'w').close()\nos.chmod('d', 0o500)\nfor i in range(100_000):\n"
        "    try:\n        os.remove('d/keep')\n    except OSError:\n        pass\n    open(f'f{i}', 'w').close()",
        TOO_MANY,
        "open",
    ),
    Probe(
        "remove-of-a-folder-frees-nothing",
        "import os\nos.mkdir('d')\nfor i in range(100_000):\n    try:\n        os.remove('d')\n"
        "    except OSError:\n        pass\n    open(f'f{i}', 'w').close()",
        TOO_MANY,
        "open",
    ),
    Probe(  # what ordinary code does: temporary files made and removed, far more than the limit in all
        "create-and-remove-churn-is-allowed",
        "import os\nfor i in range(3 * 1000):\n    open('tmp', 'w').write('x')\n    os.remove('tmp')\n"
        "print('churn ok')",
        "churn ok",
        None,
    ),
)

_MODULES = (
    "asyncio",
    "concurrent.futures",
    "ftplib",
    "http.client",
    "imaplib",
    "multiprocessing",
    "nntplib",
    "poplib",
    "smtplib",
    "socketserver",
    "telnetlib",
    "webbrowser",
    "xmlrpc.client",
    "runpy",
    "pdb",
    "bdb",
    "profile",
    "trace",
    "shelve",
    "selectors",
    "subprocess",
    "threading",
    "socket",
    "ssl",
    "urllib.request",
    "dbm",
    "zipimport",
    "tty",
    "pty",
    "cProfile",
    "sqlite3",
    "ctypes",
)
"""Denied modules written in Python (or a Python package over a denied extension)."""

MODULE_PROBES = (
    *(
        Probe(f"import-module-{m}", f"import importlib\nimportlib.import_module({m!r})", NO_MODULE, "import")
        for m in _MODULES
    ),
    Probe("importlib-dunder-import", "import importlib\nimportlib.__import__('threading')", NO_MODULE, "import"),
    Probe(
        "find-spec-and-exec-module",
        "import importlib.util\nspec = importlib.util.find_spec('subprocess')\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))",
        NO_MODULE,
        "import",
    ),
    Probe(
        "spec-from-file-location",
        "import importlib.util, os, sys\npath = os.path.join(os.path.dirname(os.__file__), 'threading.py')\n"
        "spec = importlib.util.spec_from_file_location('not_threading', path)\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))",
        NO_MODULE,
        "import",
    ),
    Probe(
        "source-file-loader",
        "import importlib.machinery, os\npath = os.path.join(os.path.dirname(os.__file__), 'socket.py')\n"
        "importlib.machinery.SourceFileLoader('s', path).load_module()",
        NO_MODULE,
        "import",
    ),
    Probe(
        "exec-of-the-source",
        "import os\nexec(open(os.path.join(os.path.dirname(os.__file__), 'subprocess.py')).read())",
        NO_MODULE,
        "import",
    ),
    Probe(
        "bytecode-from-pycache",
        "import glob, os\nd = os.path.join(os.path.dirname(os.__file__), '__pycache__')\n"
        "open((glob.glob(d + '/threading.*.pyc') or [d + '/threading.cpython-311.pyc'])[0], 'rb').read()",
        NO_MODULE,
        "import",
    ),
    Probe(
        "package-submodule-file",
        "import os\nopen(os.path.join(os.path.dirname(os.__file__), 'asyncio', 'subprocess.py')).read()",
        NO_MODULE,
        "import",
    ),
    Probe(
        "frozen-code-executed",
        "import _imp\nexec(_imp.get_frozen_object('runpy'), {'__name__': 'runpy'})",
        NO_MODULE,
        "import",
    ),
    Probe(
        "path-hooks-zipimporter",
        "import sys\nprint([h for h in sys.path_hooks if 'zip' in repr(h)])\nimport zipimport",
        NO_MODULE,
        "import",
    ),
)

REPORT_PROBES = (
    Probe(  # was: about 64 KiB of report, then refusals were refused but no longer counted
        "report-five-thousand-refusals",
        "import os\nfor _ in range(5000):\n    try:\n        os.remove(HOST)\n    except OSError:\n        pass",
        "(and 4980 more)",
        "os.remove",
        5000,
    ),
    Probe(
        "report-long-reasons",
        "import os\nfor i in range(2000):\n    try:\n        os.remove(HOST_DIR + '/' + 'x' * 400 + str(i))\n"
        "    except OSError:\n        pass",
        "(and 1980 more)",
        "os.remove",
        2000,
    ),
    Probe(
        "report-after-a-megabyte-of-forged-lines",
        "import os, sys\nfd = int(sys.argv[-1])\nfor _ in range(16):\n    os.write(fd, b'forged\\tline\\n' * 5000)\n"
        "os.remove(HOST)",
        "line(s) to the sandbox's report descriptor; they are not refusals",
        "os.remove",
        2,  # the refusal and the line that counts the forged ones
    ),
    Probe(
        "report-after-an-unterminated-line",
        "import os, sys\nos.write(int(sys.argv[-1]), b'x' * 100_000)\nos.remove(HOST)",
        "cannot remove",
        "os.remove",
        2,
    ),
)

ALL = DISK_PROBES + MODULE_PROBES + REPORT_PROBES
