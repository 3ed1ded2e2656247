"""``sqlext gateway``: a HiveServer2-protocol endpoint whose sessions run sqlext statements.

Any HiveServer2 client (beeline, PyHive, JDBC/ODBC tools) connects to it as to HiveServer2 (binary
Thrift transport, optionally over TLS; SASL PLAIN, with the password checked when authentication is
configured, or NOSASL when it is not) and runs Flink DDL, ``SET``, streaming and batch INSERTs,
``SHOW JOBS`` / ``STOP JOB`` and Spark SQL queries, as ``spark.sql`` does on a session
:func:`sqlext.extend` extended.

Modules: :mod:`~sqlext.gateway.transport` (SASL PLAIN / NOSASL server side),
:mod:`~sqlext.gateway.security` (the ``spark.sqlext.gateway.*`` settings, the bind check),
:mod:`~sqlext.gateway.auth` (authenticators, the login check), :mod:`~sqlext.gateway.passwords` (the
users file), :mod:`~sqlext.gateway.throttle` (failed logins slow their address down),
:mod:`~sqlext.gateway.server` (connections), :mod:`~sqlext.gateway.service` (the TCLIService calls),
:mod:`~sqlext.gateway.sessions` (a Spark session per client session), :mod:`~sqlext.gateway.operations`
(an operation's states), :mod:`~sqlext.gateway.results` (rows to typed columns),
:mod:`~sqlext.gateway.metadata` (catalog browsing), :mod:`~sqlext.gateway.jobs` (SHOW JOBS, STOP JOB),
:mod:`~sqlext.gateway.control` (``start``/``stop``/``status`` of the background process),
:mod:`~sqlext.gateway.authz` (what each user may do: statements checked before they run, table
privileges kept in the metastore, ``GRANT``/``REVOKE``/``SHOW GRANT``).
The generated TCLIService bindings are PyHive's.
"""
