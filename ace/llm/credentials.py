"""What a litellm model string needs before a request can succeed, checked without sending one.

`provider_of` refuses a string litellm cannot route (`foo/bar`); `check_model_name` refuses a model name one
typo away from a model of litellm's offline list (`openai/gpt-4.1-mnii`: did you mean `openai/gpt-4.1-mini`?);
`missing_credentials` names the environment variables a provider still needs (AWS providers ask botocore's whole
credential chain: variables, profiles, SSO, instance roles). They import litellm (about 4 s the first time).
"""

from __future__ import annotations

import difflib
import importlib

from ace.llm._errors import ModelConfigError
from ace.llm.litellm_model import import_litellm
from ace.llm.routing import suggest_model

__all__ = ["check_model_name", "missing_credentials", "provider_of"]

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


_CLOSE = 0.9
"""How alike a name must be to a listed one to be taken for its typo (`gpt-4.1-mnii` / `gpt-4.1-mini`: 0.92)."""


def check_model_name(model: str) -> None:
    """Refuse (`ModelConfigError`) a model name litellm's model list (`litellm.model_cost`, shipped with litellm:
    no network) does not hold when it is close to one of the provider's listed names: a typo, reported as such
    rather than as a missing key. A name close to none, or differing from the closest in digits only
    (`claude-haiku-4-6`), passes: a model newer than the list."""
    litellm = import_litellm()
    provider = provider_of(model)
    name = str(litellm.get_llm_provider(model)[0])
    listed: dict[str, set[str]] = {}  # listed name -> the providers listing it
    for key, info in litellm.model_cost.items():
        owner = str(info.get("litellm_provider") or "") if isinstance(info, dict) else ""
        listed.setdefault(key.removeprefix(f"{owner}/"), set()).add(owner)
    if name in listed or provider in _NO_STATIC_CHECK:
        return
    same = [n for n, owners in listed.items() if any(o == provider or o.startswith(f"{provider}_") for o in owners)]
    close = difflib.get_close_matches(name, same, n=1, cutoff=_CLOSE)
    if close and _letters(close[0]) != _letters(name):  # differing digits only: a newer version, not a typo
        raise ModelConfigError(
            f"unknown model {model!r}: did you mean '{provider}/{close[0]}'? (litellm's model list, checked "
            "offline; for a model newer than the list, pass --no-preflight)"
        )


def _letters(name: str) -> str:
    return "".join(c for c in name if not c.isdigit())


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
