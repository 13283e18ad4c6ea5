"""The log filter that keeps keys, tokens and secrets out of every log line.

Settings name it before the apps load, so it imports the detector on first use.
"""

from __future__ import annotations

import logging


class RedactSecrets(logging.Filter):
    _delegate: logging.Filter | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if RedactSecrets._delegate is None:
            from reflection_site.privacy import RedactingFilter

            RedactSecrets._delegate = RedactingFilter()
        return bool(RedactSecrets._delegate.filter(record))
