"""The file formats section of docs/connectors.md: each format's HMS descriptor, the forms sqlext writes,
the readers verified, and the differences from Flink."""

from __future__ import annotations

from sqlext.catalog.format_options import FORMAT_OPTIONS
from sqlext.catalog.hive_storage import hive_storage

#: What the SerDe parameters of each format's descriptor hold (docs).
_PARAMETER_NOTES = {
    "csv": (
        "`field.delim` and `serialization.format` (`csv.field-delimiter`, default `,`), `escape.delim` "
        "(`csv.escape-character`, default `\\`), `serialization.escape.crlf` = `true`, "
        "`serialization.null.format` (how NULL is written: `csv.null-literal`, default `\\N`, escaped when "
        "`csv.escape-character` is declared), `timestamp.formats` (so Hive and Trino read a `TIMESTAMP_LTZ` "
        "written with `Z`)"
    ),
    "json": (
        "`timestamp.formats` (so Hive's JSON SerDe and Trino read a `TIMESTAMP_LTZ` written with `Z`; with "
        "`json.timestamp-format.standard` `ISO-8601`, the `T` form), `path`; the table also gets Spark's "
        "provider parameters (`spark.sql.sources.provider` = `json`, the schema), so Spark reads it with its "
        "own json reader"
    ),
    "avro": (
        "`avro.schema.literal`: the table's Avro schema, Flink's (see below); the HMS columns are the types "
        "Hive's AvroSerDe reads that schema as (TINYINT, SMALLINT and TIME as `int`)"
    ),
    "raw": (
        "`serialization.last.column.takes.rest` = `true` (the line is the one column), `serialization.encoding` "
        "(`raw.charset`), `serialization.null.format` a line feed (no line reads as NULL)"
    ),
}
#: A sample of each format's data columns, for the descriptor (avro derives its schema literal from them).
_SAMPLE = {"avro": [("id", "INT", True)], "raw": [("line", "STRING", True)]}


def render_reference() -> str:
    """The file formats section of docs/connectors.md (see :mod:`sqlext.connectors.reference`)."""
    rows = ["| format | SerDe | input format / output format | SerDe parameters |", "|---|---|---|---|"]
    for fmt in ("parquet", "orc", "csv", "json", "avro", "raw"):
        storage = hive_storage(fmt, {}, _SAMPLE.get(fmt, ()))
        rows.append(
            f"| {fmt} | `{storage.serde}` | `{storage.input_format}` / `{storage.output_format}` | "
            f"{_PARAMETER_NOTES.get(fmt, 'none')} |"
        )
    options = ["| format | option | type | default | description |", "|---|---|---|---|---|"]
    for fmt, declared in FORMAT_OPTIONS.items():
        for option in declared:
            options.append(
                f"| {fmt} | `{option.key}` | {option.type.name} | `{option.default_text}` | {option.description} |"
            )
    return _REFERENCE.replace("{storage}", "\n".join(rows)).replace("{options}", "\n".join(options))


