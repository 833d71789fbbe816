"""The one JSON reader for every file ACE and ace-eval read: bounded in size, nesting depth and integer digits.

Collections, importers' sources, skillbooks, review queues, `run.json`, `samples.jsonl` and the checkpoint journal
are all read here. A file over `max_bytes`, objects and arrays nested deeper than `max_depth` (deeper data would
exhaust Python's recursion limit wherever it is processed later) and an integer of more than `max_int_digits`
digits (Python refuses to convert one of over 4,300 with a ValueError) are refused like malformed JSON: a
`JsonInputError`, a `UserError` naming the file, the line, the column and the field.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Collection, Iterator
from itertools import compress
from pathlib import Path
from typing import Any

from ace.exceptions import UserError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "JsonInputError",
    "iter_json_lines",
    "iter_object",
    "loads",
    "max_bytes",
    "read_bytes",
    "read_json",
]

MAX_DEPTH = 100
"""Deepest nesting of objects and arrays (real files nest about ten levels)."""
MAX_INT_DIGITS = 100
"""Most digits of an integer (counts, seeds, timestamps have under 20)."""
MAX_BYTES = 1 << 30
"""Largest file read (1 GiB); the environment variable `ACE_JSON_MAX_BYTES` changes it."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|-?\d+(?P<real>\.\d*)?(?P<exp>[eE][+-]?\d+)?|[^\s{}\[\]:,"]+')


