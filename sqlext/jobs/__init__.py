"""Statements run as Spark queries: inserts (streaming and batch), lookup joins, their checkpoints, the
writer lease and claim, the commit audit and timeline. May import connectors, catalog, sql, io and the core."""
