"""`Prose` and `Label`: string types whose JSON schema tells the embedded model's decoder what they hold.

Hosted models read the same schema without the hint; the local decoder turns it into a pattern (`TEXT_HINT`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ace.llm._local_format import TEXT_HINT

__all__ = ["Label", "Prose"]

Prose = Annotated[str, Field(json_schema_extra={TEXT_HINT: "prose"})]
"""Sentences: a reflection field, a skill's issue or insight, a reason."""
Label = Annotated[str, Field(json_schema_extra={TEXT_HINT: "label"})]
"""One short keyword such as `cabin_class`."""
