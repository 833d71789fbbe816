"""The layout's rules: no import cycle, no private module imported across packages, small modules and folders.

The imports are read with `ast` from the source files (nothing is imported): every `import` and `from ... import`,
also those inside functions (a deferred import hides a cycle, it does not remove it) and those under
`if TYPE_CHECKING:` (a cycle of types is still a cycle of design). `from package import name` counts as an import
of `package.name` when that is a module, else of `package`.
"""

from __future__ import annotations

import ast
import re
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
    """The modules of `known` that the module `name` (at `path`) imports (see `_imports_in`)."""
    return _imports_in(name, path.read_text(encoding="utf-8"), known, is_package=path.name == "__init__.py")


def _imports_in(name: str, source: str, known: dict[str, Path], *, is_package: bool | None = None) -> set[str]:
    """The modules of `known` that the module `name` (at `path`) imports, with the packages whose `__init__` the
    import runs: `from package import x` reads `package`'s namespace (its `__init__` runs first, even from a module
    of that package), and importing `a.b.c` runs `a.b`'s `__init__` unless the importer is inside `a.b` (which is
    then initialised already)."""
    if is_package is None:
        is_package = known[name].name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            parts = target.split(".")
            ancestors = {".".join(parts[:k]) for k in range(1, len(parts))}
            out |= {a for a in ancestors if not _inside(name, a)}
            out.add(target)
    return {t for t in out if t in known and t != name}


def _inside(name: str, package: str) -> bool:
    """Whether the module `name` is `package` or inside it (its `__init__` has run before `name` runs)."""
    return name == package or name.startswith(package + ".")


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


