"""Skillbook versions: a store folder of immutable `versions/NNNN/` and an atomic `current` pointer.

```python
store = SkillbookStore.open_or_create("prod-store")
store.publish("results/e2e/run_0123456789ab", produced_by=ProducedBy(kind="run"), ungated_reason="first version")
store.load()               # the current version's skillbook
store.rollback()           # current -> its parent
```
"""

from ace.integrations.store_format import StoreFormatError, is_store
from ace_eval.store._diff import SkillbookDiff, SkillChange, diff_skillbooks
from ace_eval.store._model import ProducedBy, StoreProblem, Version, VersionRecord
from ace_eval.store._origin import StoreOrigin, resolve_skillbook, store_origin
from ace_eval.store._source import PublishSource, read_source
from ace_eval.store._store import SkillbookStore, StoreBusyError

__all__ = [
    "ProducedBy",
    "PublishSource",
    "SkillChange",
    "SkillbookDiff",
    "SkillbookStore",
    "StoreBusyError",
    "StoreFormatError",
    "StoreOrigin",
    "StoreProblem",
    "Version",
    "VersionRecord",
    "diff_skillbooks",
    "is_store",
    "read_source",
    "resolve_skillbook",
    "store_origin",
]
