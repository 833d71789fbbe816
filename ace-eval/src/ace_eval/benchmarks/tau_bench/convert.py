"""Upstream keeps the tasks as Python (`TASKS = [Task(...), ...]`); read them as data, never executing them."""

from __future__ import annotations

import ast
import json
from typing import Any

from ace.exceptions import UserError

__all__ = ["TasksSourceError", "tasks_from_python", "tasks_json"]


class TasksSourceError(UserError, ValueError):
    """A tasks module that is not a plain `TASKS = [Task(...), ...]` list of literals."""


def _call_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _value(node: ast.expr) -> Any:
    """A literal, or a `Task(...)`/`Action(...)` call turned into a dict of its keyword arguments."""
    if isinstance(node, ast.Call):
        name = _call_name(node.func)
        if name not in ("Task", "Action") or node.args:
            raise TasksSourceError(f"line {node.lineno}: only Task(...) and Action(...) with keyword arguments")
        out: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise TasksSourceError(f"line {node.lineno}: **kwargs is not supported in {name}(...)")
            out[keyword.arg] = _value(keyword.value)
        return out
    if isinstance(node, ast.List):
        return [_value(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise TasksSourceError(f"line {node.lineno}: ** in a dict literal is not supported")
        return {_value(key): _value(value) for key, value in zip(node.keys, node.values, strict=True) if key}
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise TasksSourceError(
            f"line {getattr(node, 'lineno', '?')}: not a literal: {ast.unparse(node)[:80]}"
        ) from None


def tasks_from_python(source: str) -> list[dict[str, Any]]:
    """The `TASKS` list of an upstream tasks module as plain dicts, keys in the order they are written."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise TasksSourceError(f"not valid Python: {e}") from None
    for statement in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign):
            targets, value = [statement.target], statement.value
        if value is not None and any(isinstance(t, ast.Name) and t.id == "TASKS" for t in targets):
            if not isinstance(value, ast.List):
                raise TasksSourceError("TASKS must be a list literal")
            tasks = [_value(element) for element in value.elts]
            if not all(isinstance(task, dict) for task in tasks):
                raise TasksSourceError("every element of TASKS must be a Task(...) call")
            return tasks
    raise TasksSourceError("no `TASKS = [...]` assignment found")


def tasks_json(source: str) -> bytes:
    """`tasks_test.json` as the data folders hold it (indent 1, ASCII-escaped, no final newline)."""
    return json.dumps(tasks_from_python(source), indent=1).encode("utf-8")
