"""The `calculate` tool: upstream's arithmetic, evaluated from the syntax tree instead of `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["ALLOWED_CHARACTERS", "calculate"]

ALLOWED_CHARACTERS = frozenset("0123456789+-*/(). ")
_MAX_POWER_BITS = 1_000_000
"""A power whose result would need more bits than this could never become a float: refuse it at once."""

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _power(base: Any, exponent: Any) -> Any:
    big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if big and exponent * math.log2(abs(base)) > _MAX_POWER_BITS:
        raise OverflowError("int too large to convert to float")
    return operator.pow(base, exponent)


def _evaluate(node: ast.AST) -> Any:
    """Evaluate the nodes the allowed characters can form, raising what Python's `eval` would raise."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(element) for element in node.elts)
    if isinstance(node, ast.Starred):
        return _evaluate(node.value)
    if isinstance(node, ast.Call):
        func = _evaluate(node.func)
        for arg in node.args:
            _evaluate(arg)
        for keyword in node.keywords:
            _evaluate(keyword.value)
        raise TypeError(f"'{type(func).__name__}' object is not callable")
    raise TypeError(f"unsupported expression: {type(node).__name__}")


def calculate(expression: str) -> str:
    """The value rounded to 2 decimals as text (`'12.0'`), or `'Error: ...'` as upstream reports it."""
    if not all(char in ALLOWED_CHARACTERS for char in expression):
        return "Error: invalid characters in expression"
    try:
        # `eval` of a string ignores leading spaces and tabs; the parser alone would not.
        tree = ast.parse(expression.lstrip(" \t"), filename="<string>", mode="eval")
        return str(round(float(_evaluate(tree)), 2))
    except Exception as e:
        return f"Error: {e}"
