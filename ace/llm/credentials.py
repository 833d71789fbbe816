"""What a litellm model string needs before a request can succeed, checked without sending one.

`provider_of` refuses a string litellm cannot route (`foo/bar`); `missing_credentials` names the environment
variables a provider still needs (AWS providers ask botocore's whole credential chain: variables, profiles,
SSO, instance roles). Both import litellm (about 4 s the first time).
"""

from __future__ import annotations

import importlib

from ace.llm._errors import ModelConfigError
from ace.llm.litellm_model import import_litellm
from ace.llm.routing import suggest_model

__all__ = ["missing_credentials", "provider_of"]

_AWS_PROVIDERS = frozenset({"bedrock", "sagemaker", "sagemaker_chat"})
_NO_STATIC_CHECK = frozenset({"ollama", "ollama_chat", "vertex_ai", "vertex_ai_beta", "hosted_vllm", "lm_studio"})
"""Providers whose credentials or endpoint have defaults litellm's environment check does not see (a local server,
Google's application-default credentials): only a request tells."""


def provider_of(model: str) -> str:
    """The litellm provider of `model` (`openai`, `bedrock`, ...); `ModelConfigError` when litellm cannot route it."""
    litellm = import_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model)
    except Exception as e:  # litellm raises BadRequestError("LLM Provider NOT provided ...")
        if (guess := suggest_model(model)) is not None:
            raise ModelConfigError(
                f"litellm does not know the provider of {model!r}: did you mean {guess!r}?"
            ) from None
        raise ModelConfigError(
            f"litellm does not know the provider of {model!r} ({type(e).__name__}): write it as 'provider/model', "
            "e.g. 'openai/gpt-4.1-mini', 'anthropic/claude-haiku-4-5', "
            "'bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0' (providers: https://docs.litellm.ai/docs/providers)"
        ) from None
    return str(provider)


def missing_credentials(model: str) -> list[str]:
    """The environment variables `model`'s provider needs and does not have (empty: nothing known to be missing)."""
    provider = provider_of(model)
    if provider in _NO_STATIC_CHECK:
        return []
    if provider in _AWS_PROVIDERS:
        aws = _missing_aws_credentials()
        if aws is not None:
            return aws
    result = import_litellm().validate_environment(model=model)
    if result.get("keys_in_environment", True):
        return []
    return [str(key) for key in result.get("missing_keys") or []]


def _missing_aws_credentials() -> list[str] | None:
    """`[]` when botocore finds credentials in its chain, else the variables to set; `None`: no botocore."""
    try:
        session = importlib.import_module("botocore.session")  # untyped; only the credential chain is needed
    except ImportError:
        return None
    if session.Session().get_credentials() is not None:
        return []
    return ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
