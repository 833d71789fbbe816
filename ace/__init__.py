"""ACE: agents that learn from their own traces through a skillbook of issues, insights and keywords.

The skillbook names are imported eagerly (they need only numpy); the agent, model and search names load on first
use, so `import ace` stays fast for code that only reads or writes skillbooks.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from ace.core import (
    SCHEMA_VERSION,
    VALID_SECTIONS,
    InsightSource,
    Quarantine,
    QuarantinePolicy,
    Skill,
    Skillbook,
    SkillKpis,
    TraceIdentity,
    TraceInput,
    TraceLike,
    UpdateOperation,
    normalize_keywords,
    skill_kpis,
)
from ace.exceptions import (
    AceError,
    MissingExtraError,
    RunError,
    SkillbookError,
    SkillbookFormatError,
    UnknownSkillError,
    UserError,
)

if TYPE_CHECKING:
    from ace.core.rendering import render_skills_xml
    from ace.deduplication.detector import SimilarPair, find_similar_pairs
    from ace.embeddings import Embedder, EmbeddingError, LiteLLMEmbedder, MiniLMEmbedder, TestEmbedder, default_embedder
    from ace.llm import LiteLLMModel, LocalModel, ModelRequestError, RoleSettings, infer_model
    from ace.observability import configure_observability
    from ace.reflector.recursive import RecursiveConfig, RecursiveReflector
    from ace.reflector.reflection import Reflection, SkillTag
    from ace.reflector.simple import Reflector, ReflectorResult, SimpleReflector, make_reflector
    from ace.retrieval.top_k import retrieve_top_k
    from ace.skill_manager.deps import SMSettings
    from ace.skill_manager.manager import SkillManager, SMResult

try:
    __version__ = version("agentic-context-engine")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

_LAZY: dict[str, str] = {
    "SimilarPair": "ace.deduplication.detector",
    "find_similar_pairs": "ace.deduplication.detector",
    "Embedder": "ace.embeddings",
    "EmbeddingError": "ace.embeddings",
    "LiteLLMEmbedder": "ace.embeddings",
    "MiniLMEmbedder": "ace.embeddings",
    "TestEmbedder": "ace.embeddings",
    "default_embedder": "ace.embeddings",
    "Reflection": "ace.reflector.reflection",
    "SkillTag": "ace.reflector.reflection",
    "Reflector": "ace.reflector.simple",
    "ReflectorResult": "ace.reflector.simple",
    "SimpleReflector": "ace.reflector.simple",
    "make_reflector": "ace.reflector.simple",
    "RecursiveConfig": "ace.reflector.recursive",
    "RecursiveReflector": "ace.reflector.recursive",
    "SMResult": "ace.skill_manager.manager",
    "SMSettings": "ace.skill_manager.deps",
    "SkillManager": "ace.skill_manager.manager",
    "render_skills_xml": "ace.core.rendering",
    "retrieve_top_k": "ace.retrieval.top_k",
    "LiteLLMModel": "ace.llm",
    "LocalModel": "ace.llm",
    "ModelRequestError": "ace.llm",
    "RoleSettings": "ace.llm",
    "infer_model": "ace.llm",
    "configure_observability": "ace.observability",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
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
    "MissingExtraError",
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