_REFERENCE = """## File formats of the filesystem connector

What a filesystem table of each format gets in the HMS, the form sqlext writes its files in, and which
readers were verified to read back every value exactly (`tests/connectors/filesystem/test_interop.py`: every
type sqlext maps, NULL in every column, each type's extremes, hostile strings with the delimiter, quotes,
backslash, `\\n`, `\\r`, tab, `\\x01`, NUL, non-ASCII and the empty string; after a batch insert, a
streaming insert, `sqlext compact`, and for parquet, orc and csv after `format("sqlext")`).

{storage}

Forms written:

- **parquet**: Hive's layout (Spark's `spark.sql.parquet.writeLegacyFormat=true`, given per write):
  decimals as fixed-length byte arrays, timestamps as INT96. `format("sqlext")` (pyarrow) writes the
  same physical types; compaction rewrites keep the layout the files have (INT96 read at microseconds).
- **orc**: Spark's orc writer (pyarrow for `format("sqlext")`). pyarrow reads ORC timestamps as
  nanoseconds only, so compaction leaves a partition holding a timestamp outside 1677-09-21 to
  2262-04-11 as it is (a warning says so).
- **csv**: Hive's `LazySimpleSerDe` text: fields never quoted; the escape character before the delimiter,
  itself and the quote character; a line feed / carriage return as `\\n` / `\\r`; NULL as the null literal
  (so an empty string stays empty), escaped when `csv.escape-character` is declared (see below); a string
  equal to the null literal with one more escape; `true`/`false`; decimals in plain notation; dates
  `yyyy-MM-dd`; timestamps `yyyy-MM-dd HH:mm:ss[.fff...]` (trailing zeros dropped; what Flink's csv reads
  too); `TIMESTAMP_LTZ` in UTC with a `Z` (`2026-01-02 03:04:05.5Z`, Flink's form; Hive reads it through
  `timestamp.formats`, at milliseconds); `TIME` as text; bytes in base64. ARRAY, MAP, MULTISET and ROW
  columns are refused at CREATE TABLE (as Flink's csv refuses them). sqlext's filesystem source reads this
  form, and also what Flink's csv writes: a field quoted with `csv.quote-character` (`""` for a quote inside;
  escapes inside only when `csv.escape-character` is declared, as Flink writes them), line breaks inside
  quotes (a file is read as lines, streamed and split across tasks, and the lines are joined into records on
  the executors' JVMs, in the memory of one record; Spark's streaming progress counts lines as input rows;
  `csv.disable-quote-character` = `true` reads line by line), the bare null literal, and an empty field of a
  non-string column as NULL.
- **avro**: Spark's Avro writer (`spark-avro`, see "avro and the spark-avro jar" below) with Flink's schema
  as `avroSchema`, so the files are what Flink's avro writes: a record named
  `org.apache.flink.avro.generated.record` (Flink's own writer makes the whole schema `["null", record]`,
  which Hive's AvroSerDe and Spark's Avro reader do not take; sqlext writes the record, which Flink reads, and
  reads Flink's files resolved against it), nullable columns as `["null", T]` unions (default `null`),
  TINYINT/SMALLINT/INT as `int`, BIGINT `long`, CHAR/VARCHAR/STRING `string`, BINARY/VARBINARY/BYTES
  `bytes`, DECIMAL(p, s) `bytes` with the `decimal` logical type (not Spark's default `fixed`), DATE `int`
  `date`, TIME(p <= 3) `int` `time-millis` (sqlext's TIME text `HH:mm:ss[.fff]` converted; other text fails
  the write naming column and value), TIMESTAMP(p <= 3) `long` `timestamp-millis` (not Spark's default
  `timestamp-micros`; the wall-clock value as UTC, as Flink writes it: shifted from the session time zone,
  verified in UTC sessions),
  ARRAY `array`, MAP with string keys `map`, MULTISET a `map` to `int`, ROW a record `record_<column>`;
  `avro.codec` (default `snappy`, Flink's) compresses. As in Flink (its `AvroSchemaConverter`'s messages),
  CREATE TABLE refuses TIMESTAMP(p > 3) and TIMESTAMP_LTZ with the legacy mapping (the default), p > 6
  without it, TIME(p > 3) and maps with non-string keys; and, as sqlext keeps TIME as text, a TIME inside
  an ARRAY, MAP or ROW. The partition statistics' `numRows` come from the blocks' headers (each block
  gives its record count; the data is not decoded).
- **raw**: one value a line, its bytes as they are (a STRING encoded in `raw.charset`), a line feed after
  each: how Flink's filesystem connector writes a serialization format. A value holding a line feed
  reads back as two records there and here. A raw table has exactly one data column (besides partition
  keys), STRING/VARCHAR/CHAR or BYTES/VARBINARY/BINARY (Flink's raw also writes numbers in binary, with
  `raw.endianness`; sqlext does not). A NULL fails the write, as Flink's writer fails on one. sqlext's
  source reads a record a line as Flink's does: split at line feeds, a carriage return before one dropped.
  The HMS gets `LazySimpleSerDe` text with the line as the one column (not yet verified with Hive or
  Trino; Hive's text binary base64-decodes a BYTES line that is valid base64).
- **json**: one object per line; timestamps `yyyy-MM-dd HH:mm:ss.ffffff` (`json.timestamp-format.standard`
  `SQL`, Flink's default; `ISO-8601` writes a `T`), `TIMESTAMP_LTZ` in UTC with a `Z` (Flink's form), dates
  `yyyy-MM-dd`, decimals as numbers, bytes in base64, NULL fields as `null`
  (`json.encode.ignore-null-fields` = `true` omits them); `json.encode.decimal-as-plain-number` = `true`
  writes every DECIMAL (in an ARRAY, a ROW or a MAP's values too) in plain notation with its declared scale,
  `0.00000010` for a `DECIMAL(10, 8)`, the text Flink writes (such a table's files are written by Spark's
  text writer: their names end in `.txt`), and the change-event formats' option does the same; by default a
  DECIMAL is written as Spark writes it, `1.0E-7`, `0E-8`, `12.50000000`, where Flink 2.3 writes `1E-7`, `0`,
  `12.5` (the same values for every reader); a DOUBLE/FLOAT NaN or infinity is written as
  Flink writes it, a string, unless `json.encode.non-finite-number.mode` says `NULL` or `FAIL` (see
  "Differences from Flink").
- csv and json options are checked as Flink's formats check them (booleans `true`/`false` only; not both
  `csv.disable-quote-character` and `csv.quote-character`; `json.timestamp-format.standard` exactly `SQL` or
  `ISO-8601`; `json.map-null-key.mode` `FAIL`, `DROP` or `LITERAL`; not both `json.fail-on-missing-field`
  and `json.ignore-parse-errors`), at CREATE TABLE and for reading and writing alike (see
  [partition-commit.md](partition-commit.md#differences-from-flink-on-purpose)).

Readers verified: Spark's native readers on the HMS table, Hive 2.3.10's SerDes as Spark runs them with
`spark.sql.hive.convertMetastoreParquet/Orc` = `false` (for csv the only path Spark has), and sqlext's
filesystem source, for every format; the json Hive SerDe is not run here (pyspark ships Hive 2.3 jars
without `hive-hcatalog-core`). Trino 476 through the metastore, for every format but avro and raw
(`tests/connectors/filesystem/test_trino.py`, marker `trino`; its Hive catalog with
`hive.timestamp-precision` = `MICROSECONDS`, else Trino rounds Spark's microseconds to milliseconds):
every value equal, except

- csv: a line feed or carriage return inside a string reads as the letter `n` or `r` (Trino ignores
  `serialization.escape.crlf`; LazySimpleSerDe text has no other way to hold them, its lines end at a line feed);
- json: a `BINARY`/`VARBINARY`/`BYTES` column reads as the bytes of its base64 text (Trino reads a json
  string into `varbinary` as Hive's JSON SerDe does; Flink's and Spark's json write bytes in base64):
  `from_base64(from_utf8(c))` gives the value;
- `TIMESTAMP_LTZ` in csv and json is read through `timestamp.formats`, at milliseconds.
- json: a NaN or infinity written as a string (`json.encode.non-finite-number.mode` = `STRING`, Flink's
  form) fails a Trino query reading its column on the whole file (the file's other columns read);
  `NULL`'s nulls read as NULL.

DuckDB 2.0.1 and Polars 2.1.0 by path, with no metastore
(`tests/connectors/filesystem/test_path_readers.py`: parquet, csv and json after a batch insert; neither
reads ORC). A by-path reader must skip what is not a committed data file: both read every file `*` matches,
names starting with `.` or `_` too, and `**` descends into `_sqlext/staging` (where a running insert's files
are; Polars' `hidden_file_prefix` skips file names only), so the glob is `<table>/[!_.]*/[!_.]*.<ext>`
(`parquet`, csv `txt`, `json`; `<table>/[!_.]*/[!_.]*/[!_.]*.<ext>` for two partition keys), with
`hive_partitioning = true` (Polars' csv and json readers have none: the key comes from the file's path,
`include_file_paths`). csv and json need the table's column types declared; a binary column is base64 text
(`from_base64(c)`, `str.decode("base64")`). What they read:

- parquet: every value (`read_parquet`, `scan_parquet`); Polars reads the INT96 timestamps as nanoseconds
  (9999-12-31 overflows to 2262) unless the schema gives `pl.Datetime("us")`;
- csv: DuckDB (`read_csv(..., header = false, auto_detect = false, delim = ',', quote = '', escape = '',
  nullstr = '\\N', columns = {...})`) and Polars (`scan_csv(..., has_header = False, quote_char = None,
  null_values = "\\N", empty_string_is_null = False, schema = {...})`) have no escape character outside
  quotes: a string holding a backslash, a quote or a line break reads as its escaped text (`back\\\\slash`,
  `say \\"hi\\"`, `line\\nbreak`), and a line with an escaped delimiter (`a\\,b`) has one field too many:
  DuckDB skips it with `ignore_errors = true` (else fails), Polars reads it with every later field one
  column late (`truncate_ragged_lines = True`, else fails). Every other value reads as written (the
  `\\N` NULLs, the empty string, `TIMESTAMP_LTZ`'s `Z` dropped: UTC; Polars reads timestamps as text, parsed
  with `str.to_datetime`). For text with such strings use parquet or json;
- json: DuckDB (`read_json(..., format = 'newline_delimited', columns = {...})`) reads every value. Polars
  (`scan_ndjson(..., schema = {...})`) reads a json number only as a double into a `DECIMAL` (its schema
  takes no Decimal for json: declare `pl.Float64` and cast), so a DECIMAL with more than 15 significant
  digits differs (`1234567890123456789.0123456789` reads `1234567890123456822.7576610816`), and panics on
  `pl.Int8`/`pl.Int16` in the schema (declare `pl.Int64` and cast); timestamps are parsed from their text
  (`str.to_datetime`, the `Z` stripped).

Dates and timestamps at the edges (`test_each_reader_of_the_date_and_timestamp_edge_cases`):

- **orc**: Spark's ORC writer stores a `DATE` and a `TIMESTAMP` in the hybrid Julian/Gregorian calendar
  (Hive's; the file's footer says `JULIAN_GREGORIAN`). Spark and Hive read 1582-10-04, 0001-01-01
  and 1000-01-01 back; Trino and pyarrow's ORC reader (by path; DuckDB 2.0.1 and Polars 2.1.0 read no ORC)
  ignore the footer and read 1582-10-14, 0000-12-30 and 1000-01-06 (Trino documents this), a timestamp's
  day likewise; pyarrow fails on a timestamp column with a value before 1677-09-21 (it reads ORC
  timestamps as nanoseconds only). Spark's rebase settings are for parquet and Avro only (ORC's own
  writer setting `orc.proleptic.gregorian`, which sqlext does not set:
  [readers.md](readers.md#dates-and-timestamps-before-1582-10-15)).
  A timestamp in the last second before 1970-01-01 00:00:00 UTC with a fraction (1969-12-31 23:59:59.999)
  reads one second late in every reader, Spark's own included: ORC's writer stores it with seconds 0,
  where readers take a second off negative seconds only (ORC-763, ORC-771). Use parquet for such values.
- **parquet** and **avro**: dates and timestamps as proleptic Gregorian days (Spark's rebase modes
  `CORRECTED`, set for each insert unless the session sets them): Spark (by path and, for parquet, through
  the HMS), sqlext's source, Trino and pyarrow (parquet) read every edge value as written; Hive 2.3.10's
  parquet and Avro SerDes read the days as hybrid ones (1582-10-04 as 1582-09-24, 0001-01-01 as
  0001-01-03, 1000-01-01 as 0999-12-27), a timestamp's day likewise: so does Spark's SELECT of an avro
  table in the HMS, which reads through Hive's `AvroSerDe`.
- Dates and timestamps from 1582-10-15 on read the same everywhere (but ORC's last second before 1970).
  A day Rome skipped (1582-10-05 to 1582-10-14) reads as 1582-10-15 from ORC, ten days early through
  Hive 2.3.10's parquet and Avro SerDes. Each reader and version, and the writer choices measured:
  [readers.md](readers.md#dates-and-timestamps-before-1582-10-15).

Options of the avro and raw formats (Flink's), and sqlext's one json option (the other csv and json options are
Flink's, see Flink's docs):

{options}

### avro and the spark-avro jar

Spark's Avro data source is not part of pyspark: a session that reads or writes an avro table needs
`org.apache.spark:spark-avro_2.13:4.2.0` (pyspark 4.3.0's own version is not on Maven Central; 4.2.0, the
newest served, is what the tests run on Spark 4.3.0):
`--conf spark.jars.packages=org.apache.spark:spark-avro_2.13:4.2.0`, or `--conf spark.jars=` the jars of
`sqlext.connectors.filesystem.spark_avro.jar_paths()` (fetched once into
`$SQLEXT_JARS_DIR`, as the tests do), or `ADD JAR`. Without it, an INSERT into or a read of an avro table
fails before anything runs, naming the table, the jar and these ways to add it. Nothing else needs the jar.
Readers verified for avro (`test_interop.py`): Spark through the HMS (a Hive avro table is read through
Hive's AvroSerDe, `spark.sql.hive.convertMetastore*` has no avro analog) and sqlext's source read every
value exactly, except that Hive has no TIME: through the AvroSerDe a TIME column is the `int` of Avro's
`time-millis` (milliseconds of the day); TINYINT and SMALLINT read as `int` there (same values); Flink 2.3
reads what sqlext wrote and sqlext what Flink wrote, every value equal (`test_flink_avro.py`); Trino 476
reads every value as Hive's AvroSerDe does (`test_trino.py`: the TIME as its milliseconds), with the
partitions' statistics, and old partitions after an `ALTER TABLE` added and widened columns.

### How a filesystem table is read

Flink reads a filesystem table by listing its directories: every file its checkpoints finalized, in the
`k=v` directories under `path`, whether or not a policy committed the partition. sqlext reads the same way
where a table's partitions are not in the metastore:

- **sqlext's own source** (`INSERT ... SELECT`, a streaming read with `source.monitor-interval`, an
  `OPTIONS` hint) always lists the table's directories, whatever its policies.
- **Spark** (`spark.sql`, `spark.table`, the Thrift server) reads through the metastore. A table with the
  `metastore` policy (one of the defaults) is read by the partitions that policy committed, as Hive and
  Trino read it. A partitioned parquet, orc or json table without it (Flink's "Full Example":
  `'sink.partition-commit.policy.kind' = 'success-file'`) is described to Spark as one of its own data
  source tables without `spark.sql.partitionProvider`, so Spark lists its `k=v` directories at each query
  and prunes them by the partition columns (`WHERE dt = '2020-05-20'` lists that partition's files only).
  A table created before this was done is described so by any `ALTER TABLE t SET (...)`.
- What is read: the files a batch's commit moved into their partition directory (sqlext's counterpart of
  Flink's finalized files): a batch is readable once it is committed, its partition's delay and success
  file notwithstanding. A running insert's files are staged under `<path>/_sqlext/`, and names starting
  with `_` or `.` (the success file, sqlext's own directories, hidden files) are never read. The files of
  one batch appear one by one as they are moved (in Flink, as a checkpoint's files are renamed).
- Spark keeps a data source table's listing with its plan: the session that runs the insert drops it after
  each batch; another Spark application that read the table before sees new files after
  `REFRESH TABLE t`.
- Hive, Trino and other metastore readers see no partition of such a table (none is in the metastore).
  A partitioned **csv** table without the `metastore` policy is read by no Spark query either (Spark's csv
  reader does not read Hive's escaped text, and Hive's reader takes the metastore's partitions): CREATE
  TABLE says so in a warning. Add `metastore` to its policies, or read it with sqlext's source.
- Flink's `partition.default-name` reads back as NULL in Spark only when it is Hive's
  `__HIVE_DEFAULT_PARTITION__` (sqlext's default); another name reads as that text.

A source's `path` must exist (Flink fails the job: "File ... does not exist"): an `INSERT` or `SELECT`
reading a table whose path does not exist fails naming it. Hive's metastore makes the directory of every
table it creates, external ones too (and Spark's Hive reader of an unpartitioned text table fails without
it), so the directory stays; CREATE TABLE marks one the metastore made (`_sqlext/made-at-create`), and a
source whose directory holds only that mark (nothing was ever written there) fails the same way, but for a
watched one (`source.monitor-interval`: a landing directory may wait for its first files), which says so in
a warning and waits. A sink's path may be missing: it is written into.

### Differences from Flink

csv, on purpose (so Hive reads what sqlext writes): `csv.escape-character` defaults to `\\` (Flink: none)
and `csv.null-literal` to `\\N` (Flink: none, NULL written as an empty field), and values are never quoted.
Flink's csv with its own defaults cannot hold what Hive needs: without an escape character a delimiter or
line break must be quoted (Hive's `LazySimpleSerDe` reads quotes as text and a quoted line break as two
rows), and without a null literal Flink writes a NULL and an empty string alike, and its reader refuses an
empty field of a non-string column (its own NULLs).

To read and write the same csv files in Flink and sqlext (and Hive), declare both options, the same DDL
in both engines:

```sql
'format' = 'csv', 'csv.escape-character' = '\\', 'csv.null-literal' = '\\N'
```

(string literals follow Flink's rules in sqlext too: a backslash is itself, a quote is doubled). Flink's
csv reader unescapes a field before it compares it with the null literal, so with a declared escape
character sqlext writes NULL escaped (`\\\\N`) and gives the HMS that text as `serialization.null.format`;
Hive, Flink and sqlext then all read NULL. What stays different, verified side by side
(`tests/connectors/filesystem/test_flink_files.py`, marker `flink`):

- a string equal to the null literal (`\\N` here): sqlext writes it with one more escape (`\\\\\\N`), and
  Hive and sqlext read it back; Flink reads NULL (a field equal to the literal after unescaping, quoted or
  not, is NULL to Flink; its own writer's output too);
- Flink's writer writes NULL as the bare literal (`\\N`), which Flink's own reader unescapes to `N`; sqlext's
  source reads it as NULL; Hive, given sqlext's `serialization.null.format`, reads `N`;
- files Flink wrote with its csv defaults: sqlext's source reads every value, except that a NULL string,
  bytes or `TIME` column (sqlext keeps a `TIME` as text) reads back empty, as in Flink (Flink writes
  NULL and empty alike);
- after the escape character Flink reads `t` as a tab and `0` as NUL; sqlext and Hive read the letter
  (sqlext never writes these);
- a null literal some string cannot be told apart from in Hive's form (`\\n` with escape `\\`) is refused
  at CREATE TABLE.

json: `TIMESTAMP_LTZ` is written in UTC with `Z` as Flink's json writes and reads it; sqlext's source
reads a timestamp with or without a zone suffix. Flink's filesystem source reads what sqlext wrote and
sqlext's source reads what Flink wrote (csv and json), every value equal, apart from the csv cases above.

json, NaN and infinities (`json.encode.non-finite-number.mode`, sqlext's own option: Flink refuses a DDL that
declares it). json has no number for a DOUBLE or FLOAT NaN, Infinity or -Infinity. Flink 2.3's json writer,
which has no option for them, writes the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (whether the value
comes from a cast, from arithmetic such as `1e308 * 10` or from a source; batch or streaming; Flink's planner
itself fails on a non-finite FLOAT constant, `CAST('NaN' AS FLOAT)`: "Infinite or NaN"), and its reader
reads those strings back (`"+Infinity"` and `"1e999"` too) but fails on the bare tokens `NaN`, `Infinity`
(Jackson's "Non-standard token 'NaN'"; `json.ignore-parse-errors` skips such a row). Those strings are read
back by Spark (and, by its source, Hive 4's JSON SerDe), but a Trino 476 query reading the column fails on
the whole file that holds one (`HIVE_CURSOR_ERROR ... Current token (VALUE_STRING) not numeric`: no row of
the file readable there; a query of the file's other columns reads),
and so do pyarrow's json reader ("changed from number to string") and, by its source, Hive 3's hcatalog
`JsonSerDe`. No json form of these values is read by every reader (the bare tokens: Spark and pyarrow read
them, Flink and Trino fail on them), so the table chooses:

- `STRING` (the default, what Flink writes and what sqlext wrote before the option): Flink's strings; Spark,
  Flink and sqlext's source read the values back; pyarrow cannot read the file, nor Trino the column;
- `NULL`: `null` (the value lost), which every reader reads; a `NOT NULL` column's own value cannot be
  null, so it fails the batch as `FAIL` does, saying so (values inside an ARRAY, MAP or ROW column and the
  nullable columns still get `null`; Flink's sink fails the same way when a null reaches a NOT NULL column);
- `FAIL`: a batch holding one fails, naming the table, the column (with its place inside an ARRAY, a MAP's
  values or a ROW, e.g. `a[*]`, `r.x`) and the value, and nothing of it is committed, so no file a Trino
  reader cannot read is written; filter the values out, or choose one of the others.

A table read by Trino or pyarrow should declare `NULL` or `FAIL`.

Verified: `tests/connectors/filesystem/test_json_non_finite.py` (what is committed in each mode; Spark
through the HMS, sqlext's source and pyarrow), `test_trino.py` (Trino on `STRING`'s file and `NULL`'s),
`test_flink_files.py` (what Flink writes, and Flink reading `STRING`'s file). A streaming insert runs the same
check on each micro-batch (verified for batch inserts only). The option is the json format's only: the
change-event formats (`debezium-json`, `canal-json`, `maxwell-json`) have no such option and write these
values as the strings, which is what Flink 2.3's serializers of those formats write too (compared in
`tests/connectors/changelog/test_flink_changelog.py`): a Trino or pyarrow reader of such files should filter
non-finite values out of the INSERT.

A partitioned source whose `path` does not exist: Flink reads no rows (it finds no partition); sqlext fails
naming the path, as both do for an unpartitioned one, so that a typo does not pass for an empty table.
"""
