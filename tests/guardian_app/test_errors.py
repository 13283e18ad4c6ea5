"""Every error guardian_app defines stands under GuardianError (issue 20), so the API answers each in the
project's error shape and ``throws=(GuardianError,)`` keeps each out of a task's crash log."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import guardian_app
from guardian_app.errors import GuardianError


def test_every_exception_class_defined_in_guardian_app_is_a_guardian_error() -> None:
    defined = {}
    for module_info in pkgutil.walk_packages(guardian_app.__path__, prefix="guardian_app."):
        if ".migrations" in module_info.name or ".management" in module_info.name:
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                defined[f"{module.__name__}.{name}"] = value
    assert len(defined) >= 10  # The walk found the errors (UnknownFile, RollbackConflict, InvalidRecallQuery …).
    outside = sorted(name for name, cls in defined.items() if not issubclass(cls, GuardianError))
    assert outside == []
