"""The same Flink SQL run by Flink and by sqlext over the same input files: the partitions each writes,
the rows in each, the success files at the end of a bounded run, and, for a stream fed step by step,
which partitions are committed after each step.

Flink runs in its own venv (:mod:`tests.support.flink`); all sinks of a comparison run as one Flink job.
sqlext runs the same statements through ``spark.sql``. Both outputs are read by one reader
(:mod:`tests.support.landing`). Deliberate differences are asserted as such and listed in
docs/partition-commit.md under "Differences from Flink".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import SqlextError
from sqlext.io.fs import FileSystem
from sqlext.spark.session import extend
from tests.support.flink import Flink, FlinkError, completed_checkpoints, wait_for_checkpoints
from tests.support.landing import Landing, read_landing
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.flink, pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DATABASE = "flinkdiff"
FLINK_DEFAULT = "__DEFAULT_PARTITION__"
HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class Sink:
    """A sink table (columns, partition keys, options) and the SELECT that fills it from ``src``."""

    name: str
    columns: str
    partitioned_by: str
    options: dict[str, str]
    select: str
    source: str = "b_src"
    fmt: str = "csv"

    def ddl(self, path: Path) -> str:
        options = {"connector": "filesystem", "path": path.as_uri(), "format": self.fmt, **self.options}
        rendered = ",\n  ".join(f"'{k}' = '{v}'" for k, v in options.items())
        return (
            f"CREATE TABLE {self.name} ({self.columns}) PARTITIONED BY ({self.partitioned_by}) WITH (\n  {rendered}\n)"
        )

    def insert(self) -> str:
        return f"INSERT INTO {self.name} {self.select.format(src=self.source)}"

    @property
    def success_file(self) -> str:
        return self.options.get("sink.partition-commit.success-file.name", "_SUCCESS")


def source_ddl(name: str, path: Path, extra: str = "", **options: str) -> str:
    """``(id INT, ts TIMESTAMP(3), p STRING, ms BIGINT)`` over the csv files of ``path``."""
    rendered = ", ".join(
        f"'{k}' = '{v}'"
        for k, v in {"connector": "filesystem", "path": path.as_uri(), "format": "csv", **options}.items()
    )
    return f"CREATE TABLE {name} (id INT, ts TIMESTAMP(3), p STRING, ms BIGINT{extra}) WITH ({rendered})"


WATERMARK = ", WATERMARK FOR ts AS ts - INTERVAL '0' SECOND"


def write_rows(directory: Path, name: str, rows: list[tuple[int, datetime, str | None]]) -> None:
    """A csv input file (``id,ts,p,ms``), renamed into place so that no source sees it half-written.
    ``None`` is an empty field."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        f"{i},{ts:%Y-%m-%d %H:%M:%S},{'' if p is None else p},{int(ts.replace(tzinfo=UTC).timestamp() * 1000)}\n"
        for i, ts, p in rows
    ]
    staging = directory / f".{name}.tmp"
    staging.write_text("".join(lines))
    staging.rename(directory / name)


@dataclass
class Runs:
    """One comparison: where each engine writes, and the tables both get."""

    root: Path
    input_dir: Path
    sinks: list[Sink]
    sources: list[str] = field(default_factory=list)

    def table_dir(self, engine: str, sink: Sink) -> Path:
        return self.root / engine / sink.name

    def statements(self, engine: str) -> list[str]:
        return [
            *self.sources,
            *(s.ddl(self.table_dir(engine, s)) for s in self.sinks),
            *(s.insert() for s in self.sinks),
        ]

    def landing(self, engine: str, sink: Sink) -> Landing:
        return read_landing(self.table_dir(engine, sink), sink.fmt, sink.success_file)


@pytest.fixture
def sqlext_sql(spark: Any, tmp_path: Path) -> Iterator[Any]:
    """``spark.sql`` of a sqlext session in a database of its own (dropped tables: new names per test)."""
    session = extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql(f"USE {DATABASE}")
    yield spark.sql
    spark.sql("USE default")
    del session


