"""The public names: every one importable from `ace`, and `import ace` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ace

# `ace.__all__` as of 0.1.0 (before the layout change): each name must stay importable from `ace`.
PUBLIC_0_1 = [
    "SCHEMA_VERSION",
    "VALID_SECTIONS",
    "AceError",
    "Embedder",
    "EmbeddingError",
    "InsightSource",
    "LiteLLMEmbedder",
    "LiteLLMModel",
    "LocalModel",
    "MiniLMEmbedder",
    "ModelRequestError",
    "Quarantine",
    "QuarantinePolicy",
    "RecursiveConfig",
    "RecursiveReflector",
    "Reflection",
    "Reflector",
    "ReflectorResult",
    "RoleSettings",
    "RunError",
    "SMResult",
    "SMSettings",
    "SimilarPair",
    "SimpleReflector",
    "Skill",
    "SkillKpis",
    "SkillManager",
    "SkillTag",
    "Skillbook",
    "SkillbookError",
    "SkillbookFormatError",
    "TestEmbedder",
    "TraceIdentity",
    "TraceInput",
    "TraceLike",
    "UnknownSkillError",
    "UpdateOperation",
    "UserError",
    "__version__",
    "configure_observability",
    "default_embedder",
    "find_similar_pairs",
    "infer_model",
    "make_reflector",
    "normalize_keywords",
    "render_skills_xml",
    "retrieve_top_k",
    "skill_kpis",
]


def test_the_0_1_public_names_are_all_still_exported() -> None:
    assert sorted(set(PUBLIC_0_1) - set(ace.__all__)) == []


@pytest.mark.parametrize("name", PUBLIC_0_1)
def test_every_0_1_name_imports_from_ace(name: str) -> None:
    exec(f"from ace import {name}", {})


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
