"""Change-event formats (``debezium-json``, ``canal-json``, ``maxwell-json``) as sources and in inserts:
:mod:`.decoding` turns events into rows with a row kind (``+I``, ``-U``, ``+U``, ``-D``), :mod:`.files` reads
them from a filesystem table, :mod:`.planning` decides which INSERT may carry a changelog. Their declarations
are :mod:`sqlext.catalog.changelog_formats`, the writer :mod:`sqlext.catalog.changelog_encoding`. May import
catalog, sql and the shared core, as the connectors do."""
