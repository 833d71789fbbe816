"""Settings of an `ace-eval e2e` run: command-line flag > environment variable > config file > built-in default.

`E2ESettings` is the resolved, checked result; `resolve_settings` applies the precedence; `load_config_file` reads
`ace-eval.toml` (its tables are documented in `ace_eval.e2e.config._file`). Every model defaults to `local`, the
embedded offline model (SmolLM2 for the LLM roles, MiniLM for embeddings).
"""

from ace_eval.e2e.config._file import CONFIG_FILE, load_config_file
from ace_eval.e2e.config._resolve import MODEL_ENV, SETTING_ENV, ignored_flags_note, resolve_settings
from ace_eval.e2e.config._settings import (
    DEFAULT_BENCHMARK,
    DEFAULT_MODEL,
    DEFAULT_OUTPUT_DIR,
    MODEL_ROLES,
    ConfigError,
    E2ESettings,
    ModelRole,
    ReflectorType,
    inapplicable_settings,
)

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_BENCHMARK",
    "DEFAULT_MODEL",
    "DEFAULT_OUTPUT_DIR",
    "MODEL_ENV",
    "MODEL_ROLES",
    "SETTING_ENV",
    "ConfigError",
    "E2ESettings",
    "ModelRole",
    "ReflectorType",
    "ignored_flags_note",
    "inapplicable_settings",
    "load_config_file",
    "resolve_settings",
]
