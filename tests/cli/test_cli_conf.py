"""One CLI convention: every command that reaches the metastore or Spark takes ``--conf key=value``
(repeatable) and ``--metastore-uri`` as its shorthand, and reads ``spark.sqlext.*`` from the conf file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.cli.conf import command_conf
from sqlext.cli.main import build_parser, main
from sqlext.config import METASTORE_URIS
from tests.support.tables import create_in_hms, events_table

URI = "thrift://127.0.0.1:9999"
#: Every command that reaches the metastore or Spark, with its positional arguments.
COMMANDS = [
    ["commits", "db.t"],
    ["compact", "db.t"],
    ["run", "job.sql"],
    ["thriftserver", "status"],
    ["gateway", "status"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_takes_conf_and_the_metastore_shorthand_alike(command: list[str]) -> None:
    parser = build_parser()
    by_conf = parser.parse_args([*command, "--conf", f"{METASTORE_URIS}={URI}", "--conf", "spark.x.y=1"])
    by_shorthand = parser.parse_args([*command, "--metastore-uri", URI, "--conf", "spark.x.y=1"])

    assert command_conf(by_conf) == command_conf(by_shorthand) == {METASTORE_URIS: URI, "spark.x.y": "1"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_bad_conf_pair_is_named(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--conf", "no-equals-sign"]) == 1
    assert "Invalid --conf 'no-equals-sign': expected key=value." in capsys.readouterr().err


@pytest.mark.hms
def test_commits_and_compact_reach_the_metastore_given_by_conf(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hms.create_database("cli_conf")
    create_in_hms(hms, events_table("cli_conf", "events", tmp_path / "events"))
    outputs = []
    for flags in (["--conf", f"{METASTORE_URIS}={metastore.uri}"], ["--metastore-uri", metastore.uri]):
        assert main(["commits", "cli_conf.events", *flags]) == 0
        assert main(["compact", "cli_conf.events", "--quiet", *flags]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "cli_conf.events: 0 of 0 partition(s) compacted" in outputs[0]


@pytest.mark.hms
@pytest.mark.spark
@pytest.mark.slow
def test_run_and_servers_take_the_same_conf(metastore: MetastoreSettings, tmp_path: Path) -> None:
    script = tmp_path / "show.sql"
    script.write_text("SHOW DATABASES;\n")
    flags = ["--conf", f"{METASTORE_URIS}={metastore.uri}", "--conf", "spark.ui.enabled=false"]
    run = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "run", str(script), *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "default" in run.stdout.splitlines()
    for server in ("thriftserver", "gateway"):
        status = subprocess.run(
            [sys.executable, "-m", "sqlext.cli", server, "status", "--port", "1", *flags],
            capture_output=True,
            text=True,
            timeout=120,
        )
        # "not running" answered from the metastore given by --conf: no embedded metastore was started for it
        assert status.returncode == 3 and "not running on port 1" in status.stdout, status.stderr
        assert "Hive Metastore" not in status.stderr
