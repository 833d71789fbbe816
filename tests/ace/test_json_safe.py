"""The safe JSON reader: each limit refused as a user error naming the file, line, column and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ace import json_safe
from ace.exceptions import UserError
from ace.json_safe import JsonInputError, iter_json_lines, loads, read_bytes, read_json


def test_json_nested_50000_deep_is_refused_naming_line_column_and_field() -> None:
    text = '{"a": 1,\n "b": {"c": [0, ' + "[" * 50_000 + "]" * 50_000 + "]}}"
    with pytest.raises(JsonInputError, match=r"^f.json, line 2, column \d+: field 'b.c\[1\]\[0\].*': nested more") as e:
        loads(text, file="f.json")
    assert isinstance(e.value, UserError) and e.value.kind == "depth" and e.value.line == 2


def test_nesting_the_parser_survives_is_still_refused_above_the_limit() -> None:
    assert loads("[" * 100 + "]" * 100, file="f.json") is not None
    with pytest.raises(JsonInputError, match="nested more than 100 levels"):
        loads("[" * 101 + "]" * 101, file="f.json")
    assert loads("[" * 101 + "]" * 101, file="f.json", max_depth=101) is not None


def test_an_integer_of_5000_digits_is_refused_naming_the_field() -> None:
    text = '{"trace_id": "9999", "reward": ' + "9" * 5000 + "}"
    with pytest.raises(JsonInputError, match=r"^f.json, line 1, column 32: field 'reward': an integer of more than"):
        loads(text, file="f.json")
    assert loads('{"n": ' + "9" * 100 + ', "x": 1.' + "5" * 5000 + "}")["n"] == int("9" * 100)
    with pytest.raises(JsonInputError, match="field 'n'"):
        loads('{"n": -' + "9" * 101 + "}")


def test_a_line_of_a_jsonl_file_is_named_by_its_number() -> None:
    data = b'{"a": 1}\n\n{"a": [' + b"7" * 200 + b"]}\n"
    with pytest.raises(JsonInputError, match=r"^x.jsonl, line 3, column 8: field 'a\[0\]': an integer"):
        list(iter_json_lines(data, file="x.jsonl"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"f.json: empty: a JSON document was expected"),
        (b"  \n", r"f.json: empty"),
        (b'{"a": [1,\n 2', r"f.json, line 2, column 3: not valid JSON"),
        (b'{"a": "\xff"}', r"f.json: not UTF-8 text \(byte 7\)"),
    ],
)
def test_empty_malformed_and_not_utf8_are_user_errors(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(JsonInputError, match=re.escape(str(tmp_path) + "/") + message):
        read_json(path)


def test_size_limit_refuses_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.json"
    path.write_text("[" + "1," * 600 + "1]", encoding="utf-8")
    with pytest.raises(JsonInputError, match=r"big.json: 1,203 bytes, over the 1,000-byte limit.*ACE_JSON_MAX_BYTES"):
        read_json(path, limit=1000)
    monkeypatch.setenv("ACE_JSON_MAX_BYTES", "1000")
    assert json_safe.max_bytes() == 1000
    with pytest.raises(JsonInputError, match="over the 1,000-byte limit"):
        read_bytes(path)
    monkeypatch.setenv("ACE_JSON_MAX_BYTES", "lots")
    assert json_safe.max_bytes() == json_safe.MAX_BYTES
    with pytest.raises(JsonInputError, match="no such file"):
        read_json(tmp_path / "missing.json")


STREAMED = [
    "{}",
    ' {\n "a" : 1 } \n',
    '{"items": [], "b": "c"}',
    '{"items": [1, {"x": [2, null]}, "s"], "b": [true]}',
    '{"items": "not a list", "b": NaN}',
    '{"a": 1,}',
    '{"a": 1 "b": 2}',
    '{"items": [1,]}',
    '{"items": [1 2]}',
    '{"items": [1]',
    '{"a": 1} x',
    "",
    "{",
    "\ufeff{}",
    '{"items": [' + "[" * 98 + "]" * 98 + "]}",
    '{"items": [' + "[" * 99 + "]" * 99 + "]}",
    '{"a": ' + "[" * 99 + "]" * 99 + "}",
    '{"a": ' + "[" * 100 + "]" * 100 + "}",
    '{"a": 1' + "0" * 99 + "}",
    '{"items": [1' + "0" * 100 + "]}",
]


@pytest.mark.parametrize("text", STREAMED, ids=range(len(STREAMED)))
def test_iter_object_takes_what_loads_takes_and_refuses_the_rest(text: str) -> None:
    try:
        expected: object = loads(text)
    except JsonInputError:
        expected = JsonInputError
    try:
        got: dict[str, object] = {}
        for key, value, item in json_safe.iter_object(text, split={"items"}):
            if item:
                got[key].append(value)  # type: ignore[attr-defined]
            else:
                got[key] = value
        streamed: object = got
    except JsonInputError:
        streamed = JsonInputError
    assert streamed == expected


def test_iter_object_leaves_repeated_keys_and_other_documents_to_loads() -> None:
    for text in ('{"a": 1, "a": 2}', "[1]", '"text"'):
        with pytest.raises(JsonInputError, match="read the whole document with loads"):
            list(json_safe.iter_object(text, split=()))
