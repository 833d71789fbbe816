"""A misspelt hosted model is caught offline against litellm's model list, with a did-you-mean; listed models,
models newer than the list and the design's Bedrock models pass."""

from __future__ import annotations

import pytest

from ace.llm import ModelConfigError
from ace.llm.credentials import check_model_name


@pytest.mark.parametrize(
    ("model", "meant"),
    [
        ("openai/gpt-4.1-mnii", "openai/gpt-4.1-mini"),
        ("openai/gpt-4o-mnii", "openai/gpt-4o-mini"),
        ("anthropic/claude-hiaku-4-5", "anthropic/claude-haiku-4-5"),
    ],
)
def test_a_typo_of_a_listed_model_is_named_with_the_model_meant(model: str, meant: str) -> None:
    with pytest.raises(ModelConfigError, match=f"unknown model '{model}': did you mean '{meant}'"):
        check_model_name(model)


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4.1-mini",
        "gpt-4o",
        "anthropic/claude-haiku-4-5",
        "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0",  # the design's smoke test
        "bedrock/openai.gpt-oss-120b-1:0",
        "anthropic/claude-haiku-4-6",  # a newer version: differs in digits only
        "openai/my-fine-tune-7",  # close to no listed name
        "ollama/llama3.2",  # a local server's models are its own
    ],
)
def test_listed_and_unlisted_models_pass(model: str) -> None:
    check_model_name(model)
