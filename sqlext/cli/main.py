"""The ``sqlext`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlext.catalog.metastore import launcher
from sqlext.cli import metastore, status, thriftserver
from sqlext.cli.conf import command_conf, metastore_client, parse_conf, reach_storage
from sqlext.cli.thriftserver import ThriftServerSettings
from sqlext.config import SqlextConfig
from sqlext.errors import SqlextError
from sqlext.gateway import control as gateway_control
from sqlext.gateway.security import INSECURE_NO_AUTH
from sqlext.runtime.console import quiet_third_party_warnings
from sqlext.runtime.process import ServerSettings

if TYPE_CHECKING:
    from types import ModuleType

Command = Callable[[argparse.Namespace], int]

CONF_HELP = (
    "Spark conf, repeatable: spark.sqlext.* (over the conf file's), spark.hadoop.* for the tables' storage, any spark.*"
)


def _positive_int(text: str) -> int:
    """An argument that is a whole number of at least 1 (argparse names the flag in its error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of at least 1")
    return value


def _commits(args: argparse.Namespace) -> int:
    from sqlext.jobs.audit import commit_log_entries, describe_inserts, render, resolve_table_path

    conf = command_conf(args)
    path = resolve_table_path(args.table, lambda: metastore_client(conf))
    reach_storage(path, conf)
    entries = commit_log_entries(path, args.query, last=args.last, archived=args.archived)
    if args.html:
        from sqlext.jobs.timeline import render_html

        Path(args.html).write_text(render_html(args.table, entries), encoding="utf-8")
        print(f"timeline of {len(entries)} batches of {args.table} written to {Path(args.html).resolve()}")
        return 0
    inserts = describe_inserts(path, args.query, as_json=args.json)
    if inserts:
        print(inserts)
    print(render(entries, as_json=args.json))
    return 0


def _compact(args: argparse.Namespace) -> int:
    from sqlext.catalog.hms import Catalog
    from sqlext.connectors.filesystem.compaction.command import compact_table
    from sqlext.connectors.filesystem.compaction.compactor import DEFAULT_READER_GRACE
    from sqlext.options import DURATION_FORM, MEMORY_FORM, parse_duration, parse_memory_size
    from sqlext.table import TableIdentifier

    try:
        target = parse_memory_size(args.target_size) if args.target_size else None
    except ValueError as exc:
        raise SqlextError(f"--target-size '{args.target_size}' is not {MEMORY_FORM}.") from exc
    try:
        grace = parse_duration(args.reader_grace) if args.reader_grace else DEFAULT_READER_GRACE
    except ValueError as exc:
        raise SqlextError(f"--reader-grace '{args.reader_grace}' is not {DURATION_FORM}.") from exc
    conf = command_conf(args)
    with metastore_client(conf) as client:
        table = Catalog(client).get_table(TableIdentifier.parse(args.table))
        reach_storage(table.options.get("path", ""), conf)
        summary = compact_table(table, client, args.partition or [], target, grace, show_progress=not args.quiet)
    print(
        f"{table.identifier}: {summary.compacted} of {summary.partitions} partition(s) compacted, "
        f"{summary.files_before} files merged into {summary.files_after}"
    )
    return 0


def _expire(args: argparse.Namespace) -> int:
    from sqlext.cli.expire import run_expire

    conf = command_conf(args)
    return run_expire(args, conf, metastore_client(conf))


def _server_metastore_uri(conf: dict[str, str]) -> str:
    """The metastore a server started from the CLI uses: the configured one, else the embedded one
    (started if needed)."""
    config = SqlextConfig.load(conf)
    return config.metastore_uris or launcher.start(launcher.MetastoreSettings.from_config(config)).uri


def _control_server(action: str, label: str, settings: ServerSettings, control: ModuleType) -> int:
    """``start``, ``stop`` or ``status`` of a background server through its module's functions."""
    if action == "start":
        pid, already = control.start(settings)
        state = "already running" if already else "started"
        print(
            f"{label} {state} (pid {pid}, metastore {settings.metastore_uri}, log {settings.log_file})",
            file=sys.stderr,
        )
        print(settings.url)
        return 0
    if action == "stop":
        stopped = control.stop(settings)
        print("stopped" if stopped else f"no {label.removeprefix('sqlext ')} started here runs on {settings.port}")
        return 0
    running = control.status(settings)
    print(f"running at {settings.url} (pid {running})" if running else f"not running on port {settings.port}")
    return 0 if running else 3


def _thriftserver(args: argparse.Namespace) -> int:
    conf = command_conf(args)
    hiveconf = parse_conf(args.hiveconf)
    port = args.port if args.port is not None else thriftserver.DEFAULT_PORT
    settings = ThriftServerSettings(
        metastore_uri="",
        port=port,
        host=args.host,
        conf=conf,
        hiveconf=hiveconf,
        insecure_no_auth=args.insecure_no_auth,
    )
    if args.action == "start":  # stop and status never start (or look for) a metastore
        thriftserver.check(settings)  # before the metastore is started for it
        settings = replace(settings, metastore_uri=_server_metastore_uri(conf))
    return _control_server(args.action, "Thrift server", settings, thriftserver)


def _gateway(args: argparse.Namespace) -> int:
    conf = command_conf(args)
    if args.insecure_no_auth:
        conf[INSECURE_NO_AUTH] = "true"
    if args.action == "passwd":
        return _gateway_passwd(args, conf)
    port = args.port if args.port is not None else gateway_control.DEFAULT_PORT
    settings = gateway_control.GatewaySettings(metastore_uri="", port=port, host=args.host, conf=conf)
    if args.home:
        settings = replace(settings, home=Path(args.home).resolve())
    if args.action == "start":  # stop and status never start (or look for) a metastore
        gateway_control.check(settings)  # before the metastore is started for it
        settings = replace(settings, metastore_uri=_server_metastore_uri(conf))
    return _control_server(args.action, "sqlext gateway", settings, gateway_control)


def _gateway_passwd(args: argparse.Namespace, conf: dict[str, str]) -> int:
    """``sqlext gateway passwd USER``: add a user to the users file, or change their password."""
    import getpass

    from sqlext.gateway.passwords import set_password
    from sqlext.gateway.security import GatewaySecurity

    if not args.user:
        raise SqlextError("sqlext gateway passwd needs the user name: sqlext gateway passwd USER.")
    path = Path(args.users_file) if args.users_file else GatewaySecurity.of(SqlextConfig.load(conf).values).users_file
    assert path is not None
    if sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.user}: ")
        if getpass.getpass("Again: ") != password:
            raise SqlextError("The passwords differ; nothing changed.")
    else:  # a script: the first line of stdin
        password = sys.stdin.readline().rstrip("\r\n")
    added = set_password(path, args.user, password)
    print(f"{'added' if added else 'changed the password of'} {args.user} in {path}", file=sys.stderr)
    return 0


