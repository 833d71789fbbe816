"""The docs run as written: every Python block of README.md, docs/ and the examples' READMEs, and every `ace-eval`
command of the README; the README stays a front page whose links resolve; the CLI reference covers every command.

Every fenced block is read by its info string: `python`, `py`, `python3` (and any of them with attributes after a
space, e.g. ```` ```py title="x" ````) run; the other languages are listed in `NOT_PYTHON`, so a block in a new
spelling fails `test_every_fenced_block_has_a_known_language` instead of being silently skipped. `mkdocs build
--strict` (run by `python3 dev.py test`) checks the site's own links and anchors.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from _e2e_support import ScriptedReflector, scripted_injections
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKDOWN = [README, *sorted(DOCS.rglob("*.md")), *sorted((ROOT / "examples").rglob("README.md"))]
PYTHON = frozenset({"python", "py", "python3"})
NOT_PYTHON = frozenset({"", "bash", "sh", "console", "toml", "json", "jsonl", "text"})
README_MAX_LINES = 200
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language (the info string's first word, lower case), its code."""

    path: Path
    line: int
    language: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a markdown file, in order (a fence closes with the same marker, at least as long)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        marker, info = opening.groups()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not (lines[i].startswith(marker[0] * len(marker)) and not lines[i].strip(marker[0])):
            body.append(lines[i])
            i += 1
        words = info.strip().split()
        blocks.append(Block(path, start, words[0].lower() if words else "", "\n".join(body) + "\n"))
        i += 1
    return blocks


BLOCKS = [b for path in MARKDOWN for b in fenced_blocks(path)]
PYTHON_BLOCKS = [b for b in BLOCKS if b.language in PYTHON]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = "\n" * (block.line - 1) + block.code  # tracebacks point at the markdown line
    exec(compile(code, str(block.path), "exec"), {"__name__": "readme"})


def test_every_fenced_block_has_a_known_language() -> None:
    unknown = [(b.id, b.language) for b in BLOCKS if b.language not in PYTHON | NOT_PYTHON]
    assert unknown == [], "add the language to PYTHON (it runs) or NOT_PYTHON"


def test_every_python_spelling_is_collected(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(
        "intro\n```py\nx = 1\n```\n```python title='t'\ny = 2\n```\n````Python3\nz = 3\n````\n```\nnot python\n```\n",
        encoding="utf-8",
    )
    found = [(b.language, b.code) for b in fenced_blocks(sample)]
    assert found == [("py", "x = 1\n"), ("python", "y = 2\n"), ("python3", "z = 3\n"), ("", "not python\n")]


def test_the_examples_import_public_paths_only() -> None:
    private = [b.id for b in PYTHON_BLOCKS if re.search(r"\bace\.implementations\b|\b(ace|ace_eval)\.\S*\._", b.code)]
    assert private == [], "import from `ace` (its __all__) or a public module, as a user would"


def test_the_docs_have_the_examples_a_newcomer_needs() -> None:
    concepts = [b.code for b in PYTHON_BLOCKS if b.path == DOCS / "concepts.md"]
    # learning from traces goes through the registry, the one way to build a pipeline
    [learning] = [code for code in concepts if "make_reflector" in code and "run_sample" in code]
    assert "build_pipeline(" in learning and "Pipeline([" not in learning
    [step] = [b.code for b in PYTHON_BLOCKS if b.path == DOCS / "pipeline.md" and "StepFactory(" in b.code]
    assert "build_pipeline(" in step and "StepRegistry(" in step
    assert any(b.path == README for b in PYTHON_BLOCKS)


def test_the_readme_is_a_front_page_whose_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, "move the detail to a page under docs/ and link it"
    relative = [t.partition("#") for t in _LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    missing = [path for path, _, _ in relative if not (ROOT / path).exists()]
    assert missing == [], "a link of the README names no file of the repository"
    anchors = [f"{p}#{a}" for p, _, a in relative if a and p.endswith(".md") and a not in _anchors(ROOT / p)]
    assert anchors == [], "a link of the README names no heading of its page"
    linked = {Path(t.partition("#")[0]) for t in _LINK.findall(text) if t.startswith("docs/")}
    pages = {p.relative_to(ROOT) for p in DOCS.rglob("*.md")} - {Path("docs/index.md")}
    assert pages <= linked, "link every docs page from the README's Links section"


def _anchors(page: Path) -> set[str]:
    """The ids of a markdown page's headings, spelled as mkdocs' toc extension spells them."""
    headings = re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    ascii_ = (unicodedata.normalize("NFKD", h).encode("ascii", "ignore").decode() for h in headings)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower()) for h in ascii_}


def test_the_cli_reference_is_generated_for_every_command() -> None:
    """mkdocs-click's output for docs/cli.md's options, in a fresh process as `mkdocs build` runs it."""
    from ace_eval.cli import COMMANDS

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    options = dict(re.findall(r"^    :(\w+): (.+)$", page.split("::: mkdocs-click", 1)[1], flags=re.MULTILINE))
    script = "import sys; from mkdocs_click._extension import replace_command_docs as r; print(*r(**eval(sys.argv[1])))"
    generated = subprocess.run(
        [sys.executable, "-c", script, repr(options)], capture_output=True, text=True, check=True
    ).stdout
    titles = set(re.findall(r"(?:^| )#{3} (\S+)", generated))  # the sub-commands, one level below `## ace-eval`
    assert options["command"] == "main" and "## ace-eval" in generated
    assert set(COMMANDS) <= titles, "a sub-command is missing from the generated reference"
    assert "--reflector-model" in generated and "--resume" in generated


def readme_commands() -> list[str]:
    """Every `ace-eval` command of the README's bash blocks, in order, continuation lines joined, comments dropped."""
    commands = []
    for block in fenced_blocks(README):
        if block.language == "bash":
            joined = block.code.replace("\\\n", " ")
            commands += [line.split("  #")[0].strip() for line in joined.splitlines() if line.startswith("ace-eval ")]
    return commands


def test_the_readme_commands_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a scratch folder that looks like a clone (`examples/` linked in), the hosted models scripted."""
    from ace_eval.cli import main
    from ace_eval.e2e import runner

    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(clone)
    for var in ("LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR", "ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "ACE_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    injections = scripted_injections(ScriptedReflector())
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=injections))
    commands = readme_commands()
    assert commands[0].startswith("ace-eval collection import --format openai-jsonl examples/")
    first_run: Path | None = None
    for command in commands:
        if "run_<id>" in command:
            assert first_run is not None, f"{command}: no run folder yet"
            command = command.replace("results/e2e/run_<id>", str(first_run))
        result = CliRunner().invoke(main, shlex.split(command)[1:])
        assert result.exit_code == 0, f"{command}\n{result.output}"
        runs = sorted((clone / "results" / "e2e").glob("run_*"), key=lambda p: p.stat().st_mtime)
        first_run = first_run or (runs[0].relative_to(clone) if runs else None)
    assert len(commands) >= 8 and first_run is not None
    assert (first_run / "skillbook.md").is_file()
    assert (first_run / "report.html").is_file()  # `ace-eval report RUN` wrote its page into the run folder
    assert not (clone / "report.html").exists()
