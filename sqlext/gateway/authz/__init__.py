"""Authorization of the gateway's statements: who may read, write and run what.

Authentication (:mod:`sqlext.gateway.auth`) says who a client is; this package decides what that user
may do, before a statement runs. Every statement is checked on what it does, not on its text: a
Spark statement on its parsed and analyzed Spark plan (relations read and written, paths, functions,
commands; :mod:`~sqlext.gateway.authz.plan`), a sqlext statement (Flink DDL, INSERT) on sqlext's
parse of it (:mod:`~sqlext.gateway.authz.statements`). Both give a list of
:class:`~sqlext.gateway.authz.access.Access` facts, which :mod:`~sqlext.gateway.authz.rules` judges
against the settings (:mod:`~sqlext.gateway.authz.settings`: admins, allowed locations, denied
settings) and the table privileges kept in the metastore as Hive's SQL-standard authorization keeps
them (:mod:`~sqlext.gateway.authz.privileges`). ``GRANT``, ``REVOKE`` and ``SHOW GRANT`` are
answered by :mod:`~sqlext.gateway.authz.grants`; :mod:`~sqlext.gateway.authz.authorizer` is what a
gateway session calls.

Imports run one way: ``authorizer`` -> ``grants``, ``plan``, ``statements`` -> ``rules`` ->
``privileges``, ``settings`` -> ``access``. Nothing here imports the gateway's sessions or server.
See docs/authorization.md for the rules as users read them.
"""
