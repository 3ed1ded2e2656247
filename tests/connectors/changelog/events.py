"""The change events the changelog tests read, in sqlext and in Flink 2.3 (the same files), and what Flink
2.3 read from them (row kind, id, name, price), measured with the same DDL (``test_flink_changelog.py`` checks
these against Flink itself)."""

from __future__ import annotations

from pathlib import Path

DEBEZIUM = [
    '{"before":null,"after":{"id":1,"name":"a","price":1.5},"op":"c","source":{"db":"inv","table":"products",'
    '"ts_ms":1700000000000},"ts_ms":1700000000100}',
    '{"before":null,"after":{"id":2,"name":"b","price":2.5},"op":"r","source":{"db":"inv","table":"products",'
    '"ts_ms":1700000000000},"ts_ms":1700000000200}',
    '{"before":{"id":1,"name":"a","price":1.5},"after":{"id":1,"name":"a2","price":3.5},"op":"u",'
    '"source":{"db":"inv","table":"products","ts_ms":1700000001000},"ts_ms":1700000001100}',
    '{"before":{"id":2,"name":"b","price":2.5},"after":null,"op":"d","source":{"db":"inv","table":"products",'
    '"ts_ms":1700000002000},"ts_ms":1700000002100}',
]
CANAL = [
    '{"data":[{"id":"1","name":"a","price":"1.5"},{"id":"2","name":"b","price":"2.5"}],"database":"inv",'
    '"es":1700000000000,"id":1,"isDdl":false,"old":null,"pkNames":["id"],"sql":"","sqlType":{"id":4},'
    '"table":"products","ts":1700000000100,"type":"INSERT"}',
    '{"data":[{"id":"1","name":"a2","price":"3.5"}],"database":"inv","es":1700000001000,"id":2,"isDdl":false,'
    '"old":[{"name":"a","price":"1.5"}],"pkNames":["id"],"table":"products","ts":1700000001100,"type":"UPDATE"}',
    '{"data":[{"id":"2","name":"b","price":"2.5"}],"database":"inv","es":1700000002000,"id":3,"isDdl":false,'
    '"old":null,"pkNames":["id"],"table":"products","ts":1700000002100,"type":"DELETE"}',
    '{"data":[{"id":"9","name":"z","price":"9.5"}],"database":"other","es":1700000002000,"id":4,"isDdl":false,'
    '"old":null,"table":"orders","ts":1700000002100,"type":"INSERT"}',
    '{"data":null,"database":"inv","es":1700000002000,"id":5,"isDdl":true,"old":null,"table":"products",'
    '"ts":1700000002100,"type":"CREATE","sql":"create table"}',
]
MAXWELL = [
    '{"database":"inv","table":"products","type":"insert","ts":1700000000,"xid":1,"commit":true,'
    '"data":{"id":1,"name":"a","price":1.5},"primary_key_columns":["id"]}',
    '{"database":"inv","table":"products","type":"update","ts":1700000001,"xid":2,"commit":true,'
    '"data":{"id":1,"name":"a2","price":3.5},"old":{"name":"a","price":1.5},"primary_key_columns":["id"]}',
    '{"database":"inv","table":"products","type":"delete","ts":1700000002,"xid":3,"commit":true,'
    '"data":{"id":1,"name":"a2","price":3.5},"primary_key_columns":["id"]}',
]
UNKNOWN_OP = [DEBEZIUM[0], '{"before":null,"after":{"id":3,"name":"x","price":1.5},"op":"x"}']
MALFORMED = [DEBEZIUM[0], '{"before":null,"after":{"id":3,']
BAD_FIELD = [DEBEZIUM[0], '{"before":null,"after":{"id":"three","name":"x","price":1.5},"op":"c"}']

MESSAGES = {"debezium-json": DEBEZIUM, "canal-json": CANAL, "maxwell-json": MAXWELL}

#: What Flink 2.3 read from each file (row kind, id, name, price), in order.
FLINK_READ = {
    "debezium-json": [
        ("+I", 1, "a", 1.5),
        ("+I", 2, "b", 2.5),
        ("-U", 1, "a", 1.5),
        ("+U", 1, "a2", 3.5),
        ("-D", 2, "b", 2.5),
    ],
    "canal-json": [
        ("+I", 1, "a", 1.5),
        ("+I", 2, "b", 2.5),
        ("-U", 1, "a", 1.5),
        ("+U", 1, "a2", 3.5),
        ("-D", 2, "b", 2.5),
        ("+I", 9, "z", 9.5),
    ],
    "maxwell-json": [("+I", 1, "a", 1.5), ("-U", 1, "a", 1.5), ("+U", 1, "a2", 3.5), ("-D", 1, "a2", 3.5)],
}
#: What Flink 2.3's debezium-json filesystem sink wrote for ``INSERT INTO sink SELECT * FROM`` the debezium file.
FLINK_DEBEZIUM_SINK = [
    '{"before":null,"after":{"id":1,"name":"a","price":1.5},"op":"c"}',
    '{"before":null,"after":{"id":2,"name":"b","price":2.5},"op":"c"}',
    '{"before":{"id":1,"name":"a","price":1.5},"after":null,"op":"d"}',
    '{"before":null,"after":{"id":1,"name":"a2","price":3.5},"op":"c"}',
    '{"before":{"id":2,"name":"b","price":2.5},"after":null,"op":"d"}',
]

#: What Flink 2.3's canal-json and maxwell-json filesystem sinks wrote for ``INSERT INTO sink SELECT * FROM`` the
#: debezium file: only ``data`` and ``type`` (Flink's serializers write no ``database``, ``table``, ``ts``, ``es``,
#: ``id``, ``xid`` or ``old``, so nothing differs run to run), an update as a delete and an insert.
FLINK_CANAL_SINK = [
    '{"data":[{"id":1,"name":"a","price":1.5}],"type":"INSERT"}',
    '{"data":[{"id":2,"name":"b","price":2.5}],"type":"INSERT"}',
    '{"data":[{"id":1,"name":"a","price":1.5}],"type":"DELETE"}',
    '{"data":[{"id":1,"name":"a2","price":3.5}],"type":"INSERT"}',
    '{"data":[{"id":2,"name":"b","price":2.5}],"type":"DELETE"}',
]
FLINK_MAXWELL_SINK = [
    '{"data":{"id":1,"name":"a","price":1.5},"type":"insert"}',
    '{"data":{"id":2,"name":"b","price":2.5},"type":"insert"}',
    '{"data":{"id":1,"name":"a","price":1.5},"type":"delete"}',
    '{"data":{"id":1,"name":"a2","price":3.5},"type":"insert"}',
    '{"data":{"id":2,"name":"b","price":2.5},"type":"delete"}',
]
#: Each change-event sink format's lines for the debezium file.
FLINK_SINK = {"debezium-json": FLINK_DEBEZIUM_SINK, "canal-json": FLINK_CANAL_SINK, "maxwell-json": FLINK_MAXWELL_SINK}


def write(directory: Path, lines: list[str]) -> Path:
    """``lines`` as the one file of ``directory``; the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "part-0.json").write_text("".join(line + "\n" for line in lines))
    return directory


def ddl(name: str, fmt: str, path: Path, extra: str = "", options: str = "") -> str:
    """The same DDL for Flink and sqlext."""
    return (
        f"CREATE TABLE {name} (id INT, name STRING, price DOUBLE{extra}) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = '{fmt}'{options})"
    )
