"""tau2's own CLI with ACE's agent registered: `python -m ace_eval.benchmarks.tau2 run --agent ace_agent ...`."""

from __future__ import annotations

from loguru import logger

from ace_eval.benchmarks.tau2.agent import register_ace_agent


def main() -> None:
    """Register `ace_agent`, then hand the command line to `tau2.cli.main`."""
    register_ace_agent()
    logger.enable("tau2")  # `_tau2` silences tau2's step logs for library use; its CLI sets its own level
    from tau2.cli import main as tau2_main  # type: ignore[import-untyped,import-not-found,unused-ignore]

    tau2_main()


if __name__ == "__main__":
    main()
