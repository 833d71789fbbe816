"""Models: a model string to a pydantic-ai `Model`, through litellm in-process or the embedded offline model.

```python
from ace.llm import infer_model

model = infer_model("bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0", role="skill_manager")
offline = infer_model(None)  # ACE_SKILL_MANAGER_MODEL / ACE_MODEL if set, else SmolLM2 via llama.cpp
```
Importing this package imports neither litellm nor llama_cpp; each is imported by the first request that needs it.
"""

from ace.llm._errors import LocalModelUnavailableError, ModelConfigError, ModelRequestError
from ace.llm._local_format import DECODE_REQUIRED, TEXT_HINT
from ace.llm.litellm_model import LiteLLMModel, import_litellm
from ace.llm.local import DEFAULT_LOCAL_MAX_TOKENS, LOCAL_MODEL_NAME, LocalModel, find_smollm2_gguf
from ace.llm.retry import RetryPolicy, call_with_retries, is_retryable, retry_after_seconds
from ace.llm.routing import LOCAL_ALIASES, infer_model, to_litellm_string
from ace.llm.settings import ROLES, Role, RoleSettings, role_settings
from ace.llm.text_hints import Label, Prose

__all__ = [
    "DECODE_REQUIRED",
    "DEFAULT_LOCAL_MAX_TOKENS",
    "LOCAL_ALIASES",
    "LOCAL_MODEL_NAME",
    "ROLES",
    "TEXT_HINT",
    "Label",
    "LiteLLMModel",
    "LocalModel",
    "LocalModelUnavailableError",
    "ModelConfigError",
    "ModelRequestError",
    "Prose",
    "RetryPolicy",
    "Role",
    "RoleSettings",
    "call_with_retries",
    "find_smollm2_gguf",
    "import_litellm",
    "infer_model",
    "is_retryable",
    "retry_after_seconds",
    "role_settings",
    "to_litellm_string",
]
