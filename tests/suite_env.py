"""The environment the whole suite's settings are read with, set before pytest-django sets Django up (loaded by
``-p tests.suite_env`` in pyproject.toml; tests/conftest.py is imported only after the settings were read).

The suite is written against the seed's five files; tests of the openclaw profile (the default) set it themselves.
The API's schemas are built once for the profile the settings name (a correction's ``target_file`` is an enum of
its files), so the profile must be the suite's from the start. Servers and workers the tests start inherit it.
"""

import os

os.environ["WORKSPACE_PROFILE"] = "seed"
