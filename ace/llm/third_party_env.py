"""What third-party packages may read from the environment at import: no `.env` file from an ancestor folder.

litellm, in its default `DEV` mode, and tau2 call python-dotenv's `load_dotenv()` when imported; it searches every
ancestor of the calling file's folder (site-packages, the virtual environment, `/tmp` for a venv under it...), so
whoever can write one of those folders could set `OPENAI_BASE_URL` and receive the user's requests, key included.
`litellm_defaults` puts litellm in `PRODUCTION` mode (no `.env` search) before it is imported, and `no_dotenv` turns
`load_dotenv` into a no-op while a package that calls it at import (tau2) is imported. Keys come from the real
environment, as they always did; a user who wants a `.env` file loads it explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["litellm_defaults", "no_dotenv"]


def litellm_defaults() -> None:
    """The environment litellm reads when imported: its bundled cost map (no download) and `PRODUCTION` mode (no
    `.env` search); a value the user set is kept."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")


@contextmanager
def no_dotenv() -> Iterator[None]:
    """python-dotenv's `load_dotenv` does nothing inside this block (a package importing it binds the no-op)."""
    try:
        import dotenv
    except ImportError:  # not installed: nothing can load a .env file
        yield
        return
    original = dotenv.load_dotenv

    def skipped(*args: object, **kwargs: object) -> bool:
        return True  # "found": tau2 warns when it finds none

    dotenv.load_dotenv = skipped
    try:
        yield
    finally:
        dotenv.load_dotenv = original
