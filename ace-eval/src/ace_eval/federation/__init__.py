"""Federation: skills that hold in several projects become everyone's after a person approves; contradictions
revoke them. A hub is a folder (`ace_eval.federation._hub` documents its layout).

```python
hub = Hub("team-hub")
push(hub, Path("airline/skillbook.json"), project="airline", embedder=embedder)
read_state(hub, embedder).to_json()          # {"clusters": [...]}
promote(hub, None, by="ana", reason="holds in three domains", embedder=embedder)
pull(hub, Path("telecom/skillbook.json"), embedder=embedder)
```
"""

from ace_eval.federation._actions import PullResult, PushResult, promote, pull, push, reject, revoke
from ace_eval.federation._clusters import Cluster, find_clusters
from ace_eval.federation._contribution import content_hash
from ace_eval.federation._hub import HUB_ENV, JOURNAL_FIELDS, FederationError, Hub, Policy, resolve_hub
from ace_eval.federation._state import GlobalSkill, HubState, read_state

__all__ = [
    "HUB_ENV",
    "JOURNAL_FIELDS",
    "Cluster",
    "FederationError",
    "GlobalSkill",
    "Hub",
    "HubState",
    "Policy",
    "PullResult",
    "PushResult",
    "content_hash",
    "find_clusters",
    "promote",
    "pull",
    "push",
    "read_state",
    "reject",
    "resolve_hub",
    "revoke",
]
