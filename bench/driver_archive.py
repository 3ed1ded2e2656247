"""What the driver's class data sharing archive saves: a whole ``sqlext run`` of a tiny batch file, with and without.

    python -m bench.driver_archive [--repeats 3]

``sqlext warm-up`` writes the archive into a cache dir of its own (timed: what asking for it costs, once); then
``sqlext run`` of a batch insert of 100 generated rows into a parquet table runs ``--repeats`` times in turn with
that cache dir (the driver starts from the archive, the default ``spark.sqlext.driver.class-sharing=existing``)
and with an empty one (no archive: what a default run costs now). Each is a whole process, wall time, on a
metastore started once before. Prints the load average around the runs; writes bench/results/driver_archive.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench.common import median, metastore, print_table, scratch_dir, timed, write_result

SCRIPT = """
CREATE DATABASE IF NOT EXISTS bench_archive;
CREATE TABLE IF NOT EXISTS bench_archive.src (id BIGINT, name STRING) WITH ('connector' = 'datagen',
  'number-of-rows' = '100');
CREATE TABLE IF NOT EXISTS bench_archive.t (id BIGINT, name STRING) WITH ('connector' = 'filesystem',
  'path' = '{path}', 'format' = 'parquet');
SET 'execution.runtime-mode' = 'batch';
INSERT INTO bench_archive.t SELECT id, name FROM bench_archive.src;
"""


def _sqlext(args: list[str], cache: Path, uri: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"}  # a test suite's own archive
    env |= {"XDG_CACHE_HOME": str(cache), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "sqlext.cli", *args, "--metastore-uri", uri, "--conf", "spark.ui.enabled=false"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    work = scratch_dir()
    job = work / "tiny.sql"
    job.write_text(SCRIPT.replace("{path}", (work / "table").as_uri()))
    with metastore(work) as hms:
        loads = [os.getloadavg()[0]]
        warm_up = timed(lambda: _sqlext(["warm-up"], work / "with", hms.uri))
        [archive] = (work / "with" / "sqlext" / "class-sharing").glob("*.jsa")
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(repeats):
            for name in times:
                times[name].append(timed(lambda name=name: _sqlext(["run", str(job)], work / name, hms.uri)))
                loads.append(os.getloadavg()[0])
    assert not (work / "without" / "sqlext" / "class-sharing").exists(), "a default run wrote an archive"
    rows = [[name, " ".join(f"{t:.1f}" for t in values), f"{median(values):.1f}"] for name, values in times.items()]
    print_table(["archive", "sqlext run, s", "median"], rows)
    print(f"warm-up: {warm_up:.1f} s, archive {archive.stat().st_size / 1e6:.0f} MB; load average {loads}")
    result = {"repeats": repeats, "seconds": times, "warm_up_s": warm_up, "archive_bytes": archive.stat().st_size}
    print(write_result("driver_archive", {**result, "load_average": loads}))


if __name__ == "__main__":
    main()
