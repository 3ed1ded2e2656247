"""The spark-submit driver: ``spark-submit [--conf spark.sqlext.*=...] "$(sqlext driver-path)" FILE.sql``.

It lives alone in its directory: spark-submit puts a script's directory first on ``sys.path``, where
sqlext's own modules (``types``) would shadow the standard library's.

Configured only by Spark conf: ``spark.sqlext.metastore.uris``, ``spark.sqlext.warehouse``,
``spark.sqlext.checkpoint.root``, and sqlext session options as ``spark.sqlext.session.<key>`` (for
example ``--conf spark.sqlext.session.execution.runtime-mode=batch``), applied before the file's own
``SET`` lines.
"""

from sqlext.spark.runner import submit_main

if __name__ == "__main__":
    submit_main()
