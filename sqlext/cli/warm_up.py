"""``sqlext warm-up``: write the Spark driver's class data sharing archive (:mod:`sqlext.spark.class_sharing`) now.

Drivers that sqlext launches start from the archive once it is there (seconds faster each), but none is written
unasked: this command runs a small job that loads the classes a run loads (a session on the metastore, a
generated source streamed into a parquet table; both temporary, in a scratch dir with the checkpoints), then ends
its driver, which writes the archive (about 180 MB, two minutes on a busy 2-core machine). Run it again after
changing Java, pyspark or ``spark.driver.extraClassPath`` (each has its own archive); it replaces the one it finds.
It starts the embedded metastore, as ``sqlext run`` does, unless one is configured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from sqlext.cli.conf import command_conf
from sqlext.config import CHECKPOINT_ROOT, DRIVER_CLASS_SHARING, ClassSharing
from sqlext.errors import SqlextError

HELP = "write the Spark driver's class archive now: later drivers start seconds faster (about 200 MB)"

#: The job whose classes the archive keeps; ``{path}``: in a scratch dir, removed after.
WORKLOAD = """
CREATE TEMPORARY TABLE sqlext_warm_up_source (id BIGINT, name STRING) WITH (
  'connector' = 'datagen', 'number-of-rows' = '2000', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '0', 'fields.id.end' = '1999'
);
CREATE TEMPORARY TABLE sqlext_warm_up_sink (id BIGINT, name STRING, hr STRING) WITH (
  'connector' = 'filesystem', 'path' = '{path}', 'format' = 'parquet'
);
INSERT INTO sqlext_warm_up_sink SELECT id, name, CAST(id % 4 AS STRING) FROM sqlext_warm_up_source;
"""


def run_warm_up(args: argparse.Namespace) -> int:
    """Run :data:`WORKLOAD` with a driver set to write the archive, then end it and report the archive."""
    from sqlext.spark import class_sharing
    from sqlext.spark.runner import run_script

    conf = {**command_conf(args), DRIVER_CLASS_SHARING: ClassSharing.WRITE.value}
    archive = class_sharing.archive_path(conf)
    archive.unlink(missing_ok=True)  # replaced, not started from
    class_sharing.share_classes(conf, ClassSharing.WRITE)
    if class_sharing.writing() is None:
        raise SqlextError(
            "No class archive written: this driver cannot write one (the warning above says why, or the JVM options "
            "in SPARK_SUBMIT_OPTS / spark.driver.extraJavaOptions set class sharing themselves)."
        )
    with tempfile.TemporaryDirectory(prefix="sqlext-warm-up-") as scratch:
        conf[CHECKPOINT_ROOT] = Path(scratch, "checkpoints").as_uri()
        conf["spark.sql.warehouse.dir"] = Path(scratch, "warehouse").as_uri()
        code = run_script(WORKLOAD.replace("{path}", Path(scratch, "table").as_uri()), conf, source="sqlext warm-up")
        written = class_sharing.write_now()
    if code != 0:
        return code
    if written is None:
        raise SqlextError(f"The Spark driver ended without writing its class archive {archive}; see its log above.")
    print(f"wrote the Spark driver's class archive {written} ({written.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)
    return 0
