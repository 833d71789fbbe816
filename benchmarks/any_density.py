"""How often `Any` appears in the type hints of `ace` and `ace_eval`, per 1,000 lines of code.

Counts every use of the name `Any` (`Any`, `typing.Any`, inside annotations, aliases and casts, string annotations
included) found by `ast`, and the lines of the package's `.py` files (blank lines and comments included, as `wc -l`
counts). `ace_eval` should stay at or under `ace`: each `Any` is a place where mypy stops checking.

    python benchmarks/any_density.py          # a table, one row per package
    python benchmarks/any_density.py --files  # and the ten files with the most
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"ace": ROOT / "ace", "ace_eval": ROOT / "ace-eval" / "src" / "ace_eval"}


@dataclass(frozen=True)
class Count:
    """`Any` uses and lines of one file or package."""

    anys: int
    lines: int

    @property
    def per_1000(self) -> float:
        return 1000 * self.anys / self.lines if self.lines else 0.0


def _is_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any" and isinstance(node.value, ast.Name)
    )


def count_anys(source: str) -> int:
    """Uses of `Any` in a module, string annotations (`"dict[str, Any]"`) parsed too; imports are not uses."""
    tree = ast.parse(source)
    found = 0
    for node in ast.walk(tree):
        if _is_any(node):
            found += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "Any" in node.value:
            try:
                found += sum(_is_any(n) for n in ast.walk(ast.parse(node.value, mode="eval")))
            except SyntaxError:
                continue
    return found


def file_count(path: Path) -> Count:
    source = path.read_text(encoding="utf-8")
    return Count(anys=count_anys(source), lines=len(source.splitlines()))


def package_counts(folder: Path) -> dict[Path, Count]:
    return {path: file_count(path) for path in sorted(folder.rglob("*.py"))}


def main(argv: list[str]) -> None:
    print(f"{'package':<10} {'files':>6} {'lines':>8} {'Any':>6} {'Any per 1,000 lines':>20}")
    worst: list[tuple[int, Path]] = []
    for name, folder in PACKAGES.items():
        files = package_counts(folder)
        total = Count(sum(c.anys for c in files.values()), sum(c.lines for c in files.values()))
        print(f"{name:<10} {len(files):>6} {total.lines:>8} {total.anys:>6} {total.per_1000:>20.1f}")
        worst += [(c.anys, p) for p, c in files.items()]
    if "--files" in argv:
        print("\nmost Any:")
        for anys, path in sorted(worst, reverse=True)[:10]:
            print(f"  {anys:>4}  {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
