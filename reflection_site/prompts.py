"""The LLM prompts as versioned template pairs: ``<package>/prompts/<version>.system.txt`` and ``.user.txt``,
``string.Template`` text (``$fact``, ``$corrections``). Django-free.

Decided (issue 20): the gate, the guardian, reflect and skills each read their pair with a copy of the same
four lines; two kept the system prompt as plain text. Now both halves are templates: a system prompt without
placeholders renders as itself (``substitute`` with no values), so those two read the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, NamedTuple


class Prompt(NamedTuple):
    system: Template
    user: Template

    def messages(
        self, *, system: Mapping[str, Any] | None = None, user: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages, each template filled in (``substitute``: a missing value is a KeyError)."""
        return [
            {"role": "system", "content": self.system.substitute(system or {})},
            {"role": "user", "content": self.user.substitute(user or {})},
        ]


def prompts_dir(package: str | Path) -> Path:
    """The ``prompts/`` folder of an app package (``"guardian_app"``), or ``package`` itself when it is a path."""
    if isinstance(package, Path):
        return package
    return Path(str(resources.files(package))) / "prompts"


@lru_cache(maxsize=16)
def load_prompt(package: str | Path, version: str) -> Prompt:
    """The template pair ``version`` (``"guardian-v1"``) of ``package``; FileNotFoundError for an unknown one."""
    folder = prompts_dir(package)
    system = (folder / f"{version}.system.txt").read_text(encoding="utf-8")
    user = (folder / f"{version}.user.txt").read_text(encoding="utf-8")
    return Prompt(Template(system), Template(user))
