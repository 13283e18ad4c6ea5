"""supervisord's event listener for ``make run``: a process that cannot be kept running stops the whole run.

supervisord (supervisord.conf) restarts the web server or the worker whenever one exits; one that exits again and
again within its ``startsecs`` is retried with a growing back-off and, after ``startretries`` tries, left in the
FATAL state. This listener receives that event and, rather than leave the run half up (the web answering 201
while no worker decides a turn), writes which process failed to ``$REFLECTION_RUN_FAILED`` and asks supervisord to
shut everything down; the Makefile then exits non-zero with the message.

Run by path (``python reflection_site/supervision.py``), so it imports neither Django nor Celery. The protocol is
supervisord's: ``READY`` on stdout, a header line and a payload on stdin, ``RESULT 2\\nOK`` on stdout.
"""

from __future__ import annotations

import os
import signal
import sys


def _read_event(stdin: object) -> tuple[dict[str, str], dict[str, str]]:
    header = dict(token.split(":", 1) for token in stdin.readline().split())  # type: ignore[attr-defined]
    payload = stdin.read(int(header["len"]))  # type: ignore[attr-defined]
    body = dict(token.split(":", 1) for token in payload.split("\n", 1)[0].split())
    return header, body


def main() -> None:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))  # supervisord stopping: nothing to clean up.
    failed_marker = os.environ.get("REFLECTION_RUN_FAILED", "")
    while True:
        sys.stdout.write("READY\n")
        sys.stdout.flush()
        header, body = _read_event(sys.stdin)
        if header.get("eventname") == "PROCESS_STATE_FATAL":
            name = body.get("processname", "?")
            message = (
                f"make run: the {name} process exited on every start ({body.get('from_state', '')} -> FATAL);"
                " stopping every process. See its log lines above."
            )
            sys.stderr.write(f"\n*** {message}\n\n")
            sys.stderr.flush()
            if failed_marker:
                with open(failed_marker, "w") as marker:
                    marker.write(message + "\n")
            os.kill(os.getppid(), signal.SIGTERM)  # supervisord: stop every process and exit.
        sys.stdout.write("RESULT 2\nOK")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