GATEWAY_HELP = """\
A HiveServer2-protocol endpoint whose sessions run sqlext statements: beeline, PyHive and JDBC/ODBC
tools connect as to HiveServer2 and run Flink DDL, SET, INSERT (streaming or batch), SHOW JOBS,
STOP JOB '<id>' and Spark SQL queries. Each client session is a Spark session of its own (own SET
options, current database, temporary tables); streaming inserts keep running after the client
disconnects; SHOW JOBS / STOP JOB see a user's own jobs from any of their sessions (all jobs for
users in spark.sqlext.gateway.admins).

Auth: by default SASL PLAIN without a password check (beeline's and PyHive's default) or NOSASL, and
only on a loopback address. spark.sqlext.gateway.authentication=FILE (users added with
'sqlext gateway passwd USER'), LDAP or CUSTOM checks passwords; spark.sqlext.gateway.ssl.certfile
(and .keyfile) turns TLS on. Listening elsewhere without authentication needs --insecure-no-auth.

  sqlext gateway passwd alice                  # asks for the password (or reads a line from stdin)
  sqlext gateway start --port 10010 --conf spark.sqlext.gateway.authentication=FILE \\
      --conf spark.sqlext.metastore.uris=thrift://...                              # prints the JDBC URL
  beeline -u jdbc:hive2://127.0.0.1:10010/default -n alice -p ...
  sqlext gateway status | stop --port 10010

Unlike 'sqlext thriftserver' (Spark's own HiveThriftServer2, Spark SQL only), statements go through
sqlext's parser first, so Flink DDL and streaming INSERTs work; queries are Spark SQL either way."""


