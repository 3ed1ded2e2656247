"""The change-event formats section of docs/connectors.md, from their declarations
(:mod:`sqlext.catalog.changelog_formats`)."""

from __future__ import annotations

from sqlext.catalog.changelog_formats import CHANGELOG_OPTIONS, METADATA


def render_reference() -> str:
    """The "Change-event formats" section of docs/connectors.md."""
    options = ["| format | option | type | default | description |", "|---|---|---|---|---|"]
    for fmt, declared in CHANGELOG_OPTIONS.items():
        for option in declared:
            options.append(
                f"| {fmt} | `{option.key}` | {option.type.name} | `{option.default_text}` | {option.description} |"
            )
    metadata = ["| format | key (Kafka: `value.<key>`) | type | from |", "|---|---|---|---|"]
    for fmt, keys in METADATA.items():
        for key, (flink_type, source) in keys.items():
            metadata.append(f"| {fmt} | `{key}` | `{flink_type}` | {source} |")
    return _REFERENCE.replace("{options}", "\n".join(options)).replace("{metadata}", "\n".join(metadata))


_REFERENCE = """## Change-event formats: debezium-json, canal-json, maxwell-json

`'format' = 'debezium-json'` (or `canal-json`, `maxwell-json`) on a filesystem table, or `'value.format'` on a
kafka table, reads change events as a changelog, as Flink 2.3 does: one json message a line (a record value),
each decoded into rows with a row kind. A kafka table of `'value.format'` (or `'format'`) =
`'debezium-avro-confluent'` (Debezium's envelope in Avro with a schema registry, see
[kafka.md](kafka.md#avro-with-a-schema-registry-avro-confluent-debezium-avro-confluent)) is a changelog source
in the same way: what follows about sinks, batch mode and the row kind holds for it too.

- **debezium-json**: `op` `c` or `r` -> `+I` of `after`; `u` -> `-U` of `before`, then `+U` of `after`; `d` ->
  `-D` of `before`. With `debezium-json.schema-include` = `true` the message is `{"schema": ..., "payload":
  {...}}`. A `u` or `d` without `before` fails with Flink's "REPLICA IDENTITY" message.
- **canal-json**: `type` `INSERT` -> `+I` of each row of `data`; `UPDATE` -> for each row, `-U` of the row of
  `old` laid over it (a field `old` does not hold is the row's), then `+U` of the row; `DELETE` -> `-D` of
  each row; `CREATE` (a DDL event) -> nothing. `canal-json.database.include` / `table.include` keep the
  messages whose `database` / `table` match the regular expression whole.
- **maxwell-json**: `type` `insert` / `update` / `delete`, as canal's with the one row of `data`.
- An empty message (a blank line, a Kafka tombstone) is skipped. A field is read from its json text, so a
  number given as a string (`"1"`, as canal writes every value) reads as Flink reads it.

Options (Flink's; checked at CREATE TABLE, unknown ones listed with what is supported):

{options}

Metadata columns (`METADATA FROM 'value.source.table'`) are the kafka connector's; Flink's filesystem
connector offers none of them (only `file.path` etc.), and neither does sqlext's:

{metadata}

**Bad input.** What Flink refuses fails the query with Flink's message, after the table and where the message
came from: `Table db.t, file file:/data/t/part-0.json: Unknown "op" value "x". The Debezium JSON message is
'{...}'` (kafka: `topic-partition-offset events-0-17`), also `Corrupt Debezium JSON message '...'.` for a line
that is not json and `Corrupt ... JSON message '...' (field 'id' is not a INT).` for a field that does not
read as its column's type. The micro-batch that reads it fails before anything of it is written, so nothing
is committed; the insert stops, and a restart fails on the same message. With
`<format>.ignore-parse-errors` = `true` such messages are skipped (Flink's too).

**Sinks.** A changelog can be written only into a sink that encodes changes: a filesystem table of format
`debezium-json`, `canal-json` or `maxwell-json`, which writes what Flink writes, line for line (each of the
three verified against Flink 2.3 on the same input, NULL fields with and without
`<format>.encode.ignore-null-fields` too, `tests/connectors/changelog/test_flink_changelog.py`): Flink cannot
pair a `-U` with its `+U`, so it writes `{"before":null,"after":{...},"op":"c"}` for `+I` and `+U` and
`{"before":{...},"after":null,"op":"d"}` for `-U` and `-D` (canal: `{"data":[{...}],"type":"INSERT"}` /
`"DELETE"`, maxwell: `{"data":{...},"type":"insert"}` / `"delete"`). As Flink's, the events hold only these
fields: no `source` or `ts_ms` (debezium), no `database`, `table`, `ts`, `es`, `id`, `old` or `pkNames` (canal),
no `database`, `table`, `ts`, `xid` or `old` (maxwell); values are json values (numbers as numbers, not canal's
strings). An insert-only query into such a sink writes every row as an insert. Before anything runs:

- an insert-only sink (json, csv, parquet, orc, avro, raw, and the other connectors' sinks) fed by a changelog
  query, filtered or not, is refused with Flink's reason: `Table sink 'db.out' doesn't support consuming update
  and delete changes which is produced by the source 'db.cdc' (format 'debezium-json'). ...` (Flink names its
  plan node, `TableSourceScan(table=[[default_catalog, default_database, cdc]], fields=[...])`, where sqlext
  names the source table and format);
- in batch mode (`SET 'execution.runtime-mode' = 'batch'`) an INSERT reading a changelog source is refused as
  Flink refuses it: `Querying a table in batch mode is currently only possible for INSERT-only table sources.
  But the source for table 'db.cdc' produces other changelog messages than just INSERT.` (sqlext adds what to
  do).

**How the row kind travels.** A changelog source's rows (of any of the four formats) carry their kind (`+I`,
`-U`, `+U`, `-D`, Flink's `RowKind.shortString()`) in a last column named `__sqlext_row_kind`. An INSERT from a
changelog into a change-event sink takes it along a projection and filter of the one table (`SELECT a, b FROM
cdc WHERE ...`, `SELECT *`; sqlext adds the column to the projection), and the sink reads it. A join,
aggregation, DISTINCT or set operation over a changelog (which Flink turns into another changelog) is refused. A
`SELECT` of such a table through `spark.sql` (or the Thrift server, the gateway) reads it through its connector,
a batch read of what is there, and shows every decoded row with its kind in that column, as Flink's SQL client
shows `op`: `SELECT * FROM cdc` returns `id, name, price, __sqlext_row_kind`. Spark reading the HMS table
directly (Hive, Trino, another Spark without sqlext) sees a text table of the events' lines, not rows.

### Differences from Flink (change-event formats)

- Flink refuses a batch `SELECT` of a changelog source too; sqlext's `spark.sql` `SELECT` reads it and shows
  the row kinds (a view of the events, not a changelog Spark applies).
- The refusal of an insert-only sink names the source table and format where Flink names its plan node.
- Errors name the table and the file or the topic-partition-offset (Flink's name the message only); a field
  that does not read as its type says which (Flink's `Corrupt ... JSON message` plus a Jackson cause).
- A projection and filter of one changelog table is what sqlext writes into a change-event sink; Flink also
  takes joins and aggregations (its planner's changelog of them).
- sqlext writes change-event files with Spark's text writer: named `part-...-c000.txt` (Flink's have no
  extension); the lines are Flink's.
- The timestamps of `TIMESTAMP` fields are read by Spark's cast, which takes both `SQL` and `ISO-8601` forms
  whatever `timestamp-format.standard` says; the writer writes the one it names.
"""
