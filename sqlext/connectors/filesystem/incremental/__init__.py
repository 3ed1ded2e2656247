"""Incremental reads (Paimon's ``incremental-between-timestamp``): the rows a table's commits made visible in a
window of time, each row once. :mod:`.window` is the option's value, :mod:`.history` what the commit log says
about every data file (when it was committed, what replaced it), :mod:`.plan` which files (or which rows of
which files) a window reads, or why the log cannot answer it. May import the commit log and the connector's
modules; the read itself is :mod:`sqlext.connectors.filesystem.source`'s. See docs/incremental-reads.md."""
