"""Skills for one prompt within a token budget: hybrid search, then effectiveness, then the budget.

`retrieve_within_budget` takes the best `candidates` skills of `retrieve_top_k` for the query, drops those the
evidence says hurt more than they help (`harmful_count > helpful_count`), and keeps them in relevance order
while the whole block (`header`, the `<lessons>` element and the skills) fits `max_tokens`; a skill too long for
what is left is skipped, not cut. Tokens are counted by `count_tokens`: the cl100k tokenizer when tiktoken and its
vocabulary are installed (litellm brings both), else the UTF-8 bytes, which no byte-level tokenizer exceeds.

Each skill is a `<lesson>` element whose text is escaped (`<`, `>`, `&` and line breaks), so a learned skill cannot
close its element, forge another lesson or start a section of its own in the agent's instructions.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from ace.core.rendering import escape_text
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.exceptions import SkillbookError
from ace.retrieval.top_k import retrieve_top_k

__all__ = [
    "LESSONS_CLOSE",
    "LESSONS_OPEN",
    "count_tokens",
    "render_skill",
    "render_skill_list",
    "retrieve_within_budget",
    "utf8_bytes",
]

LESSONS_OPEN = "<lessons>"
LESSONS_CLOSE = "</lessons>"


def utf8_bytes(text: str) -> int:
    """`text`'s UTF-8 bytes: a count no byte-level BPE tokenizer exceeds (each token is one byte or more)."""
    return len(text.encode("utf-8", "surrogatepass"))


def count_tokens(text: str) -> int:
    """`text`'s tokens by the cl100k tokenizer when it is installed offline, else its UTF-8 bytes (never fewer)."""
    return _counter()(text)


_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (  # tiktoken_ext.openai_public.cl100k_base's
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)


@functools.lru_cache(maxsize=1)
def _counter() -> Callable[[str], int]:
    """The cl100k encoder's count, from the vocabulary file litellm ships (never downloaded), or `utf8_bytes`."""
    try:
        import tiktoken
    except ImportError:
        return utf8_bytes
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return utf8_bytes
    folder = Path(next(iter(spec.submodule_search_locations)), "litellm_core_utils", "tokenizers")
    try:  # the file tiktoken's cache names after the download's URL
        data = (folder / hashlib.sha1(_CL100K_URL.encode()).hexdigest()).read_bytes()
    except OSError:
        return utf8_bytes
    if hashlib.sha256(data).hexdigest() != _CL100K_SHA256:
        return utf8_bytes
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    encoding = tiktoken.Encoding(
        "cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 100257}
    )

    def tokens(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return tokens


def render_skill(skill: Skill) -> str:
    """One skill as a `<lesson>` element: id, keywords, issue, insight, each text escaped on one line."""
    lines = [
        f"<lesson id={quoteattr(skill.id)}>",
        f"<keywords>{escape_text(', '.join(skill.keywords))}</keywords>",
        f"<issue>{escape_text(skill.issue)}</issue>",
    ]
    if skill.insight:
        lines.append(f"<insight>{escape_text(skill.insight)}</insight>")
    lines.append("</lesson>")
    return "\n".join(lines)


def render_skill_list(skills: Sequence[Skill]) -> str:
    """Skills rendered one after the other, in the given order, inside one `<lessons>` element."""
    return "\n".join([LESSONS_OPEN, *(render_skill(s) for s in skills), LESSONS_CLOSE])


def retrieve_within_budget(
    skillbook: Skillbook,
    query: str,
    *,
    max_tokens: int,
    candidates: int = 20,
    embedder: Embedder | None = None,
    count_tokens: Callable[[str], int] = count_tokens,
    header: str = "",
) -> list[Skill]:
    """The most relevant helpful skills for `query` whose block (`header`, then `render_skill_list`) fits
    `max_tokens`.

    Raises `SkillbookError` for a budget below 1 and, like `retrieve_top_k`, for an empty query.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise SkillbookError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if len(skillbook) == 0:
        return []
    found = retrieve_top_k(skillbook, query, top_k=candidates, embedder=embedder)
    chosen: list[Skill] = []
    used = count_tokens(f"{header}\n" if header else "") + count_tokens(render_skill_list([]))
    for skill in found:
        if skill.harmful_count > skill.helpful_count:
            continue
        cost = count_tokens(render_skill(skill)) + 1  # and the newline before it
        if used + cost <= max_tokens:
            chosen.append(skill)
            used += cost
    return chosen
