"""The raw format on files, written and read as Flink's filesystem connector writes and reads a
serialization format (a record a line), and an avro table in a session without Spark's Avro source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.connectors.filesystem.spark_avro import ARTIFACT, require
from sqlext.errors import ValidationError
from sqlext.registry import SourceContext
from sqlext.table import TableIdentifier
from tests.support.extension import extended_session

DB = "raw_files"


class _NoAvroJvm:
    """A JVM where no class loader has Spark's Avro source: every lookup fails."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("no such class")


def test_an_avro_table_without_the_spark_avro_jar_names_the_jar_and_how_to_add_it() -> None:
    session = type("Session", (), {"_jvm": _NoAvroJvm(), "_jsparkSession": _NoAvroJvm()})()
    with pytest.raises(ValidationError) as failure:
        require(session, "db.events", "write")
    message = failure.value.message
    assert message.startswith("Table db.events has format 'avro', and Spark's Avro data source")
    assert f"--conf spark.jars.packages={ARTIFACT}" in message and "ADD JAR" in message


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("raw")
    with extended_session(spark, root, DB):
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        yield root


def _read(spark: Any, hms: MetastoreClient, name: str) -> list[tuple[Any, ...]]:
    definition = Catalog(hms).get_table(TableIdentifier(DB, name))
    frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
    return sorted(tuple(row) for row in frame.collect())


def _create(spark: Any, root: Path, name: str, column: str, **options: str) -> Path:
    path = root / name
    extra = "".join(f", '{k}' = '{v}'" for k, v in options.items())
    spark.sql(
        f"CREATE TABLE {DB}.{name} ({column}, p STRING) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'raw'{extra})"
    )
    return path


def _lines(path: Path) -> list[bytes]:
    """The lines of the data files under ``path``, each file checked to end with a line feed."""
    files = [f.read_bytes() for f in sorted(path.glob("p=*/*")) if not f.name.startswith(("_", "."))]
    assert files and all(data.endswith(b"\n") for data in files), files
    return sorted(line for data in files for line in data[:-1].split(b"\n"))


@pytest.mark.spark
@pytest.mark.hms
def test_raw_strings_are_written_a_line_each_in_the_charset_and_read_back(
    session: Path, spark: Any, hms: MetastoreClient
) -> None:
    path = _create(spark, session, "latin", "line STRING", **{"raw.charset": "ISO-8859-1"})
    [row] = spark.sql(f"INSERT INTO {DB}.latin VALUES ('caf\u00e9', 'a'), ('', 'a'), ('plain', 'a')").collect()
    assert row.status == "FINISHED", row
    assert _lines(path) == [b"", b"caf\xe9", b"plain"]  # in ISO-8859-1, a line feed after each
    assert _read(spark, hms, "latin") == [("", "a"), ("caf\u00e9", "a"), ("plain", "a")]


@pytest.mark.spark
@pytest.mark.hms
def test_raw_bytes_are_written_as_they_are_and_lines_split_as_flink_splits_them(
    session: Path, spark: Any, hms: MetastoreClient
) -> None:
    path = _create(spark, session, "blobs", "data BYTES")
    [row] = spark.sql(f"INSERT INTO {DB}.blobs VALUES (X'00FF10', 'x'), (X'C328', 'x')").collect()
    assert row.status == "FINISHED", row
    assert _lines(path) == [b"\x00\xff\x10", b"\xc3("]
    # What another writer left: CRLF line ends (the CR dropped, as Flink's reader drops it), no last line feed.
    (path / "p=y").mkdir()
    (path / "p=y" / "landed.txt").write_bytes(b"one\r\ntwo\n\nthree")
    assert _read(spark, hms, "blobs") == sorted(
        [(b"\x00\xff\x10", "x"), (b"\xc3(", "x"), (b"one", "y"), (b"two", "y"), (b"", "y"), (b"three", "y")]
    )


@pytest.mark.spark
@pytest.mark.hms
def test_a_null_raw_value_fails_the_write_naming_the_column(session: Path, spark: Any) -> None:
    _create(spark, session, "nulls", "line STRING")
    with pytest.raises(Exception, match="Column 'line' holds NULL, which format 'raw' cannot write"):
        spark.sql(f"INSERT INTO {DB}.nulls VALUES (CAST(NULL AS STRING), 'a')").collect()
