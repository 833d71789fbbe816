"""`ace-eval serve`: OpenTelemetry spans in over OTLP/HTTP, kept in a durable inbox under a skillbook store and
assembled into traces with the OTel importer's rules.

```python
app = ServeApp(ServeConfig(store=Path("prod-store")))
app.start()        # POST /v1/traces, POST /v1/feedback, GET /healthz, /v1/status, /metrics
app.stop()         # finish requests in flight, flush, checkpoint
```

With `ServeConfig(learn=LearnConfig(...), publish=PublishConfig(...))` it also learns from the ready traces in a
process of its own (`ace_eval.serve._learning_process`: `ace_eval.serve._learn` there) and publishes the learned
skillbooks to the store from it (`ace_eval.serve._publish`).
"""

from ace_eval.serve._app import ServeApp, ServeConfig, is_loopback, refuse_exposed
from ace_eval.serve._assembly import Assembler, Feedback
from ace_eval.serve._inbox import Inbox, InboxFull
from ace_eval.serve._learn import LearnConfig, Learner
from ace_eval.serve._learning_process import LearningProcess, LearningStartError
from ace_eval.serve._publish import PublishConfig, Publisher
from ace_eval.serve._setup import (
    NOT_PUBLISHED_NOTE,
    learning_models,
    learning_settings,
    load_injections,
    publishing_config,
)

__all__ = [
    "NOT_PUBLISHED_NOTE",
    "Assembler",
    "Feedback",
    "Inbox",
    "InboxFull",
    "LearnConfig",
    "Learner",
    "LearningProcess",
    "LearningStartError",
    "PublishConfig",
    "Publisher",
    "ServeApp",
    "ServeConfig",
    "is_loopback",
    "learning_models",
    "learning_settings",
    "load_injections",
    "publishing_config",
    "refuse_exposed",
]
