"""Plot the latest benchmark results (bench/results/*.json) into bench/results/summary.png.

python -m bench.plot        # needs matplotlib: pip install 'sqlext[bench]'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.common import RESULTS


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _bars(axis: Any, title: str, values: dict[str, float], unit: str) -> None:
    names = list(values)
    axis.bar(range(len(names)), [values[n] for n in names], color=["#4c72b0", "#dd8452", "#55a868", "#c44e52"])
    axis.set_xticks(range(len(names)), [n.replace(" ", "\n").replace("+", "+\n") for n in names], fontsize=7)
    axis.set_title(title, fontsize=9)
    axis.set_ylabel(unit, fontsize=8)


def _flink_bars(axis: Any, flink: dict[str, Any]) -> None:
    """Median seconds per variant, grouped by format/mode, with sqlext's ratio to Flink over each group."""
    groups = list(flink["medians"])
    variants = list(flink["medians"][groups[0]])
    width = 0.8 / len(variants)
    for index, variant in enumerate(variants):
        positions = [g + index * width for g in range(len(groups))]
        axis.bar(positions, [flink["medians"][g][variant] for g in groups], width, label=variant)
    for g, group in enumerate(groups):
        top = max(flink["medians"][group].values())
        axis.text(
            g + 0.4 - width / 2, top, f"{flink['ratios'][group]['sqlext_vs_flink']:.2f}x", ha="center", fontsize=7
        )
    axis.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups, fontsize=7)
    axis.set_title(f"whole process vs Flink ({flink['params']['rows'] / 1e6:g}M rows; sqlext vs flink)", fontsize=9)
    axis.set_ylabel("median s (lower is better)", fontsize=8)
    axis.legend(fontsize=7)


def main() -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(3, 3, figsize=(14, 11))
    throughput, registration = _load("sink_throughput"), _load("partition_registration")
    compaction, steady, flink = _load("compaction"), _load("steady_state"), _load("flink_sink")
    if throughput:
        rates = {name: value / 1e6 for name, value in throughput["rows_per_s"].items()}
        _bars(axes[0][0], f"sink throughput ({throughput['params']['rows'] / 1e6:g}M rows)", rates, "Mrows/s")
    if registration:
        _bars(axes[0][1], "registering 2,000 partitions", registration["partitions_per_s"], "partitions/s")
    if compaction:
        _bars(axes[0][2], "compaction of small parquet files", compaction["mb_per_s"], "MB/s")
    if steady:
        samples = steady["samples"]
        batches = [s["batch"] for s in samples]
        for name, values in steady["batch_seconds"].items():
            axes[1][0].plot(range(len(values)), values, lw=0.7, label=f"{name} batch")
        axes[1][0].plot(batches, [s["commit_s"] for s in samples], lw=0.5, ls=":", label="sqlext write + commit part")
        axes[1][0].set_title("seconds per batch", fontsize=9)
        axes[1][0].legend(fontsize=7)
        axes[1][1].plot(batches, [s["jvm_rss_mb"] for s in samples], lw=0.8, label="driver JVM RSS")
        axes[1][1].plot(batches, [s["python_rss_mb"] for s in samples], lw=0.8, label="driver Python RSS")
        axes[1][1].set_title("driver memory (MB) per batch", fontsize=9)
        axes[1][1].legend(fontsize=7)
        latency = steady["commit_latency"]
        axes[1][2].bar(range(len(latency)), [item["ms_from_due_batch_start"] for item in latency], color="#55a868")
        axes[1][2].set_title(
            "commit latency: ms from the start of the batch whose\nwatermark passes the partition", fontsize=9
        )
        axes[1][2].set_xlabel("partition (hour)", fontsize=8)
    if flink:
        _flink_bars(axes[2][0], flink)
    small_files = sorted(RESULTS.glob("sink_throughput_tasks*.json"))
    if small_files:
        many = json.loads(small_files[-1].read_text())
        rates = {name: value / 1e6 for name, value in many["rows_per_s"].items()}
        title = f"sink throughput, {many['params']['tasks']} files per partition per batch"
        _bars(axes[2][1], f"{title} ({many['params']['rows'] / 1e6:g}M rows)", rates, "Mrows/s")
    else:
        axes[2][1].set_axis_off()
    axes[2][2].set_axis_off()
    figure.tight_layout()
    target = RESULTS / "summary.png"
    figure.savefig(target, dpi=110)
    print(f"written {target}")
    return target


if __name__ == "__main__":
    main()