class JsonInputError(UserError, ValueError):
    """A JSON file that is refused: unreadable, malformed, too large, too deep or with a too long integer.

    `kind` says which: `missing`, `size`, `encoding`, `syntax` (malformed or empty), `depth` or `integer`.
    """

    def __init__(
        self,
        reason: str,
        *,
        kind: str,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason, self.kind, self.file, self.line, self.column, self.field = reason, kind, file, line, column, field
        where = ", ".join(
            p for p in (file, f"line {line}" if line else None, f"column {column}" if column else None) if p
        )
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{reason}" if where else f"{what}{reason}")


def max_bytes() -> int:
    """`MAX_BYTES`, or the `ACE_JSON_MAX_BYTES` environment variable when it holds a positive integer."""
    value = os.environ.get("ACE_JSON_MAX_BYTES", "").strip()
    return int(value) if value.isdigit() and 0 < len(value) < 19 and int(value) > 0 else MAX_BYTES


def read_bytes(path: str | os.PathLike[str], *, limit: int | None = None, head: int | None = None) -> bytes:
    """The bytes of `path`, refusing a file over `limit` (default `max_bytes()`) before reading it, and anything
    that is not a regular file (a FIFO would block, a device such as `/dev/zero` never ends); `head` reads only the
    first that many bytes."""
    limit = max_bytes() if limit is None else limit
    p = Path(path)
    try:
        # non-blocking: opening a FIFO waits for a writer; a device (`/dev/zero`) has no end: both are refused
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise JsonInputError("no such file", kind="missing", file=str(p)) from None
    except IsADirectoryError:
        raise JsonInputError("a folder where a JSON file goes: pass the file", kind="missing", file=str(p)) from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        what = (
            "a folder where a JSON file goes"
            if stat.S_ISDIR(status.st_mode)
            else "not a regular file (a pipe, a device or a socket)"
        )
        raise JsonInputError(f"{what}: pass the file", kind="missing", file=str(p))
    with os.fdopen(fd, "rb") as f:
        if head is not None:  # only the start (to tell a file's format): no size limit to check
            return f.read(head)
        size = status.st_size
        data = f.read(size + 1) if size <= limit else b""  # +1: a file that grew since is seen
    if size > limit or len(data) > limit:
        raise JsonInputError(
            f"{max(size, len(data)):,} bytes, over the {limit:,}-byte limit of a JSON file: split it, or raise the "
            "limit with the environment variable ACE_JSON_MAX_BYTES",
            kind="size",
            file=str(p),
        )
    return data


def read_json(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
) -> Any:
    """Parse the JSON file at `path` within the limits; an empty file is malformed JSON."""
    p = str(path)
    return loads(read_bytes(path, limit=limit), file=p, max_depth=max_depth, max_int_digits=max_int_digits)


def iter_json_lines(
    data: bytes, *, file: str, max_depth: int = MAX_DEPTH, max_int_digits: int = MAX_INT_DIGITS
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON Lines file's bytes (read with `read_bytes`)."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, loads(line, file=file, line=number, max_depth=max_depth, max_int_digits=max_int_digits)


def loads(
    text: str | bytes,
    *,
    file: str | None = None,
    line: int | None = None,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
) -> Any:
    """Parse `text` (the whole of `file`, or its line number `line`) within the depth and integer limits."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsonInputError(f"not UTF-8 text (byte {e.start})", kind="encoding", file=file, line=line) from None

    try:
        value = json.loads(text, parse_int=_int_parser(max_int_digits))
    except json.JSONDecodeError as e:
        reason = "empty: a JSON document was expected" if not text.strip() else f"not valid JSON ({e.msg})"
        blank = not text.strip()
        here = line if line is not None or blank else e.lineno
        column = None if blank else e.colno
        raise JsonInputError(reason, kind="syntax", file=file, line=here, column=column) from None
    except RecursionError:
        _refuse_deep(text, file=file, line=line, max_depth=max_depth)
        raise  # pragma: no cover - the scan always finds what the parser choked on
    except JsonInputError:
        _refuse_long_int(text, file=file, line=line, max_int_digits=max_int_digits)
        raise  # pragma: no cover
    if text.count("[") + text.count("{") > max_depth and _too_deep(value, max_depth):
        _refuse_deep(text, file=file, line=line, max_depth=max_depth)
    return value


def _int_parser(max_int_digits: int) -> Callable[[str], int]:
    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > max_int_digits:
            raise JsonInputError("an integer too long", kind="integer")  # located by the caller's handler
        return int(digits)

    return parse_int


_CONTAINERS = frozenset({dict, list})


def _too_deep(value: object, max_depth: int) -> bool:
    """Whether objects and arrays nest more than `max_depth` levels in `value` (without recursing): level by
    level, keeping only the containers of each (in C: a file's strings and numbers are never visited one by one)."""
    level: list[Any] = [value] if type(value) in _CONTAINERS else []
    depth = 1
    while level:
        if depth > max_depth:
            return True
        children: list[Any] = []
        for container in level:
            children.extend(container.values() if type(container) is dict else container)
        level = list(compress(children, map(_CONTAINERS.__contains__, map(type, children))))
        depth += 1
    return False


_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]  # C
_SPACE = re.compile(r"[ \t\n\r]*")


class _NotStreamed(JsonInputError):
    """`iter_object` met what it leaves to `loads` (malformed JSON, a repeated top-level key)."""

    def __init__(self, at: int) -> None:
        super().__init__(f"not streamed (at character {at}): read the whole document with loads", kind="syntax")


def iter_object(
    text: str,
    *,
    split: Collection[str],
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
) -> Iterator[tuple[str, Any, bool]]:
    """The top-level object of `text`, parsed piece by piece: `(key, value, False)` per member, except that a
    member of `split` whose value is an array yields `(key, [], False)` and then `(key, item, True)` per item, so
    the items of a big file are never all parsed at once (a skillbook of 100,000 skills is 340 MB as one tree).

    Accepts exactly what `loads` accepts, within the same limits, or raises `JsonInputError`: also for a repeated
    top-level key, which `loads` takes (the last wins). On any error, read the document with `loads`: it says
    what is wrong, the same way for every file.
    """
    decoder = json.JSONDecoder(parse_int=_int_parser(max_int_digits))
    scan: Callable[[str, int], tuple[Any, int]] = decoder.scan_once  # type: ignore[attr-defined]  # the C scanner
    seen: set[str] = set()
    i = _skip(text, 0)
    if text[i : i + 1] != "{":
        raise _NotStreamed(i)
    i = _skip(text, i + 1)
    more = text[i : i + 1] != "}"
    while more:
        if text[i : i + 1] != '"':
            raise _NotStreamed(i)
        key, i = _scanstring(text, i + 1)
        i = _skip(text, i)
        if key in seen or text[i : i + 1] != ":":
            raise _NotStreamed(i)
        seen.add(key)
        i = _skip(text, i + 1)
        if key in split and text[i : i + 1] == "[":
            yield key, [], False
            i = _skip(text, i + 1)
            items = text[i : i + 1] != "]"
            while items:
                item, end = _value(scan, text, i, max_depth - 2)
                yield key, item, True
                i, items = _next(text, end, "]")
            end = i + 1
        else:
            value, end = _value(scan, text, i, max_depth - 1)
            yield key, value, False
        i, more = _next(text, end, "}")
    if _skip(text, i + 1) != len(text):
        raise _NotStreamed(i + 1)


def _skip(text: str, at: int) -> int:
    """The index of the first character at or after `at` that is not JSON whitespace."""
    found = _SPACE.match(text, at)
    return found.end() if found is not None else at


def _value(scan: Callable[[str, int], tuple[Any, int]], text: str, start: int, max_depth: int) -> tuple[Any, int]:
    """The JSON value at `start` and where it ends, refused when nested deeper than `max_depth` below it."""
    try:
        value, end = scan(text, start)
    except StopIteration:  # no value starts here
        raise _NotStreamed(start) from None
    if text.count("[", start, end) + text.count("{", start, end) > max_depth and _too_deep(value, max_depth):
        raise _NotStreamed(start)
    return value, end


def _next(text: str, at: int, closer: str) -> tuple[int, bool]:
    """After a member or an item: (where the next one starts, True) after a comma, or (the closer's index, False)."""
    i = _skip(text, at)
    mark = text[i : i + 1]
    if mark == ",":
        return _skip(text, i + 1), True
    if mark == closer:
        return i, False
    raise _NotStreamed(i)


def _refuse_deep(text: str, *, file: str | None, line: int | None, max_depth: int) -> None:
    pos, field = _scan(text, lambda m, depth: depth > max_depth)
    raise JsonInputError(
        f"nested more than {max_depth} levels deep: no file needs that; flatten the field (or store it as a JSON "
        "string), or remove it",
        kind="depth",
        **_where(text, pos, file=file, line=line, field=field),
    )


def _refuse_long_int(text: str, *, file: str | None, line: int | None, max_int_digits: int) -> None:
    def long_int(m: re.Match[str], depth: int) -> bool:
        return m.group()[0] in "-0123456789" and not m["real"] and not m["exp"] and len(m.group()) > max_int_digits

    pos, field = _scan(text, long_int)
    raise JsonInputError(
        f"an integer of more than {max_int_digits} digits: no field needs that; correct the value",
        kind="integer",
        **_where(text, pos, file=file, line=line, field=field),
    )


def _where(text: str, pos: int, *, file: str | None, line: int | None, field: str | None) -> dict[str, Any]:
    """File, line, column and field of character `pos` (`line` given: `text` is that one line of the file)."""
    column = pos - text.rfind("\n", 0, pos)
    return {"file": file, "line": line or text.count("\n", 0, pos) + 1, "column": column, "field": field}


def _scan(text: str, hit: Any) -> tuple[int, str | None]:
    """Position and field path of the first token for which `hit(match, depth)` holds (depth counts the token's
    own bracket); walks the tokens without recursing."""
    path: list[str | int | None] = []  # per open container: the current key (object) or index (array)
    expect_key = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[":
            path.append(None if tok == "{" else 0)
            expect_key = tok == "{"
            if hit(m, len(path)):
                return m.start(), _field(path[:-1])
        elif tok in "}]":
            if path:
                path.pop()
            expect_key = False
        elif tok == ",":
            if path and isinstance(path[-1], int):
                path[-1] += 1
            expect_key = bool(path) and not isinstance(path[-1], int)
        elif tok == ":":
            expect_key = False
        elif expect_key and tok.startswith('"'):
            path[-1] = tok[1:-1]
        elif hit(m, len(path)):
            return m.start(), _field(path)
    return 0, None


def _field(path: list[str | int | None], shown: int = 6) -> str | None:
    """`a.b[2]`: the path of keys and indexes, its first `shown` parts then `...` when longer."""
    out = ""
    for part in path[:shown]:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part is not None:
            out += f".{part}" if out else part
    return (out + ("..." if len(path) > shown else "")) or None
