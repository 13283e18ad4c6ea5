"""ULID primary keys, stored as 26-character text as the seed schema says."""

from ulid import ULID


def new_ulid() -> str:
    return str(ULID())
