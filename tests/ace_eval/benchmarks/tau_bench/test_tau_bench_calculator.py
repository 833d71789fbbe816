"""The `calculate` tool: upstream's results and error strings, from the syntax tree instead of `eval`."""

from __future__ import annotations

import pytest

from ace_eval.benchmarks.tau_bench.calculator import calculate


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("2 * ((350 - 122) + (495 - 127))", "1192.0"),
        ("10 / 3", "3.33"),
        (" 1 + 1", "2.0"),
        ("2 ** 0.5", "1.41"),
        ("1 / 0", "Error: division by zero"),
        ("1 +", "Error: invalid syntax (<string>, line 1)"),
        ("()", "Error: float() argument must be a string or a real number, not 'tuple'"),
        ("(1)(2)", "Error: 'int' object is not callable"),
        ("2 ** 99999999", "Error: int too large to convert to float"),
        ("__import__('os').system('true')", "Error: invalid characters in expression"),
        ("1e3", "Error: invalid characters in expression"),
    ],
)
def test_calculate_matches_upstream_without_eval(expression: str, result: str) -> None:
    assert calculate(expression) == result
