"""Dataset exports' writers and the nightly conversation export.

* ``registry``: the export formats, one ``Writer`` per module of ``formats/`` (``openai``, ``alpaca``,
  ``sharegpt``, ``raw``, ``csv``), each declaring its name, whether it reads full rows and its PII behaviour;
  ``DatasetExport.ExportFormat`` and the API's ``ExportIn.format`` are built from it.
* ``examples``: a sample's content as a training example (what the model saw, what it should have answered).
* ``writer``, ``rows``, ``files``, ``split``: what the formats share: buffered writing, rows streamed from the
  database, owner-only hashed files, the deterministic train/validation split.
* ``conversations``: ``conversations-YYYY-MM-DD.jsonl``, the nightly export of the day's turns, and its pruning.

Nothing here imports ``dataset_app.models`` (the models build their choices from the registry);
``dataset_app.exports`` records, runs and sweeps the ``DatasetExport`` jobs that use these writers.
"""
