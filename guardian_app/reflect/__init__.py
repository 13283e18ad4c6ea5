"""Reflect: facts, opinions, entity pages, projection, reports and skills, with resumable checkpoints."""
