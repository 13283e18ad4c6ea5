"""``sharegpt``: ``{"conversations": [{"from": "system"|"human"|"gpt", "value"}]}``: the instruction as ``system``,
then the user's and the agent's messages alternating as ``human`` and ``gpt``; the last ``gpt`` message also
carries ``memory_gate_decision`` and ``candidate_fact``, as in the seed's example."""

from __future__ import annotations

from typing import Any

from dataset_app.exporters.examples import Example, example_of, gate_case
from dataset_app.exporters.registry import register
from dataset_app.exporters.rows import Row
from dataset_app.exporters.writer import Writer


def sharegpt_turns(content: dict[str, Any], ex: Example) -> list[tuple[str, str]]:
    """The chat of a sample as alternating ``human``/``gpt`` values, oldest first, ending with ``gpt``.

    A gate sample's chat is its conversation (the context window, then the turn: user message and agent
    reply), as in the seed's example; consecutive messages of one speaker are joined by a blank line so the
    roles alternate, and a turn without an agent reply ends on an empty ``gpt``. A guardian sample's chat is
    its question and the right answer."""
    if ex.stage != "gate":
        return [("human", ex.input), ("gpt", ex.output_text)]
    case = gate_case(content)
    if case is None:  # pragma: no cover - example_of returned a gate example, so gate_case has one too
        return [("human", ex.input), ("gpt", ex.output_text)]
    messages = [("human" if role == "user" else "gpt", text) for role, text in case.window]
    messages += [("human", case.user_message), ("gpt", case.agent_reply)]
    turns: list[tuple[str, str]] = []
    for speaker, text in messages:
        if not turns and speaker == "gpt":
            continue  # a chat starts with the human
        if turns and turns[-1][0] == speaker:
            turns[-1] = (speaker, turns[-1][1] + "\n\n" + text if text else turns[-1][1])
        else:
            turns.append((speaker, text))
    return turns


@register
class ShareGPTWriter(Writer):
    """``system`` (the instruction), then ``human``/``gpt`` alternating; the last ``gpt`` carries the gate's
    decision and fact as in the seed's example. Every field is a string in every row (an absent fact is
    ``""``), so every file of an export has one schema whatever samples it holds."""

    name = "sharegpt"
    label = "ShareGPT"
    order = 2

    def record(self, row: Row) -> Any:
        ex = example_of(row.content)
        if ex is None:
            return None
        turns = sharegpt_turns(row.content, ex)
        conversations: list[dict[str, str]] = [{"from": "system", "value": ex.system}]
        conversations += [{"from": speaker, "value": text} for speaker, text in turns[:-1]]
        conversations.append(
            {
                "from": "gpt",
                "value": turns[-1][1],
                "memory_gate_decision": ex.decision if ex.stage == "gate" else "",
                "candidate_fact": ex.fact or "",
            }
        )
        return {"conversations": conversations}
