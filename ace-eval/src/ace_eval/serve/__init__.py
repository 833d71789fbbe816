"""`ace-eval serve`: OpenTelemetry spans in over OTLP/HTTP, kept in a durable inbox under a skillbook store and
assembled into traces with the OTel importer's rules.

```python
app = ServeApp(ServeConfig(store=Path("prod-store")))
app.start()        # POST /v1/traces, POST /v1/feedback, GET /healthz, /v1/status, /metrics
app.stop()         # finish requests in flight, flush, checkpoint
```
"""

from ace_eval.serve._app import ServeApp, ServeConfig, is_loopback, refuse_exposed
from ace_eval.serve._assembly import Assembler, Feedback
from ace_eval.serve._inbox import Inbox, InboxFull
from ace_eval.serve._learn import LearnConfig, Learner
from ace_eval.serve._publish import PublishConfig, Publisher

__all__ = [
    "Assembler",
    "Feedback",
    "Inbox",
    "InboxFull",
    "LearnConfig",
    "Learner",
    "PublishConfig",
    "Publisher",
    "ServeApp",
    "ServeConfig",
    "is_loopback",
    "refuse_exposed",
]
