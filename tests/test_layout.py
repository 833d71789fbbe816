"""The layout's rules: no import cycle, no private module imported across packages, small modules and folders.

The imports are read with `ast` from the source files (nothing is imported): every `import` and `from ... import`,
also those inside functions (a deferred import hides a cycle, it does not remove it) and those under
`if TYPE_CHECKING:` (a cycle of types is still a cycle of design). `from package import name` counts as an import
of `package.name` when that is a module, else of `package`.
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


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
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
    assert "ace.deduplication.detector" in graph["ace"]  # under `if TYPE_CHECKING:`: counted too


def _package(name: str) -> str:
    return name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]


def private_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a private module (`_x`) from outside the package that holds it."""
    found: list[str] = []
    for name, imported in graph.items():
        for target in imported:
            parts = target.split(".")
            private = next((k for k, part in enumerate(parts) if part.startswith("_")), None)
            if private is not None and ".".join(parts[:private]) != _package(name):
                found.append(f"{name} imports {target}")
    return sorted(found)


def test_no_module_imports_another_packages_private_module() -> None:
    found = private_imports(import_graph())
    assert found == [], "make the module public, or move what is shared into it:\n" + "\n".join(found)


def test_the_private_import_rule_sees_a_violation() -> None:
    assert private_imports({"ace.steps.redact": {"ace.llm._errors"}}) == ["ace.steps.redact imports ace.llm._errors"]
    assert private_imports({"ace.llm.routing": {"ace.llm._errors"}}) == []


MAX_MODULE_LINES = 450
MAX_FOLDER_MODULES = 20


def test_modules_and_folders_stay_small() -> None:
    long = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in modules().items()}
    assert {n: k for n, k in long.items() if k > MAX_MODULE_LINES} == {}, "split these modules"
    folders: dict[Path, int] = {}
    for path in modules().values():
        folders[path.parent] = folders.get(path.parent, 0) + (path.name != "__init__.py")
    assert {str(f): k for f, k in folders.items() if k > MAX_FOLDER_MODULES} == {}, "split these folders"


def test_the_layout_names_the_stages_of_the_flow() -> None:
    """A newcomer who reads the flow (trace -> redact -> reflect -> update -> skillbook -> export) finds each stage."""
    for folder in ("core", "redaction", "reflector", "skill_manager", "agents", "sandbox", "pipeline", "steps"):
        assert (ROOT / "ace" / folder / "__init__.py").exists(), folder
    for folder in ("collection", "run", "e2e", "benchmarks", "commands"):
        assert (ROOT / "ace-eval" / "src" / "ace_eval" / folder / "__init__.py").exists(), folder
    assert not (ROOT / "ace" / "implementations").exists()
