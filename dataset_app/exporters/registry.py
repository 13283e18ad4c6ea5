"""The export formats: every ``Writer`` in ``exporters/formats/`` registers itself here by its ``name``.

``DatasetExport.ExportFormat`` (the model's choices and check constraint), the API's ``ExportIn.format``, the CLI's
``--format`` and the admin's form are built from this registry, so a new format is one module in
``exporters/formats/`` and its test (the model's check constraint then takes a migration, ``makemigrations``).
Nothing here imports ``dataset_app.models``: the models import it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from dataset_app.exporters.writer import Writer

FORMATS_PACKAGE = "dataset_app.exporters.formats"

_WRITERS: dict[str, type[Writer]] = {}


def register(cls: type[Writer]) -> type[Writer]:
    """Class decorator: make ``cls`` the writer of the export format ``cls.name``."""
    known = _WRITERS.get(cls.name)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"Two writers of the export format {cls.name!r}: {known.__module__}, {cls.__module__}")
    _WRITERS[cls.name] = cls
    return cls


@functools.cache
def _load_formats() -> None:
    """Import every module of ``FORMATS_PACKAGE`` (by name: they import this module to register)."""
    package = importlib.import_module(FORMATS_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{FORMATS_PACKAGE}.{module.name}")


def writers() -> dict[str, type[Writer]]:
    """Every format's writer by name, in the formats' ``order``."""
    _load_formats()
    return dict(sorted(_WRITERS.items(), key=lambda item: (item[1].order, item[0])))


def format_names() -> tuple[str, ...]:
    return tuple(writers())


def format_choices() -> list[tuple[str, str]]:
    """(name, label) of every format: ``DatasetExport.ExportFormat``'s choices."""
    return [(name, cls.label) for name, cls in writers().items()]


def writer_class(name: str) -> type[Writer]:
    """The writer of the format ``name``; KeyError for an unknown one (``validate_export_options`` checks first)."""
    return writers()[name]