def run_sqlext_bounded(sql: Any, statements: list[str], mode: str = "streaming") -> None:
    """Run DDL and INSERTs through sqlext; streaming inserts run side by side, each to its end."""
    sql(f"SET 'execution.runtime-mode' = '{mode}'")
    try:
        started = []
        for statement in statements:
            result = sql(statement).collect()
            if statement.startswith("INSERT") and mode == "streaming":
                [row] = result
                started.append((statement, running_insert(row.job_id)))
        for statement, running in started:
            assert running is not None and running.wait(300), f"sqlext did not finish {statement}"
            assert running.query.exception() is None
    finally:
        sql("RESET 'execution.runtime-mode'")


# -- bounded runs: partitions, rows, success files --------------------------------------------------

START = datetime(2026, 1, 1, 0, 0, 0)
SPECIAL = ["a", "a/b", "x=y", "with space", "50%", "ünï", "a:b", "#1", "{x}", "[^]"]
BOUNDED_ROWS = [
    (i, START + timedelta(minutes=17 * i), None if i % 7 == 0 else SPECIAL[i % len(SPECIAL)]) for i in range(40)
]
#: p is NULL for id % 7 == 0 (an empty csv field) and '' for id % 5 == 1.
P_OR_EMPTY = "CASE WHEN id % 5 = 1 THEN '' ELSE p END"
HOURLY_SELECT = "SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {src}"
HOURLY_COLUMNS = "id INT, ts TIMESTAMP(3), dt STRING, `hr` STRING"


def _sink(name: str, source: str = "b_src", **options: str) -> Sink:
    return Sink(
        name,
        HOURLY_COLUMNS,
        "dt, `hr`",
        {"sink.partition-commit.policy.kind": "success-file", **options},
        HOURLY_SELECT,
        source,
    )


BOUNDED_SINKS = [
    _sink("b_csv_hourly"),
    Sink(
        "b_json_hourly",
        HOURLY_COLUMNS,
        "dt, `hr`",
        {"sink.partition-commit.policy.kind": "success-file"},
        HOURLY_SELECT,
        fmt="json",
    ),
    _sink(
        "b_partition_time",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
            "sink.partition-commit.success-file.name": "_DONE",
        },
    ),
    _sink("b_process_time", **{"sink.partition-commit.delay": "1 h"}),
    Sink(
        "b_values_json",
        "id INT, p STRING",
        "p",
        {"sink.partition-commit.policy.kind": "success-file", "partition.default-name": "none_here"},
        f"SELECT id, {P_OR_EMPTY} FROM {{src}}",
        fmt="json",
    ),
    Sink(
        "b_values_csv",
        "id INT, p STRING",
        "p",
        {"sink.partition-commit.policy.kind": "success-file", "partition.default-name": "none_here"},
        f"SELECT id, {P_OR_EMPTY} FROM {{src}}",
    ),
    Sink(
        "b_values_default_name",
        "id INT, p STRING",
        "p",
        {"sink.partition-commit.policy.kind": "success-file"},
        f"SELECT id, {P_OR_EMPTY} FROM {{src}}",
    ),
    Sink("b_no_policy", HOURLY_COLUMNS, "dt, `hr`", {}, HOURLY_SELECT),
]
#: Sinks whose result differs on purpose, and how (checked, not skipped).
DEFAULT_NAME_SINK = "b_values_default_name"
NO_POLICY_SINK = "b_no_policy"


