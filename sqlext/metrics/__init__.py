"""What a process running inserts shows while it runs: the Prometheus endpoint (``/metrics``) and the live
status page (``/``) on ``spark.sqlext.metrics.port``.

Its own layer, between ``spark/`` (which starts it when a session is extended) and ``jobs/``: it may
import ``jobs/`` (the status of an insert, the timeline picture) and everything below; the commit path
and the metastore client reach it only through the listeners of :mod:`sqlext.listeners`.
"""

from sqlext.metrics.server import MetricsServer, running_server, serve, serve_configured

__all__ = ["MetricsServer", "running_server", "serve", "serve_configured"]
