"""Trace collections: a folder with `manifest.json` and `traces.jsonl` (one `Trace` per line).

The format is described in `docs/collection-format.md`. Reading validates everything and every error
(`CollectionError`) names the file, the line and the field; writing appends one fsynced line per trace so
a killed run keeps every finished trace.
"""

from __future__ import annotations

from ace_eval.collection.chat import (
    UNPARSED_ARGUMENTS,
    AssistantMessage,
    ChatMessage,
    ContentPart,
    SystemMessage,
    ToolCall,
    ToolCallFunction,
    ToolMessage,
    UserMessage,
    tool_arguments,
)
from ace_eval.collection.model import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_FILE,
    TRACES_FILE,
    CollectionCounts,
    CollectionError,
    CollectionManifest,
    Trace,
    count_traces,
)
from ace_eval.collection.read import iter_collection, read_collection, read_manifest
from ace_eval.collection.write import CollectionWriter, WriteMode, repair_collection, write_collection

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "TRACES_FILE",
    "UNPARSED_ARGUMENTS",
    "AssistantMessage",
    "ChatMessage",
    "CollectionCounts",
    "CollectionError",
    "CollectionManifest",
    "CollectionWriter",
    "ContentPart",
    "SystemMessage",
    "ToolCall",
    "ToolCallFunction",
    "ToolMessage",
    "Trace",
    "UserMessage",
    "WriteMode",
    "count_traces",
    "iter_collection",
    "read_collection",
    "read_manifest",
    "repair_collection",
    "tool_arguments",
    "write_collection",
]
