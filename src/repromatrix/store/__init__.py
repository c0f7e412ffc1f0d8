"""The results store: ``record`` (the frozen ``Result`` and its migrations), ``lines`` (the
one parser), ``reader`` (the one order, conflict rule and history), ``index`` (SQLite beside
the JSONL), ``results`` (appending under a lock) and ``merge`` (stores into one)."""
