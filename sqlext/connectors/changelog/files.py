"""Change-event files of the filesystem connector: a message a line (as Flink's filesystem source reads a
deserialization format: split at line feeds), decoded by :mod:`.decoding`; an error names the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlext.connectors.changelog.decoding import ChangelogDecoding

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlext.table import TableDefinition

#: Reader options the text reader of change-event files takes from the table's.
_PASSED = ("ignoreCorruptFiles", "maxFilesPerTrigger", "maxFileAge")


def read_events(
    reader: Any, table: TableDefinition, format_options: Mapping[str, str], reader_opts: Mapping[str, str], paths: Any
) -> DataFrame:
    """The table's physical columns (partition keys as the strings of their directories), ``_metadata`` and
    the row kind, from the change events in its files."""
    from pyspark.sql import functions as F

    keys = {key.lower() for key in table.partition_keys}
    partition = [c for c in table.physical_columns if c.name.lower() in keys]
    data = tuple(c for c in table.physical_columns if c.name.lower() not in keys)
    schema = ", ".join(["value string", *(f"`{c.name}` string" for c in partition)])
    passed = {k: v for k, v in reader_opts.items() if k in _PASSED}
    lines = reader.format("text").schema(schema).options(**passed, lineSep="\n").load(paths)
    fmt = table.options["format"]
    decoding = ChangelogDecoding(table, fmt, format_options, data)
    location = F.concat(F.lit("file "), F.col("_metadata.file_path"))
    keep = [*(F.col(f"`{c.name}`") for c in partition), F.col("_metadata").alias("_metadata")]
    return decoding.decode(lines, F.col("value"), location, keep)
