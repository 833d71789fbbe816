"""One tool call's span and bookkeeping: the `ace.*` attributes, and what the call applied or had refused."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.trace import Span
from pydantic_ai import ModelRetry

from ace.core.insight_source import OperationType
from ace.core.skill import Skill
from ace.exceptions import SkillbookError
from ace.observability import AttributeInput, ace_span
from ace.skill_manager.deps import AppliedOperation, Refusal, SMDeps, ToolName

__all__ = ["applied", "content", "tool_call"]


@contextmanager
def tool_call(
    deps: SMDeps,
    tool: ToolName,
    attributes: Mapping[str, AttributeInput],
    content: Mapping[str, AttributeInput],
) -> Iterator[Span]:
    """The tool's span; a refused call (`SkillbookError` or `ModelRetry`) is logged and sent back as a retry."""
    attrs = {"ace.tool": tool, **attributes, **(content if deps.settings.record_content else {})}
    with ace_span(tool, attrs, expected=(ModelRetry,)) as span:
        try:
            yield span
        except SkillbookError as e:
            _refused(deps, span, tool, str(e))
            raise ModelRetry(str(e)) from None
        except ModelRetry as e:
            _refused(deps, span, tool, e.message)
            raise


def _refused(deps: SMDeps, span: Span, tool: ToolName, reason: str) -> None:
    deps.refusals.append(Refusal(tool=tool, reason=reason))
    span.set_attribute("ace.result", "refused")
    if deps.settings.record_content:
        span.set_attribute("ace.refusal", reason)


def applied(deps: SMDeps, span: Span, tool: ToolName, op: OperationType, skill: Skill) -> None:
    """Record a mutation the call applied (the skill's new version counts as seen)."""
    deps.applied.append(AppliedOperation(tool=tool, operation_type=op, skill_id=skill.id))
    deps.saw([skill])
    span.set_attribute("ace.skill_id", skill.id)
    span.set_attribute("ace.result", "ok")


def content(
    *,
    issue: str | None = None,
    insight: str | None = None,
    keywords: list[str] | None = None,
    reason: str | None = None,
    query: str | None = None,
) -> dict[str, AttributeInput]:
    """Attributes carrying the model's text, recorded only when the user opted in to content."""
    return {
        "ace.issue": issue,
        "ace.insight": insight,
        "ace.keywords": None if keywords is None else [str(k) for k in keywords],
        "ace.reason": reason,
        "ace.query": query,
    }
