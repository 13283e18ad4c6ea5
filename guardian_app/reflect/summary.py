"""Reflect's LLM summary of an entity page (prompt ``guardian_app/prompts/reflect-v1.*``): statements that cite
the facts they come from; a statement the LLM cannot source is dropped."""

from __future__ import annotations

import json
from typing import Any

from guardian_app.reflect.facts import Fact, exclusion_reason
from guardian_app.reflect.pages import Statement
from reflection_site import llm
from reflection_site.prompts import load_prompt

PROMPT_VERSION = "reflect-v1"
MAX_STATEMENTS = 6


def build_messages(entity: str, page: str | None, facts: list[Fact]) -> list[dict[str, str]]:
    ordered = sorted(facts, key=lambda f: (-f.date.toordinal(), f.source))
    lines = "\n".join(
        json.dumps(
            {"source": f.source, "date": f.date.isoformat(), "kind": f.kind, "content": f.content}, ensure_ascii=False
        )
        for f in ordered
    )
    prompt = load_prompt("guardian_app", PROMPT_VERSION)
    return prompt.messages(user={"entity": entity, "page": page or "(no page yet)", "facts": lines})


def _sourced(items: Any, key: str, known: set[str]) -> list[Statement]:
    """Statements whose sources are all among the facts' (unsourced, unsafe or malformed ones dropped)."""
    out: list[Statement] = []
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict):
            continue
        text = " ".join(str(item.get(key) or "").split())[:600]
        sources = item.get("sources")
        if not text or not isinstance(sources, list):
            continue
        cited = tuple(dict.fromkeys(str(s).strip() for s in sources if str(s).strip() in known))
        if not cited or exclusion_reason(text) is not None:
            continue
        out.append(Statement(text, cited))
    return out


def summarise_with_llm(
    entity: str, page: str | None, facts: list[Fact]
) -> tuple[list[Statement], list[Statement], str]:
    """(summary statements, MEMORY.md proposals, model) from the LLM. Raises the LLM client's errors."""
    reply = llm.complete_json(build_messages(entity, page, facts))
    known = {f.source for f in facts}
    summary = _sourced(reply.data.get("summary"), "text", known)[:MAX_STATEMENTS]
    proposals = _sourced(reply.data.get("memory_proposals"), "fact", known)[:3]
    return summary, proposals, reply.model
