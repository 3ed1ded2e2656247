"""The ``sqlext`` command line's own flags: ``--version``, each ``metastore`` subcommand with only its own flags,
and ``metastore start`` keeping the class path its table locations need."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from sqlext.cli.main import build_parser, main
from sqlext.cli.metastore import settings_of as metastore_settings
from sqlext.config import METASTORE_CLASSPATH

START_ONLY = ["--warehouse", "--backend", "--jdbc-url", "--jdbc-driver-jar", "--hadoop-conf", "--insecure-no-auth"]


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"sqlext {version('sqlext')}"


@pytest.mark.parametrize("action", ["status", "stop"])
def test_metastore_status_and_stop_list_only_the_flags_that_find_it(
    action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["metastore", action, "--help"])
    shown = capsys.readouterr().out

    assert all(flag in shown for flag in ("--port", "--host", "--home", "--conf"))
    assert not [flag for flag in START_ONLY if flag in shown], shown


def test_metastore_start_lists_how_the_metastore_is_run(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["metastore", "start", "--help"])
    shown = capsys.readouterr().out

    assert all(flag in shown for flag in [*START_ONLY, "--classpath", "--port", "--conf"])


def test_metastore_start_keeps_the_class_path_of_the_conf_file_conf_and_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_file = tmp_path / "sqlext.conf"
    conf_file.write_text(f"{METASTORE_CLASSPATH}=/opt/aws/*\n")
    monkeypatch.setenv("SQLEXT_CONF", str(conf_file))
    parser = build_parser()

    from_file = metastore_settings(parser.parse_args(["metastore", "start", "--home", str(tmp_path)]))
    from_conf = metastore_settings(
        parser.parse_args(["metastore", "start", "--conf", f"{METASTORE_CLASSPATH}=/ivy/jars/*:/x.jar"])
    )
    from_flag = metastore_settings(
        parser.parse_args(["metastore", "start", "--classpath", "/ivy/jars/*:/x.jar", "--classpath", "/y.jar"])
    )

    assert from_file.classpath == ("/opt/aws/*",) and from_file.home == tmp_path.resolve()
    assert from_conf.classpath == ("/ivy/jars/*", "/x.jar")
    assert from_flag.classpath == ("/opt/aws/*", "/ivy/jars/*", "/x.jar", "/y.jar")


def test_metastore_flags_override_the_conf_and_status_reads_the_conf_too(tmp_path: Path) -> None:
    parser = build_parser()
    conf = ["--conf", "spark.sqlext.metastore.port=9199", "--conf", f"spark.sqlext.metastore.home={tmp_path}"]

    status = metastore_settings(parser.parse_args(["metastore", "status", *conf]))
    start = metastore_settings(parser.parse_args(["metastore", "start", *conf, "--port", "9200"]))

    assert (status.port, status.home) == (9199, tmp_path)
    assert (start.port, start.home) == (9200, tmp_path)


def test_run_takes_packages_as_spark_submit_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[dict[str, str]] = []
    monkeypatch.setattr("sqlext.spark.runner.run_file", lambda _file, conf: ran.append(dict(conf)) or 0)

    code = main(
        [
            "run",
            str(tmp_path / "job.sql"),
            "--packages",
            "org.apache.hadoop:hadoop-aws:3.5.0,a:b:1",
            "--conf",
            "spark.jars.packages=c:d:2",
            "--packages",
            "e:f:3",
        ]
    )

    assert code == 0
    assert ran[0]["spark.jars.packages"] == "c:d:2,org.apache.hadoop:hadoop-aws:3.5.0,a:b:1,e:f:3"
