"""Learning from feedback (seed 002): thumbs-up/down in, audited memory items and rules out.

- ``feedback``: the feedback door (``receive_feedback``, ``apply_feedback``): idempotency, the memory guard and
  the rule guard, shadow mode, failing open;
- ``text``: what the guards read in a text (phrases, boilerplate, the memory candidate's quality score);
- ``memory``: the memory guard's candidate fact of a turn and its five conditions, the hand-off to the guardian;
- ``rules``: a negative feedback's reason as a rule (type, priority, confidence, subject, stance, conflicts);
- ``actions``: hits and operator actions (suppress, archive, reactivate);
- ``decay``: the daily decay, expiry, archiving and caps; ``metrics``: counts for the API and the admin;
- ``failures``: errors the guardrails failed open on; ``ratelimit``: the feedback door's rate limits.
"""

# The project of a feedback that names none.
DEFAULT_PROJECT = "default"
