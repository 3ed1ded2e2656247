"""``sqlext metastore start|status|stop``: the embedded Hive Metastore from the command line. Every subcommand
finds it by ``--port``, ``--host``, ``--home`` and ``--conf spark.sqlext.metastore.*=...`` (over the conf file's);
only ``start`` has the flags of how it runs (backend, version, warehouse, Hadoop settings, class path)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlext.catalog.metastore import launcher, versions
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.cli.conf import parse_conf
from sqlext.config import SqlextConfig

VERSION_HELP = "Hive version: 2.3 (default, from pyspark's jars), 3.1 or 4 (fetched once from Maven Central)"


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add the ``metastore`` command and its subcommands to the ``sqlext`` parser."""
    metastore = commands.add_parser("metastore", help="run the embedded Hive Metastore")
    actions = metastore.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, help_text in (
        ("start", _start, "start it (a no-op if one answers there) and print its thrift:// URI"),
        ("status", _status, "say whether it runs (exit 3 when it does not answer)"),
        ("stop", _stop, "stop the one this home started"),
    ):
        action = actions.add_parser(name, help=help_text)
        _add_location_flags(action)
        action.set_defaults(handler=handler)
    _add_start_flags(actions.choices["start"])


def settings_of(args: argparse.Namespace) -> MetastoreSettings:
    """The embedded metastore's settings: the conf file's and ``--conf``'s ``spark.sqlext.metastore.*`` keys,
    then the flags the subcommand has (``status`` and ``stop`` only find it: ``--port``, ``--host``, ``--home``)."""
    base = launcher.MetastoreSettings.from_config(SqlextConfig.load(parse_conf(args.conf)))

    def flag(name: str) -> Any:
        return getattr(args, name, None)

    changes: dict[str, Any] = {}
    if flag("port") is not None:
        changes["port"] = args.port
    if flag("home"):
        changes["home"] = Path(args.home).resolve()
    if flag("host"):
        changes["host"] = args.host
    if flag("warehouse"):
        changes["warehouse"] = args.warehouse
    if flag("backend") and Backend(args.backend) is not base.backend:
        postgres = Backend(args.backend) is Backend.POSTGRES
        changes.update(backend=Backend(args.backend), user="hive" if postgres else "APP")
        changes["password"] = "hive" if postgres else "mine"
    for name in ("jdbc_url", "user", "password"):
        if flag(name):
            changes[name] = flag(name)
    if flag("jdbc_driver_jar"):
        changes["jdbc_driver_jar"] = Path(args.jdbc_driver_jar)
    if flag("hadoop_conf"):
        changes["hadoop"] = tuple(sorted({**dict(base.hadoop), **parse_conf(args.hadoop_conf)}.items()))
    if flag("hadoop_conf_dir"):
        changes["hadoop_conf_dir"] = Path(args.hadoop_conf_dir)
    if flag("classpath"):
        entries = [entry for value in args.classpath for entry in value.split(os.pathsep) if entry]
        changes["classpath"] = (*base.classpath, *entries)
    if flag("insecure_no_auth"):
        changes["insecure_no_auth"] = True
    if flag("version"):
        changes["version"] = versions.release(args.version).version
    if flag("kerberos_principal"):
        changes["kerberos_principal"] = args.kerberos_principal
    if flag("kerberos_keytab"):
        changes["kerberos_keytab"] = Path(args.kerberos_keytab)
    return replace(base, **changes)


def _start(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    result = launcher.start(settings)
    started = (
        f"Hive Metastore {settings.version} started (pid {result.pid}, {settings.backend}, log {settings.log_file})"
    )
    print(f"Hive Metastore already running at {result.uri}" if result.already_running else started, file=sys.stderr)
    print(result.uri)
    return 0


def _status(args: argparse.Namespace) -> int:
    current = launcher.status(settings_of(args))
    print(current.describe())
    return 0 if current.answering else 3


def _stop(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    if launcher.stop(settings):
        print(f"Hive Metastore at {settings.uri} stopped")
    else:
        print(f"No Hive Metastore started from {settings.home} runs on port {settings.port}")
    return 0


def _add_location_flags(parser: argparse.ArgumentParser) -> None:
    """What finds an embedded metastore: every ``metastore`` subcommand has these."""
    parser.add_argument("--port", type=int, help="Thrift port (default 9083, or spark.sqlext.metastore.port)")
    parser.add_argument("--host", help="address it listens on (default 127.0.0.1)")
    parser.add_argument("--home", help="directory for the metastore's database, config, pid and log")
    parser.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        help="a spark.sqlext.metastore.* setting (over the conf file's), repeatable, "
        "e.g. spark.sqlext.metastore.classpath=/jars/*",
    )
    # A kerberized metastore answers only clients that log in, so status and stop need them too.
    parser.add_argument(
        "--kerberos-principal",
        help="Kerberos: the metastore's principal, e.g. hive/_HOST@REALM (hive.metastore.kerberos.principal)",
    )
    parser.add_argument(
        "--kerberos-keytab", help="Kerberos: the metastore's keytab (hive.metastore.kerberos.keytab.file)"
    )


def _add_start_flags(parser: argparse.ArgumentParser) -> None:
    """What only ``metastore start`` uses: how the metastore it starts is run."""
    parser.add_argument("--warehouse", help="warehouse dir URI (default <home>/warehouse)")
    parser.add_argument("--backend", choices=[b.value for b in Backend], help="database backend (default derby)")
    parser.add_argument("--version", choices=[v.value for v in versions.HiveVersion], help=VERSION_HELP)
    parser.add_argument("--jdbc-url", help="PostgreSQL JDBC URL, e.g. jdbc:postgresql://localhost:5432/metastore")
    parser.add_argument("--user", help="database user")
    parser.add_argument("--password", help="database password")
    parser.add_argument("--jdbc-driver-jar", help="JDBC driver jar (default /usr/share/java/postgresql.jar)")
    parser.add_argument(
        "--hadoop-conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Hadoop setting for resolving table locations, e.g. fs.viewfs.mounttable.c.link./data=hdfs://nn/data",
    )
    parser.add_argument(
        "--hadoop-conf-dir", help="Hadoop conf dir (core-site.xml, hdfs-site.xml); default $HADOOP_CONF_DIR"
    )
    parser.add_argument(
        "--classpath",
        action="append",
        metavar="ENTRIES",
        help="class path entries after pyspark's jars (':'-separated, repeatable, a dir/* takes its jars): the "
        "filesystem jars table locations need, e.g. hadoop-aws and the AWS SDK for s3a:// "
        "(as spark.sqlext.metastore.classpath)",
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host: the metastore has no authentication (anyone reaching it can drop tables)",
    )
