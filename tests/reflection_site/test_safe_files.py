"""reflection_site.safe_files: what the gate and the workspace read, never through a link (issue 20)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from reflection_site.safe_files import read_text


def test_a_regular_file_is_read_and_a_missing_one_is_none(tmp_path: Path) -> None:
    (tmp_path / "bank").mkdir()
    (tmp_path / "bank" / "world.md").write_bytes("# World\nBerlin 柏林\n".encode() + b"\xff")
    assert read_text(tmp_path, "bank/world.md") == "# World\nBerlin 柏林\n\ufffd"  # An invalid byte, replaced.
    assert read_text(tmp_path, "USER.md") is None
    assert read_text(tmp_path, "missing/USER.md") is None


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (lambda root: (root / "USER.md").symlink_to(root / "elsewhere.md"), "a symbolic link"),
        (lambda root: os.mkfifo(root / "USER.md"), "a FIFO (named pipe)"),
        (lambda root: (root / "USER.md").mkdir(), "a folder"),
        (lambda root: os.link(root / "elsewhere.md", root / "USER.md"), "a hard link (2 names share its content)"),
    ],
)
def test_anything_but_a_regular_file_of_its_own_is_refused_with_what_was_found(tmp_path: Path, make, found) -> None:
    (tmp_path / "elsewhere.md").write_text("secret\n")
    make(tmp_path)
    with pytest.raises(OSError) as caught:
        read_text(tmp_path, "USER.md")
    assert caught.value.errno == errno.EPERM and caught.value.strerror == found


def test_a_linked_folder_on_the_way_is_refused_and_named(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "world.md").write_text("secret\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "bank").symlink_to(outside)
    with pytest.raises(OSError) as caught:
        read_text(root, "bank/world.md")
    assert caught.value.errno == errno.EPERM and caught.value.strerror == "inside bank/, which is a symbolic link"
