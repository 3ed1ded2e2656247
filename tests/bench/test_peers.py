"""bench/peers.py's variant parsing, run order and ratios (the bench itself is not part of the test run)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import peers


def _keys(chosen: list[peers.Peer]) -> list[str]:
    return [peer.key for peer in chosen]


def test_a_spark35_variant_brings_its_baseline_spark_35_sink() -> None:
    assert _keys(peers.parse_variants("h,p")) == ["s35", "p", "h"]


def test_sqlext_brings_spark_4_sink_and_order_follows_the_table() -> None:
    assert _keys(peers.parse_variants("q, hm")) == ["s", "q", "s35", "hm"]


def test_an_unknown_variant_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(SystemExit, match=r"--variants 'q,x': unknown x; allowed: s, q, i, s35, p, pm, h, hm"):
        peers.parse_variants("q,x")


def test_runs_are_interleaved_a_b_b_a() -> None:
    chosen = peers.parse_variants("q,p")
    assert [_keys(peers.run_order(chosen, repeat)) for repeat in range(3)] == [
        ["s", "q", "s35", "p"],
        ["p", "s35", "q", "s"],
        ["s", "q", "s35", "p"],
    ]


def test_each_ratio_is_to_its_own_sparks_sink() -> None:
    def result(median: float, best: float) -> dict[str, float]:
        return {"median_s": median, "best_s": best}

    ratioed = peers.with_ratios(
        {"s": result(10, 8), "q": result(8, 8), "s35": result(20, 16), "p": result(40, 20), "h": result(10, 8)}
    )
    assert {key: (r["baseline"], r["ratio_median"], r["ratio_best"]) for key, r in ratioed.items()} == {
        "s": ("s", 1.0, 1.0),
        "q": ("s", 1.25, 1.0),
        "s35": ("s35", 1.0, 1.0),
        "p": ("s35", 0.5, 0.8),
        "h": ("s35", 2.0, 2.0),
    }


def test_a_ratio_without_its_baseline_measured_is_left_out() -> None:
    ratioed = peers.with_ratios({"p": {"median_s": 4.0, "best_s": 3.0}})
    assert "ratio_median" not in ratioed["p"]


def test_spark35_variants_run_under_the_spark35_python() -> None:
    spark35 = Path("/venv35/bin/python")
    assert peers.interpreter(peers.PEERS["hm"], spark35) == str(spark35)
    assert peers.interpreter(peers.PEERS["q"], spark35) == sys.executable


def _progress(batch: int, rows: int, timestamp: str, ms: int) -> dict[str, object]:
    return {"batchId": batch, "numInputRows": rows, "timestamp": timestamp, "durationMs": {"triggerExecution": ms}}


def test_batch_ends_read_pyspark_35_dicts_and_pyspark_4_objects_alike() -> None:
    progress = [
        _progress(1, 5, "2026-11-22T00:00:10.000Z", 2000),
        _progress(0, 5, "2026-11-22T00:00:00.000Z", 1500),
        _progress(2, 0, "2026-11-22T00:00:20.000Z", 10),
    ]
    start = 1_795_305_600.0  # 2026-11-22T00:00:00Z
    expected = [(start, start + 1.5), (start + 10, start + 12)]
    assert peers._batch_ends(SimpleNamespace(recentProgress=progress)) == expected
    objects = [SimpleNamespace(**fields) for fields in progress]
    assert peers._batch_ends(SimpleNamespace(recentProgress=objects)) == expected


def _run(tmp_path: Path) -> peers.Run:
    return peers.Run(tmp_path / "input", tmp_path / "work", "p_r0", "thrift://unused:9083")


def test_spark35_runtimes_are_the_ones_maven_central_serves() -> None:
    assert peers.PEERS["p"].candidates == ("org.apache.paimon:paimon-spark-3.5:0.9.0",)
    assert peers.PEERS["h"].candidates == ("org.apache.hudi:hudi-spark3.5-bundle_2.12:1.0.2",)
    assert {peers.PEERS[key].spark for key in ("s35", "p", "pm", "h", "hm")} == {"3.5"}


def test_hudi_commits_are_read_from_a_1_0_timeline_in_utc(tmp_path: Path) -> None:
    run = _run(tmp_path)
    timeline = run.table_dir / ".hoodie" / "timeline"
    timeline.mkdir(parents=True)
    for name in (
        "20261202172001500_20261202172003250.commit",
        "20261202172000100_20261202172001000.commit",
        "20261202172001500.commit.requested",
        "20261202172001500.inflight",
        "20261202172004000_20261202172004100.clean",
    ):
        (timeline / name).write_text("{}")
    at = datetime(2026, 12, 2, 17, 20, 1, tzinfo=UTC).timestamp()
    assert peers._hudi_visible(None, run, 2) == [at, at + 2.25]


def test_paimon_batches_are_its_append_snapshots_in_id_order(tmp_path: Path) -> None:
    run = _run(tmp_path)
    snapshots = peers._paimon_table_dir(run) / "snapshot"
    snapshots.mkdir(parents=True)
    for snapshot_id, kind, millis in ((2, "APPEND", 3000), (1, "APPEND", 1500), (3, "COMPACT", 4000)):
        snapshot = {"id": snapshot_id, "commitKind": kind, "timeMillis": millis}
        (snapshots / f"snapshot-{snapshot_id}").write_text(json.dumps(snapshot))
    (snapshots / "LATEST").write_text("3")
    assert peers._paimon_visible(peers._paimon_table_dir)(None, run, 2) == [1.5, 3.0]
