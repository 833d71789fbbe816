"""The agent machinery the reflector and the skill manager share: a budgeted, self-compacting tool-calling
session, the repeat guard, and instrumentation."""
