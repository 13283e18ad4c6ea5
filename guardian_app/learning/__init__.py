"""Learning from feedback: guardrails, decay of learned rules, rate limits."""