@pytest.fixture(scope="module")
def bounded(flink: Flink, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The bounded sinks run by Flink (one streaming job over bounded input)."""
    root = tmp_path_factory.mktemp("bounded")
    write_rows(root / "input", "rows.csv", BOUNDED_ROWS)
    runs = Runs(root, root / "input", BOUNDED_SINKS, [source_ddl("b_src", root / "input", WATERMARK)])
    flink.run(runs.statements("flink"))
    return runs


@pytest.fixture(scope="module")
def bounded_sqlext(bounded: Runs, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", tmp_path_factory.mktemp("bounded-checkpoints").as_uri())
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql(f"USE {DATABASE}")
    try:
        run_sqlext_bounded(spark.sql, bounded.statements("sqlext"))
    finally:
        spark.sql("USE default")
    return bounded


@pytest.mark.parametrize(
    "sink", [s for s in BOUNDED_SINKS if s.name not in (DEFAULT_NAME_SINK, NO_POLICY_SINK)], ids=lambda s: s.name
)
def test_a_bounded_run_writes_the_partitions_rows_and_success_files_flink_writes(
    bounded_sqlext: Runs, sink: Sink
) -> None:
    flink = bounded_sqlext.landing("flink", sink)
    ours = bounded_sqlext.landing("sqlext", sink)
    assert flink.rows, "Flink wrote rows"
    assert sorted(ours.partitions) == sorted(flink.partitions)
    assert ours.rows == flink.rows
    assert ours.success == flink.success == frozenset(flink.partitions), "end of input commits every partition"


def test_null_and_empty_partition_values_go_to_the_default_partition_named_on_purpose_as_hive_names_it(
    bounded_sqlext: Runs,
) -> None:
    [sink] = [s for s in BOUNDED_SINKS if s.name == DEFAULT_NAME_SINK]
    flink = bounded_sqlext.landing("flink", sink)
    ours = bounded_sqlext.landing("sqlext", sink)
    assert f"p={FLINK_DEFAULT}" in flink.partitions and f"p={HIVE_DEFAULT}" in ours.partitions
    assert ours.renamed(HIVE_DEFAULT, FLINK_DEFAULT) == flink
    assert "`partition.default-name` defaults to `__HIVE_DEFAULT_PARTITION__`" in _differences()


def test_without_a_policy_kind_sqlext_writes_success_files_and_flink_none_on_purpose(bounded_sqlext: Runs) -> None:
    [sink] = [s for s in BOUNDED_SINKS if s.name == NO_POLICY_SINK]
    flink = bounded_sqlext.landing("flink", sink)
    ours = bounded_sqlext.landing("sqlext", sink)
    assert ours.rows == flink.rows
    assert flink.success == frozenset() and ours.success == frozenset(ours.partitions)
    assert "commits with `metastore,success-file`" in _differences()


def _differences() -> str:
    docs = Path(__file__).resolve().parents[3] / "docs" / "partition-commit.md"
    return docs.read_text().split("## Differences from Flink", 1)[1]


def test_batch_mode_commits_every_partition_even_one_whose_time_cannot_be_extracted(
    flink: Flink, sqlext_sql: Any, tmp_path: Path
) -> None:
    rows = [(i, START + timedelta(minutes=25 * i), ["x", "2026-01-01", "soon"][i % 3]) for i in range(9)]
    write_rows(tmp_path / "input", "rows.csv", rows)
    sink = Sink(
        "batch_unparseable",
        "id INT, p STRING",
        "p",
        {
            "sink.partition-commit.policy.kind": "success-file",
            "sink.partition-commit.trigger": "partition-time",
            "partition.time-extractor.timestamp-pattern": "$p 00:00:00",
        },
        "SELECT id, p FROM {src}",
        source="u_src",
    )
    runs = Runs(tmp_path, tmp_path / "input", [sink], [source_ddl("u_src", tmp_path / "input")])
    flink.run(runs.statements("flink"), mode="batch")
    run_sqlext_bounded(sqlext_sql, runs.statements("sqlext"), mode="batch")
    flink_landing, ours = runs.landing("flink", sink), runs.landing("sqlext", sink)
    assert flink_landing.partitions == {"p=x", "p=2026-01-01", "p=soon"}
    assert ours == flink_landing
    assert ours.success == frozenset(ours.partitions)


# -- a stream fed step by step ----------------------------------------------------------------------

STEPS: list[list[datetime]] = [
    [datetime(2026, 1, 1, 0, 10), datetime(2026, 1, 1, 0, 50)],
    [datetime(2026, 1, 1, 1, 20)],
    [datetime(2026, 1, 1, 2, 5)],
    [datetime(2026, 1, 1, 3, 30)],
]
LTZ_ZONE = "Asia/Shanghai"
STREAM_COMMON = {
    "sink.partition-commit.policy.kind": "success-file",
    "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
}
STREAM_SINKS = [
    _sink("s_partition_time_0", "s_src", **{**STREAM_COMMON, "sink.partition-commit.trigger": "partition-time"}),
    _sink(
        "s_partition_time_1h",
        "s_src",
        **{**STREAM_COMMON, "sink.partition-commit.trigger": "partition-time", "sink.partition-commit.delay": "1 h"},
    ),
    _sink("s_process_time_0", "s_src", **STREAM_COMMON),
    Sink(
        "s_ltz_1h",
        HOURLY_COLUMNS,
        "dt, `hr`",
        {
            **STREAM_COMMON,
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "sink.partition-commit.watermark-time-zone": LTZ_ZONE,
        },
        "SELECT id, ts, DATE_FORMAT(ts_ltz, 'yyyy-MM-dd'), DATE_FORMAT(ts_ltz, 'HH') FROM {src}",
        source="s_src_ltz",
    ),
]
#: How many steps later sqlext commits what Flink commits after a step, per trigger: none, as a batch
#: commits with the watermark that follows its own rows (sqlext.connectors.filesystem.event_time).
LAG = {"s_partition_time_0": 0, "s_partition_time_1h": 0, "s_process_time_0": 0, "s_ltz_1h": 0}


def test_a_stream_fed_step_by_step_commits_the_partitions_flink_commits(
    flink: Flink, sqlext_sql: Any, spark: Any, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    input_dir.mkdir()
    monitor = {"source.monitor-interval": "1 s"}
    ltz_extra = ", ts_ltz AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts_ltz AS ts_ltz - INTERVAL '0' SECOND"
    sources = [
        source_ddl("s_src", input_dir, WATERMARK, **monitor),
        source_ddl("s_src_ltz", input_dir, ltz_extra, **monitor),
    ]
    runs = Runs(tmp_path, input_dir, STREAM_SINKS, sources)
    checkpoints = tmp_path / "flink-checkpoints"
    job = flink.start(
        runs.statements("flink"),
        **{
            "execution.checkpointing.interval": "500 ms",
            "execution.checkpointing.dir": checkpoints.as_uri(),
            "table.local-time-zone": LTZ_ZONE,
            "table.exec.source.idle-timeout": "500 ms",
        },
    )
    queries = _start_sqlext_stream(sqlext_sql, spark, runs)
    flink_after: dict[str, list[frozenset[str]]] = {s.name: [] for s in STREAM_SINKS}
    ours_after: dict[str, list[frozenset[str]]] = {s.name: [] for s in STREAM_SINKS}
    try:
        next_id = 0
        for step, times in enumerate(STEPS):
            write_rows(input_dir, f"step-{step}.csv", [(next_id + n, ts, "a") for n, ts in enumerate(times)])
            next_id += len(times)
            _wait_flink_settled(runs, checkpoints, next_id)
            _wait_sqlext_settled(runs, queries, next_id)
            for sink in STREAM_SINKS:
                flink_after[sink.name].append(runs.landing("flink", sink).success)
                ours_after[sink.name].append(runs.landing("sqlext", sink).success)
    finally:
        flink.cancel(job)
        for query in queries.values():
            query.stop()
    for sink in STREAM_SINKS:
        lag = LAG[sink.name]
        expected = [frozenset()] * lag + flink_after[sink.name][: len(STEPS) - lag]
        assert ours_after[sink.name] == expected, f"{sink.name}: Flink {flink_after[sink.name]}, sqlext {ours_after}"
        assert flink_after[sink.name][-1], f"{sink.name}: Flink committed something"
        flink_rows = runs.landing("flink", sink).rows
        assert runs.landing("sqlext", sink).rows == flink_rows and sum(flink_rows.values()) == next_id
    assert "one batch later" not in _differences()


def _start_sqlext_stream(sql: Any, spark: Any, runs: Runs) -> dict[str, Any]:
    for statement in runs.statements("sqlext"):
        if not statement.startswith("INSERT"):
            sql(statement)
    queries = {}
    for sink in runs.sinks:
        # Flink's key, as the Flink job gets it (its TIMESTAMP watermarks are UTC: see "Differences").
        sql(f"SET 'table.local-time-zone' = '{LTZ_ZONE if sink.source == 's_src_ltz' else 'UTC'}'")
        try:
            [row] = sql(sink.insert()).collect()
        finally:
            sql("RESET 'table.local-time-zone'")
        running = running_insert(row.job_id)
        assert running is not None
        queries[sink.name] = running
    return queries


def _wait_flink_settled(runs: Runs, checkpoints: Path, rows: int) -> None:
    """Every row so far is in finished files of every sink, and three more checkpoints completed since:
    the watermark that followed the rows reached the committer and its commits are done."""
    for sink in runs.sinks:
        wait_for(
            lambda s=sink: sum(runs.landing("flink", s).rows.values()) >= rows, 120, what=f"Flink rows in {sink.name}"
        )
    wait_for_checkpoints(checkpoints, 3, after=completed_checkpoints(checkpoints))


def _wait_sqlext_settled(runs: Runs, queries: dict[str, Any], rows: int) -> None:
    """Every row so far is in every sink's partition dirs, and the batch that moved them has ended and is
    committed (with the overlapped commit, its policies may run after Spark reported its progress)."""
    for sink in runs.sinks:
        running = queries[sink.name]
        wait_for(lambda s=sink: sum(runs.landing("sqlext", s).rows.values()) >= rows, 120, what=f"rows in {sink.name}")
        path = runs.table_dir("sqlext", sink).as_uri()
        last = CommitLog(FileSystem(path), path).last_batch(running.query.name)
        assert last is not None
        wait_for(
            lambda r=running, b=last: (p := r.query.lastProgress) is not None and p["batchId"] >= b,
            120,
            what=f"sqlext batch {last} of {sink.name}",
        )
        assert running.wait_committed(120), f"sqlext batch {last} of {sink.name} still committing"
        assert running.query.exception() is None


# -- the session time zone and a failed commit --------------------------------------------------------


def test_table_local_time_zone_decides_the_partitions_of_timestamp_ltz_values_as_in_flink(
    flink: Flink, sqlext_sql: Any, tmp_path: Path
) -> None:
    write_rows(tmp_path / "input", "rows.csv", [(i, START + timedelta(minutes=50 * i), "a") for i in range(8)])
    sink = Sink(
        "ltz_zone",
        "id INT, dt STRING, `hr` STRING",
        "dt, `hr`",
        {"sink.partition-commit.policy.kind": "success-file"},
        "SELECT id, DATE_FORMAT(ts_ltz, 'yyyy-MM-dd'), DATE_FORMAT(ts_ltz, 'HH') FROM {src}",
        source="z_src",
    )
    source = source_ddl("z_src", tmp_path / "input", ", ts_ltz AS TO_TIMESTAMP_LTZ(ms, 3)")
    runs = Runs(tmp_path, tmp_path / "input", [sink], [source])
    flink.run(runs.statements("flink"), mode="batch", **{"table.local-time-zone": LTZ_ZONE})
    sqlext_sql(f"SET 'table.local-time-zone' = '{LTZ_ZONE}'")
    try:
        run_sqlext_bounded(sqlext_sql, runs.statements("sqlext"), mode="batch")
    finally:
        sqlext_sql("RESET 'table.local-time-zone'")
    flink_landing, ours = runs.landing("flink", sink), runs.landing("sqlext", sink)
    assert "dt=2026-01-01/hr=08" in flink_landing.partitions, "00:00 UTC is 08:00 in Shanghai"
    assert ours == flink_landing


def test_a_failed_commit_policy_fails_both_and_leaves_no_temporary_file_in_sqlext(
    flink: Flink, sqlext_sql: Any, tmp_path: Path
) -> None:
    write_rows(tmp_path / "input", "rows.csv", [(i, START + timedelta(minutes=50 * i), "a") for i in range(4)])
    sink = _sink("empty_success_name", "e_src", **{"sink.partition-commit.success-file.name": ""})
    runs = Runs(tmp_path, tmp_path / "input", [sink], [source_ddl("e_src", tmp_path / "input")])
    with pytest.raises(FlinkError):
        flink.run(runs.statements("flink"), mode="batch")
    with pytest.raises(SqlextError) as failure:
        run_sqlext_bounded(sqlext_sql, runs.statements("sqlext"), mode="batch")
    assert "sink.partition-commit.success-file.name" in str(failure.value)
    table = runs.table_dir("sqlext", sink)
    assert sorted(p.name for p in table.rglob("*") if p.name.endswith(".tmp")) == []
    assert not any(p.name.startswith(".dt=") for p in table.rglob("*"))
