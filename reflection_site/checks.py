"""System checks: a seed key that is read but deliberately not supported warns when it is set away from its default.

Each is listed with its reason in the README ("Seed keys not supported"): the decision row and the audit row are
the pipeline's hand-offs and its idempotency records (the guardian, the sweeps, rollback and the dataset read
them), and the snapshots are what "every state a file had can be recovered" rests on, so none can be turned off.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register

# setting -> (the value we always behave as, why it cannot be changed)
UNSUPPORTED: dict[str, tuple[Any, str]] = {
    "MEMORY_GATE_AUDITING_ENABLED": (
        True,
        "every gate decision is recorded: the decision row is what the guardian, the guardian sweep and the "
        "dataset read (MEMORY_GATE_STORE_RAW_LLM_RESPONSE=false keeps the raw reply out of it)",
    ),
    "WRITE_GUARDIAN_AUDITING_ENABLED": (
        True,
        "every write is audited: the audit is the guardian's idempotency record and what rollback reverts",
    ),
    "WRITE_GUARDIAN_STORE_FILE_SNAPSHOTS": (
        True,
        "snapshots are always stored: three-way rollback and recovering any earlier state of a file need them",
    ),
    "WRITE_GUARDIAN_MAX_SNAPSHOTS_PER_FILE": (
        100,
        "snapshots are never pruned (identical contents are stored once): pruning would make old writes "
        "impossible to roll back",
    ),
}


@register()
def unsupported_seed_keys(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    warnings = []
    for name, (value, why) in UNSUPPORTED.items():
        configured = getattr(settings, name, value)
        if configured != value:
            warnings.append(
                Warning(
                    f"{name}={configured!r} is not supported and has no effect: {why}.",
                    hint=f"Remove {name} from the environment (README, 'Seed keys not supported').",
                    id="reflection.W001",
                )
            )
    return warnings
