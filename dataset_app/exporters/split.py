"""The deterministic train/validation split.

Each sample goes to ``<name>-train`` or ``<name>-val`` by a hash of its id (``split_of``): re-exporting gives the
same split, and raising ``train_split`` only moves samples from validation to train. One exception keeps small
exports loadable: if every sample falls on one side (and ``train_split`` is below 1), the one nearest the boundary
goes to the other file (``Edges``). Evaluation uses the same split, so ``--split validation`` evaluates exactly what
a train export left out of training.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from dataset_app.exporters.writer import Writer

SPLITS = ("train", "validation")
SPLIT_SUFFIX = {"train": "train", "validation": "val"}


def split_point(sample_id: str) -> float:
    """Where a sample falls in [0, 1): CRC-32 of its id over 2**32. Uniform over ULIDs' random part, and
    cheap enough to run per row at export speed (nobody chooses ids to game the split)."""
    return zlib.crc32(sample_id.encode()) / 4294967296


def split_of(sample_id: str, train_split: float) -> str:
    """``"train"`` or ``"validation"``, from a hash of the id: the same sample always lands the same way."""
    return "train" if split_point(sample_id) < train_split else "validation"


class Edges:
    """The sample nearest the boundary on each side, held back while the export streams: if a small export leaves
    a split empty, it crosses over, so both files hold data (``datasets`` refuses an empty split)."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[float, bytes] | None] = {"train": None, "validation": None}

    def swap(self, split: str, point: float, line: bytes) -> bytes | None:
        """Hold ``line`` if it is nearer the boundary than the one held; the line to write now, if any."""
        held = self.held[split]
        if held is None or (point > held[0] if split == "train" else point < held[0]):
            self.held[split] = (point, line)
            return held[1] if held is not None else None
        return line

    def place(self, writers: Mapping[str, Writer], *, train_split: float) -> None:
        """Write the held-back samples: to their own split, unless the other split would stay empty (and this
        one keeps at least one sample, and the caller did not ask for everything in train with 1.0)."""
        edge = self.held
        for split, other in (("train", "validation"), ("validation", "train")):
            held = edge[split]
            if held is None:
                continue
            lonely = writers[other].out.count == 0 and edge[other] is None and writers[split].out.count >= 1
            target = other if lonely and 0 < train_split < 1 else split
            writers[target].add(held[1])
            if target != split:
                edge[split] = None
