"""The C extensions the sandbox child may load, and the only files it may load them from.

Loaded by `_bootstrap.py` (like `_policy`, as a sibling file, never imported by ACE): `native_files` is read
before the audit hook is installed and handed to `_policy.make_audit_hook`.
"""

from __future__ import annotations

import os

__all__ = ["ALLOWED_EXTENSIONS", "native_files"]

ALLOWED_EXTENSIONS = frozenset(
    {
        "_bisect",
        "_blake2",
        "_bz2",
        "_codecs_cn",
        "_codecs_hk",
        "_codecs_iso2022",
        "_codecs_jp",
        "_codecs_kr",
        "_codecs_tw",
        "_contextvars",
        "_csv",
        "_datetime",
        "_decimal",
        "_elementtree",
        "_hashlib",
        "_heapq",
        "_json",
        "_lzma",
        "_md5",
        "_multibytecodec",
        "_opcode",
        "_pickle",
        "_queue",
        "_random",
        "_sha1",
        "_sha256",
        "_sha3",
        "_sha512",
        "_statistics",
        "_struct",
        "_typing",
        "_uuid",
        "_zoneinfo",
        "array",
        "audioop",
        "binascii",
        "cmath",
        "grp",
        "math",
        "pyexpat",
        "resource",
        "unicodedata",
        "zlib",
    }
)
"""The only C extension modules (`.so` files) that may be loaded: data processing, no system access. Each only
from its own file in the read-only library (`native_files`): the name alone says nothing about the code."""


def native_files(library: list[str], suffixes: list[str]) -> frozenset[tuple[str, str]]:
    """`(module, path)` of each allowed extension as the import system finds it in `library` (the final `sys.path`).

    Read before the hook is installed; the hook then loads native code only from exactly these files, so a copy
    of `_json` patched and written to the working directory is refused whatever name it is loaded under.
    """
    found: set[tuple[str, str]] = set()
    for folder in library:
        try:
            names = set(os.listdir(folder))
        except OSError:
            continue
        for module in ALLOWED_EXTENSIONS:
            found.update((module, folder + "/" + module + suffix) for suffix in suffixes if module + suffix in names)
    return frozenset(found)
