"""The public names: every one importable from `ace`, and `import ace` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ace


@pytest.mark.parametrize("name", ace.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(ace, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ace.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_import_ace_does_not_load_the_agent_stack() -> None:
    code = "import sys, ace; print(sorted(m for m in ('pydantic_ai', 'litellm', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
