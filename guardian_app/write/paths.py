"""The names and paths of the workspace's memory files: lookup by name, never a join.

A name from a client or an LLM is looked up in the workspace profile's files
(``reflection_site.memory_files.active().files``), never joined to a path. Reflect's pages
(``bank/entities/<Entity>.md``, ``bank/opinions.md``, ``bank/world.md``, ``bank/experience.md``) are a second,
code-generated set: ``bank_page(entity)`` makes an entity's page name from a slug, and any bank name must
match ``BANK_PAGE_PATTERN`` exactly (no other folder, no dot segment, no slash in the entity).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from django.conf import settings

from guardian_app.errors import UnknownFile
from guardian_app.models import BANK_PAGE_PATTERN, DAILY_LOG_PATTERN
from reflection_site import memory_files

__all__ = ["bank_dir", "bank_page", "canonical_name", "path_for"]

_BANK_PAGE = re.compile(BANK_PAGE_PATTERN)
_DAILY_LOG = re.compile(DAILY_LOG_PATTERN)


def bank_page(entity: str) -> str:
    """``bank/entities/<slug>.md`` for an entity name: the only way an entity's page name is made.

    The slug keeps ASCII letters, digits, ``_`` and ``-`` (accents dropped, anything else a hyphen), at
    most 64 characters; a name that loses letters on the way (Chinese, say) gets a short hash of itself
    appended so that two such names never share a page. UnknownFile for a name without a letter or digit.
    """
    name = unicodedata.normalize("NFKC", str(entity or "")).strip().lstrip("@")
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", ascii_name)
    slug = re.sub(r"-{2,}", "-", slug).strip("-_")
    lost = sum(1 for ch in name if ch.isalnum()) > sum(1 for ch in ascii_name if ch.isalnum())
    if lost or not slug:
        digest = hashlib.sha256(name.casefold().encode()).hexdigest()[:8]
        slug = f"{slug[:55]}-{digest}" if slug else digest
    slug = slug[:64].rstrip("-_")
    page = f"bank/entities/{slug}.md"
    if not any(ch.isalnum() for ch in name) or not _BANK_PAGE.fullmatch(page):
        raise UnknownFile(str(entity))
    return page


def canonical_name(name: object) -> str:
    """The memory file or bank page called ``name``; UnknownFile for anything else.

    A bank name is accepted only when it matches ``BANK_PAGE_PATTERN`` exactly.
    """
    found = name if isinstance(name, str) and name in memory_files.active().files else None
    if found is None and isinstance(name, str) and (_BANK_PAGE.fullmatch(name) or _DAILY_LOG.fullmatch(name)):
        found = name  # a daily log only as reflect names it (memory/YYYY-MM-DD.md), for its inferred Retain bullets
    if found is None:
        raise UnknownFile(str(name))
    return found


def path_for(name: str) -> Path:
    """The path of one of the profile's memory files at the root of WORKSPACE_DIR, or of a bank page under
    the profile's ``bank/`` folder (``bank/``, or ``memory/bank/`` where OpenClaw indexes it); UnknownFile
    (404) for any other name. A bank path is built from the parts of the checked name, and never through a
    symbolic link to a folder outside the workspace."""
    name = canonical_name(name)
    root = Path(settings.WORKSPACE_DIR)
    if name in memory_files.active().files:
        return root / name
    if _DAILY_LOG.fullmatch(name):
        if (root / "memory").is_symlink():
            raise UnknownFile(f"{name} (memory/ is a symbolic link)")
        return root / name
    match = _BANK_PAGE.fullmatch(name)
    assert match is not None
    bank = bank_dir()
    if bank.is_symlink() or (bank / "entities").is_symlink() or bank.parent.is_symlink():
        raise UnknownFile(f"{name} (bank/ is a symbolic link)")
    return bank / f"{match.group(1)}.md"  # group 1 is "opinions" or "entities/<slug>"


def bank_dir(root: Path | None = None) -> Path:
    """The folder that holds reflect's pages in this workspace profile (``bank/`` or ``memory/bank/``)."""
    return Path(root or settings.WORKSPACE_DIR) / memory_files.active().pages_dir / "bank"
