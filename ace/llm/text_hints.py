"""`Prose` and `Label`: string types whose JSON schema tells the embedded model's decoder what they hold.

Hosted models read the same schema without the hint; the local decoder turns it into a pattern (`TEXT_HINT`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ace.llm._local_format import TEXT_HINT, TEXT_START

__all__ = ["AgentProse", "CauseProse", "Label", "Prose", "RemedyProse"]

Prose = Annotated[str, Field(json_schema_extra={TEXT_HINT: "prose"})]
"""Sentences: a reflection field, a skill's issue or insight, a reason."""
AgentProse = Annotated[str, Field(json_schema_extra={TEXT_HINT: "prose", TEXT_START: "The agent"})]
"""Sentences about what the agent did (a reflection's `error_identification`)."""
CauseProse = Annotated[str, Field(json_schema_extra={TEXT_HINT: "prose", TEXT_START: "This happened because"})]
"""Sentences on why (a reflection's `root_cause_analysis`)."""
RemedyProse = Annotated[str, Field(json_schema_extra={TEXT_HINT: "prose", TEXT_START: "The agent should"})]
"""Sentences on what to do instead (a reflection's `correct_approach`)."""
Label = Annotated[str, Field(json_schema_extra={TEXT_HINT: "label"})]
"""One short keyword such as `cabin_class`."""
