"""No two modules of `ace` or `ace_eval` import each other, directly or through others.

The imports are read with `ast` from the source files (nothing is imported): every `import` and `from ... import`,
also those inside functions (a deferred import hides a cycle, it does not remove it); only the ones under
`if TYPE_CHECKING:` are left out, since they never run. `from package import name` counts as an import of
`package.name` when that is a module, else of `package`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"ace": ROOT / "ace", "ace_eval": ROOT / "ace-eval" / "src" / "ace_eval"}


def modules() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its `__init__.py`)."""
    found: dict[str, Path] = {}
    for name, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield from _import_nodes(other)
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _import_nodes(child)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that the module `name` (at `path`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        out |= {t for t in targets if t in known and t != name}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_no_import_cycle_in_ace_or_ace_eval() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles (move what both sides need to a module both import):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_benchmark_does_not_import_the_harness_internals() -> None:
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith("ace_eval.benchmarks."):
            internal = sorted(i for i in imported if i.startswith(("ace_eval.e2e", "ace_eval.commands")))
            assert internal == [], f"{name} imports {internal}"


def test_the_walk_sees_cycles_and_deferred_imports() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "ace.reflector.recursive" in graph["ace.reflector.simple"]  # make_reflector's deferred import
    assert "ace.core.skillbook" in graph["ace.core"]  # `from ace.core.skillbook import ...` in a package
    assert "ace.deduplication.detector" not in graph["ace"]  # under `if TYPE_CHECKING:` (and lazy by name)