def test_the_walk_sees_cycles_through_a_package_init() -> None:
    """`from package import x` runs (and reads) `package`'s `__init__`: a module whose package's `__init__`
    imports it back is in a cycle; importing a sibling by its full path is not (its package is initialised)."""
    known = {"p": Path("p/__init__.py"), "p.a": Path("p/a.py"), "p.b": Path("p/b.py"), "q.c": Path("q/c.py")}
    sources = {
        "p": "from p.a import run",
        "p.a": "from p.b import helper",
        "p.b": "from p import c",  # reads p's namespace, whose __init__ imports a, which imports b
        "q.c": "from p.b import helper",  # outside p: p's __init__ runs first
    }
    graph = {name: _imports_in(name, sources[name], known) for name in known}
    assert graph == {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p"}, "q.c": {"p", "p.b"}}
    assert cycles(graph) == [["p", "p.a", "p.b"]]
    sources["p.b"] = "from p.c import x"
    assert cycles({name: _imports_in(name, sources[name], known) for name in known}) == []


def test_the_walk_sees_cycles_and_deferred_imports() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "ace.reflector.recursive" in graph["ace.reflector.simple"]  # make_reflector's deferred import
    assert "ace.core.skillbook" in graph["ace.core"]  # `from ace.core.skillbook import ...` in a package
    assert "ace.deduplication.detector" in graph["ace"]  # under `if TYPE_CHECKING:`: counted too


LAYERS: tuple[tuple[str, ...], ...] = (
    ("ace.exceptions", "ace.extras", "ace.json_safe"),
    ("ace.redaction",),
    ("ace.core",),
    ("ace.*",),
    ("ace",),
    ("ace_eval", "ace_eval.text", "ace_eval.reporting", "ace_eval.skill_lint"),
    ("ace_eval.collection",),
    ("ace_eval.run",),
    ("ace_eval.benchmarks",),
    ("ace_eval.store",),
    ("ace_eval.gate",),
    ("ace_eval.e2e",),
    ("ace_eval.trials", "ace_eval.federation", "ace_eval.serve"),
    ("ace_eval.report", "ace_eval.review"),
    ("ace_eval.commands", "ace_eval.cli"),
)
"""The packages bottom up (docs/layout.md, "Layers"): a module imports only from its own layer and those below.
`ace.*` is every other package of the library (retrieval, reflector, skill_manager, steps, ...); a slot may name a
package that does not exist yet. Within a layer the cycle test keeps the packages apart."""


def layer_of(name: str) -> int:
    """The index in `LAYERS` of the module `name`'s package: the most specific slot that names it or a package
    above it (`ace.*` is more specific than `ace`, less than `ace.core`)."""
    best: tuple[int, int] | None = None
    for index, slot in enumerate(LAYERS):
        for package in slot:
            root = package.removesuffix(".*")
            if package.endswith(".*"):
                hit, weight = name.startswith(root + "."), len(root) + 1
            else:
                hit, weight = name == root or name.startswith(root + "."), len(root)
            if hit and (best is None or weight > best[0]):
                best = (weight, index)
    if best is None:
        raise AssertionError(f"{name} belongs to no layer: give its package a slot in LAYERS and docs/layout.md")
    return best[1]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer than the importer's."""
    return sorted(
        f"{name} imports {target} (layer {layer_of(target)} above {layer_of(name)})"
        for name, imported in graph.items()
        for target in imported
        if layer_of(target) > layer_of(name)
    )


def test_no_package_imports_from_a_layer_above_it() -> None:
    found = layer_violations(import_graph())
    assert found == [], "move what the lower layer needs down to it, or invert the call:\n" + "\n".join(found)


def test_the_layer_rule_sees_an_upward_import() -> None:
    assert layer_violations({"ace_eval.run.usage": {"ace_eval.e2e.episodes"}}) == [
        f"ace_eval.run.usage imports ace_eval.e2e.episodes (layer {layer_of('ace_eval.e2e')} above "
        f"{layer_of('ace_eval.run')})"
    ]
    assert layer_violations({"ace.core.skill_store": {"ace.retrieval.top_k"}}) != []
    assert layer_violations({"ace_eval.e2e.segment": {"ace_eval.run.record", "ace.core", "ace_eval.e2e.plan"}}) == []
    assert layer_of("ace.steps.redact") == layer_of("ace.retrieval") < layer_of("ace") < layer_of("ace_eval.text")
    assert layer_of("ace_eval.gate.compare") < layer_of("ace_eval.e2e")  # a slot for a package still to come


def test_the_layers_are_written_in_the_docs() -> None:
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = text[text.index("## Layers") :]
    lines = [line for line in section.splitlines() if line.startswith(tuple(f"{i}. " for i in range(1, 30)))]
    assert len(lines) == len(LAYERS)
    for line, slot in zip(lines, LAYERS, strict=True):
        for package in slot:
            assert f"`{package}`" in line, (package, line)


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


FORMAT_SCOPE = ("ace", "ace-eval/src", "benchmarks", "examples", "tests", "dev.py")


def formatter_opt_outs(root: Path) -> list[str]:
    """Lines that switch the formatter off (`fmt: skip` / `fmt: off`) in the project's Python files."""
    marker = re.compile(r"#\s*fmt:\s*(skip|off)\b")
    found: list[str] = []
    for scope in FORMAT_SCOPE:
        base = root / scope
        for path in sorted([base] if base.is_file() else base.rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if marker.search(line):
                    found.append(f"{path.relative_to(root)}:{number}")
    return found


def test_no_code_opts_out_of_the_formatter(tmp_path: Path) -> None:
    """Split a module by responsibility instead of compressing it: `ruff format` lays out every line."""
    found = formatter_opt_outs(ROOT)
    assert found == [], "remove these markers and run `ruff format` (split the module if it grows):\n" + "\n".join(
        found
    )
    (tmp_path / "ace").mkdir()
    skip, off = "# fmt" + ": skip", "#fmt" + ":off"  # spelled apart so this file holds no marker itself
    (tmp_path / "ace" / "m.py").write_text(f"x = [1,2]  {skip}\ny = 1\n{off}\n", encoding="utf-8")
    assert formatter_opt_outs(tmp_path) == ["ace/m.py:1", "ace/m.py:3"]