def _run(args: argparse.Namespace) -> int:
    from sqlext.config import SESSION_PREFIX
    from sqlext.spark.runner import run_file

    conf = command_conf(args)
    if args.packages:  # as spark-submit's --packages: added to spark.jars.packages
        given = [conf["spark.jars.packages"]] if conf.get("spark.jars.packages") else []
        conf["spark.jars.packages"] = ",".join([*given, *args.packages])
    if args.fresh:
        from sqlext.jobs.checkpoint import START_OPTION, StartMode  # sqlglot: not before the JVM's start otherwise

        conf[SESSION_PREFIX + START_OPTION] = StartMode.FRESH.value
    return run_file(args.file, conf)


def _driver_path(args: argparse.Namespace) -> int:
    from sqlext.runtime.paths import spark_submit_driver

    print(spark_submit_driver())
    return 0


def _connectors(args: argparse.Namespace) -> int:
    """``sqlext connectors``: identifiers with a line each; ``sqlext connectors NAME``: its options."""
    from sqlext.connectors.reference import render_reference
    from sqlext.registry import factories

    if args.name:
        print(render_reference(args.name), end="")
    else:
        for name, factory in sorted(factories().items()):
            print(f"{name:<12} {factory.description}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from sqlext.cli.demo import run_demo

    return run_demo(args)


def _warm_up(args: argparse.Namespace) -> int:
    from sqlext.cli.warm_up import run_warm_up

    return run_warm_up(args)


def _add_conf_flags(parser: argparse.ArgumentParser) -> None:
    """The one way every command that reaches the metastore or Spark is configured (see ``CONF_HELP``)."""
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE", help=CONF_HELP)
    parser.add_argument(
        "--metastore-uri",
        metavar="URI",
        help="shorthand for --conf spark.sqlext.metastore.uris=URI (thrift://host:port)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sqlext",
        description="Flink-style streaming file sinks with partition commit, on Spark and the HMS.",
    )
    parser.add_argument("--version", action="version", version=f"sqlext {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    metastore.add_parser(commands)

    commits = commands.add_parser("commits", help="show a table's commit log (batches, files, partitions)")
    commits.add_argument("table", help="db.table (looked up in the metastore) or the table's path URI")
    commits.add_argument("--query", help="only this writing query")
    commits.add_argument(
        "--last", type=_positive_int, metavar="N", help="only each query's N latest batches (read alone)"
    )
    commits.add_argument(
        "--archived",
        action="store_true",
        help="also the batches the log expired into its archive (sink.commit-log.archive.retained-batches)",
    )
    commits.add_argument(
        "--json", action="store_true", help="one JSON object per insert (key 'insert'), then one per batch ('batch')"
    )
    commits.add_argument(
        "--html", metavar="FILE", help="write a self-contained page drawing the batches and partition commits"
    )
    _add_conf_flags(commits)
    commits.set_defaults(handler=_commits)

    compact = commands.add_parser(
        "compact", help="merge the small files of a table's committed partitions (safe for readers)"
    )
    compact.add_argument("table", help="db.table")
    compact.add_argument(
        "--partition", action="append", metavar="KEY=VALUE", help="only partitions with this value (repeatable)"
    )
    compact.add_argument("--target-size", help="target file size, e.g. 256MB (default: compaction.file-size)")
    compact.add_argument(
        "--reader-grace",
        help="how long queries that listed the old files may go on reading them, e.g. '30 s' (default 10 s)",
    )
    compact.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_conf_flags(compact)
    compact.set_defaults(handler=_compact)

    from sqlext.cli.expire import HELP as EXPIRE_HELP
    from sqlext.cli.expire import add_arguments as add_expire_arguments

    expire = commands.add_parser("expire", help=EXPIRE_HELP)
    add_expire_arguments(expire)
    _add_conf_flags(expire)
    expire.set_defaults(handler=_expire)

    server = commands.add_parser(
        "thriftserver",
        help=thriftserver.SUMMARY,
        description=thriftserver.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    server.add_argument("action", choices=["start", "stop", "status"])
    server.add_argument("--port", type=int, help=f"port (default {thriftserver.DEFAULT_PORT})")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    _add_conf_flags(server)
    server.add_argument(
        "--hiveconf",
        action="append",
        metavar="KEY=VALUE",
        help="HiveServer2 setting, e.g. hive.server2.authentication=LDAP (see docs/gateway.md)",
    )
    server.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host (there is no authorization: whoever signs in runs any SQL as this OS user)",
    )
    server.set_defaults(handler=_thriftserver)

    gateway = commands.add_parser(
        "gateway",
        help="HiveServer2-protocol endpoint that runs sqlext statements (beeline, PyHive, JDBC)",
        description=GATEWAY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gateway.add_argument("action", choices=["start", "stop", "status", "passwd"])
    gateway.add_argument("user", nargs="?", help="passwd: the user to add, or whose password to change")
    gateway.add_argument("--port", type=int, help="port (default 10010)")
    gateway.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    gateway.add_argument("--home", help="directory for the pid file and log (default $SQLEXT_HOME/gateway)")
    _add_conf_flags(gateway)
    gateway.add_argument(
        "--users-file", help="passwd: the users file (default spark.sqlext.gateway.authentication.file)"
    )
    gateway.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host without authentication (anyone reaching it runs SQL as anyone)",
    )
    gateway.set_defaults(handler=_gateway)

    run = commands.add_parser("run", help="run a SQL file (Flink DDL, SET, INSERT) and wait for its inserts")
    run.add_argument("file", help="the SQL file: statements separated by ';', comments allowed")
    _add_conf_flags(run)
    run.add_argument(
        "--packages",
        action="append",
        metavar="COORDINATES",
        help="Maven coordinates (group:artifact:version, comma-separated, repeatable) Spark's Ivy fetches for the "
        "driver and executors, as spark-submit's --packages (added to spark.jars.packages)",
    )
    run.add_argument(
        "--fresh",
        action="store_true",
        help="start every insert over: move its checkpoint aside and read its sources from the start "
        "(as SET 'sqlext.insert.start' = 'fresh')",
    )
    run.set_defaults(handler=_run)

    driver = commands.add_parser("driver-path", help="print the spark-submit driver script's path")
    driver.set_defaults(handler=_driver_path)

    connectors = commands.add_parser("connectors", help="list connectors, or print one connector's options")
    connectors.add_argument("name", nargs="?", help="a connector identifier, e.g. filesystem")
    connectors.set_defaults(handler=_connectors)

    status.add_parser(commands, _add_conf_flags)
    demo = commands.add_parser("demo", help="run the demo pipeline on the embedded metastore")
    demo.add_argument("--home", help="directory for the demo's metastore, data and checkpoints")
    demo.add_argument("--port", type=int, default=9083, help="embedded metastore port (default 9083)")
    demo.set_defaults(handler=_demo)

    from sqlext.cli.warm_up import HELP as WARM_UP_HELP

    warm_up = commands.add_parser("warm-up", help=WARM_UP_HELP)
    _add_conf_flags(warm_up)
    warm_up.set_defaults(handler=_warm_up)
    return parser


def package_version() -> str:
    """The installed sqlext distribution's version (``unknown`` when run from a checkout never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sqlext")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sqlext`` console script."""
    quiet_third_party_warnings()
    args = build_parser().parse_args(argv)
    handler: Command = args.handler
    try:
        return handler(args)
    except SqlextError as exc:
        print(f"sqlext: error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
