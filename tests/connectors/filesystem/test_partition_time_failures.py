"""A streaming insert whose partition values the partition-time extractor cannot read fails at the batch that
brings them, naming the partition and the text, as Flink's job fails; the batches before stay committed."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.connectors.filesystem.sink import running_insert
from tests.support.extension import extended_session
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]


def test_an_insert_fails_at_the_first_partition_its_formatter_cannot_read(spark, tmp_path: Path) -> None:
    incoming = tmp_path / "in"
    incoming.mkdir()
    (incoming / "a.csv").write_text("1,20260401,2026-04-03 00:00:00\n")
    with extended_session(spark, tmp_path, "pt_fail") as session:
        sql = session.sql
        sql(f"""CREATE TABLE pt_fail.src (id INT, dt STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
                WITH ('connector' = 'filesystem', 'path' = '{incoming.as_uri()}',
                'format' = 'csv', 'source.monitor-interval' = '1 s')""")
        sql(f"""CREATE TABLE pt_fail.snk (id INT, dt STRING) PARTITIONED BY (dt) WITH ('connector' = 'filesystem',
                'path' = '{(tmp_path / "out").as_uri()}', 'format' = 'csv',
                'sink.partition-commit.trigger' = 'partition-time',
                'sink.partition-commit.policy.kind' = 'success-file',
                'partition.time-extractor.timestamp-pattern' = '$dt',
                'partition.time-extractor.timestamp-formatter' = 'yyyyMMdd')""")
        [job] = sql("INSERT INTO pt_fail.snk SELECT id, dt FROM pt_fail.src").collect()
        running = running_insert(job.job_id)
        assert running is not None
        try:
            wait_for(lambda: running.committer.progress.batches >= 1, 180, what="the first batch committed")
            hidden = incoming / ".b.csv"
            hidden.write_text("2,2026-04-02,2026-04-03 00:00:00\n")
            hidden.rename(incoming / "b.csv")
            wait_for(lambda: not running.query.isActive, 180, what="the insert to fail")
            failure = str(running.query.exception())
            assert "'dt=2026-04-02'" in failure and "'2026-04-02'" in failure and "yyyyMMdd" in failure
        finally:
            running.query.stop()
        assert (tmp_path / "out" / "dt=20260401").is_dir()
        assert not (tmp_path / "out" / "dt=2026-04-02").exists()
