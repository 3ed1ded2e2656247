-- Spark SQL statements, written for sqlext's transparency suite (tests/spark/test_spark_transparency.py).
-- Each block of lines (blocks are separated by blank lines) is one statement; a block of comment lines only
-- is a note. The suite runs every statement in a plain Hive-enabled session, drops what it made, runs them
-- again in a session extended with sqlext, and compares each outcome: the error class, or schema and rows.
-- A block with the line "-- shape-only" compares the schema and the number of rows (its values hold times);
-- elsewhere DDL times and plan expression ids are masked.
-- ${dir} is an empty directory, the same in both runs.

-- == databases, schemas, USE =========================================================================

CREATE DATABASE tp_a

CREATE DATABASE IF NOT EXISTS tp_a

CREATE DATABASE tp_a

-- a plain CREATE DATABASE is created by sqlext's own metastore client (Spark's Hive client not started for it):
-- the same location and owner as Spark's
DESCRIBE DATABASE tp_a

CREATE SCHEMA tp_b

CREATE SCHEMA IF NOT EXISTS tp_b COMMENT 'second' LOCATION '${dir}/tp_b_again'

CREATE DATABASE tp_c WITH DBPROPERTIES ('team' = 'data')

CREATE NAMESPACE tp_d

SHOW DATABASES LIKE 'tp_*'

SHOW SCHEMAS LIKE 'tp_a|tp_b'

SHOW NAMESPACES

DESCRIBE DATABASE tp_c

-- shape-only
DESCRIBE DATABASE EXTENDED tp_c

ALTER DATABASE tp_c SET DBPROPERTIES ('team' = 'platform')

USE tp_a

SELECT current_database()

USE NAMESPACE tp_b

SELECT current_database()

USE SCHEMA tp_c

SELECT current_schema()

USE IDENTIFIER('tp_' || 'b')

SELECT current_database()

USE SCHEMA IDENTIFIER('tp_a')

SELECT current_database()

USE tp_no_such_database

-- == tables: CREATE, CREATE LIKE, OPTIONS and TBLPROPERTIES ===========================================

CREATE TABLE src (id INT, name STRING, p STRING) USING parquet

CREATE TABLE tp_a.opts (a INT) USING parquet OPTIONS (compression 'snappy') TBLPROPERTIES (owner 'me', 'k2' = 'v2')

CREATE TABLE tp_a.opts_eq (a INT) USING parquet OPTIONS ('compression' = 'snappy') TBLPROPERTIES (t 'x')

CREATE TABLE tp_a.hive_src (id INT, name STRING COMMENT 'it\'s a name') STORED AS PARQUET

CREATE TABLE tp_a.parts (v INT, p STRING) USING parquet PARTITIONED BY (p)

CREATE TABLE tp_a.hive_parts (v INT) PARTITIONED BY (p STRING) STORED AS ORC

CREATE TABLE tp_a.ext (a INT, b STRING) USING csv LOCATION '${dir}/ext'

CREATE TABLE tp_a.ctas USING parquet AS SELECT 1 AS one, 'x' AS s

CREATE TABLE tp_a.copy LIKE tp_a.src

CREATE TABLE IF NOT EXISTS tp_a.copy LIKE tp_a.src

CREATE TABLE tp_a.copy_hive LIKE tp_a.hive_src

CREATE TABLE tp_a.copy_parquet LIKE tp_a.hive_src USING parquet TBLPROPERTIES ('made' = 'like')

CREATE TABLE tp_a.copy_missing LIKE tp_a.no_such_table

CREATE TABLE IDENTIFIER('tp_a.idt') (a INT) USING parquet

CREATE OR REPLACE TABLE tp_a.replaced (a INT) USING parquet

CREATE TABLE tp_a.commented (a INT COMMENT 'it\'s', b STRING COMMENT "double \"quoted\"") USING parquet COMMENT 'table\'s comment'

CREATE TABLE tp_a.src (id INT) USING parquet

CREATE TABLE tp_a.bad (a INT, WITH parquet

CREATE TABLE tp_a.bad_type (a FOO) USING parquet

-- == views, temporary views ===========================================================================

CREATE VIEW tp_a.v AS SELECT id, name FROM tp_a.src

CREATE TEMPORARY VIEW tv AS SELECT 1 AS x

CREATE OR REPLACE TEMPORARY VIEW tv2 (c COMMENT 'a column') AS VALUES (1), (2)

CREATE GLOBAL TEMPORARY VIEW gtv AS SELECT 'g' AS g

SELECT * FROM global_temp.gtv

SHOW VIEWS IN tp_a

-- == DML ==============================================================================================

INSERT INTO tp_a.src VALUES (1, 'one', 'x'), (2, 'two', 'y'), (3, 'it\'s', 'x')

INSERT INTO TABLE tp_a.src SELECT 4, 'four', 'y'

INSERT INTO tp_a.src (id, name, p) VALUES (5, 'five', 'z')

INSERT INTO tp_a.src BY NAME SELECT 'six' AS name, 6 AS id, 'z' AS p

INSERT INTO tp_a.parts PARTITION (p) SELECT id, p FROM tp_a.src

INSERT OVERWRITE tp_a.parts PARTITION (p = 'x') VALUES (100)

INSERT INTO IDENTIFIER('tp_a' || '.idt') VALUES (7)

WITH doubled AS (SELECT id * 2 AS id FROM tp_a.src) INSERT INTO tp_a.idt SELECT id FROM doubled

INSERT OVERWRITE TABLE tp_a.copy SELECT * FROM tp_a.src WHERE id > 4

INSERT INTO tp_a.no_such_table VALUES (1)

INSERT INTO tp_a.src VALUES (1)

INSERT OVERWRITE DIRECTORY '${dir}/dir_out' USING parquet SELECT 1 AS a

SELECT * FROM tp_a.src ORDER BY id

SELECT * FROM tp_a.parts ORDER BY p, v

SELECT * FROM tp_a.idt ORDER BY a

-- == SHOW / DESCRIBE ==================================================================================

SHOW TABLES

SHOW TABLES IN tp_a

SHOW TABLES FROM tp_a LIKE 'hive*|ct*'

SHOW TABLES IN tp_a 'p*'

SHOW TABLES LIKE 'tv*'

SHOW TABLES IN spark_catalog.tp_a LIKE 'src'

SHOW TABLES IN tp_no_such_database

-- shape-only
SHOW TABLE EXTENDED IN tp_a LIKE 'src'

SHOW TBLPROPERTIES tp_a.opts

SHOW TBLPROPERTIES tp_a.opts ('owner')

SHOW COLUMNS IN tp_a.src

SHOW PARTITIONS tp_a.parts

ALTER TABLE tp_a.hive_parts ADD PARTITION (p = 'x')

SHOW PARTITIONS tp_a.hive_parts PARTITION (p = 'x')

SHOW CREATE TABLE tp_a.src

SHOW CREATE TABLE src

SHOW CREATE TABLE tp_a.opts

SHOW CREATE TABLE tp_a.hive_src

SHOW CREATE TABLE tp_a.hive_src AS SERDE

SHOW CREATE TABLE tp_a.hive_parts AS SERDE

SHOW CREATE TABLE tp_a.v

SHOW CREATE TABLE tp_a.no_such_table

SHOW CREATE TABLE IDENTIFIER('tp_a.idt')

DESCRIBE tp_a.src

DESC src

DESC TABLE tp_a.parts

DESC tp_a.src name

DESCRIBE tp_a.src id

DESC tp_a.commented a

-- shape-only
DESC EXTENDED tp_a.src

-- shape-only
DESCRIBE TABLE EXTENDED tp_a.src name

-- shape-only
DESC FORMATTED tp_a.hive_parts

DESC tp_a.parts PARTITION (p = 'x')

DESC QUERY SELECT id, name FROM tp_a.src

DESCRIBE QUERY WITH t AS (SELECT 1 AS a) SELECT * FROM t

DESC IDENTIFIER('tp_a.idt')

DESC tv

DESC tp_a.v

DESC tp_a.no_such_table

DESCRIBE FUNCTION upper

SHOW FUNCTIONS LIKE 'uppe*'

SHOW USER FUNCTIONS

-- == ALTER ============================================================================================

ALTER TABLE tp_a.parts ADD PARTITION (p = 'added')

ALTER TABLE tp_a.parts PARTITION (p = 'added') RENAME TO PARTITION (p = 'renamed')

SHOW PARTITIONS tp_a.parts

ALTER TABLE tp_a.parts DROP PARTITION (p = 'renamed')

ALTER TABLE tp_a.src SET TBLPROPERTIES ('note' = 'set', reviewed 'yes')

ALTER TABLE tp_a.src UNSET TBLPROPERTIES ('note')

SHOW TBLPROPERTIES tp_a.src ('reviewed')

ALTER TABLE tp_a.src ADD COLUMNS (extra STRING COMMENT 'it\'s extra')

ALTER TABLE tp_a.src ALTER COLUMN extra COMMENT 'changed'

ALTER TABLE tp_a.copy RENAME TO tp_a.copy_renamed

ALTER TABLE tp_a.hive_src SET SERDEPROPERTIES ('serialization.format' = '1')

ALTER VIEW tp_a.v AS SELECT id FROM tp_a.src

ALTER TABLE tp_a.no_such_table ADD COLUMNS (x INT)

SELECT * FROM tp_a.copy_renamed ORDER BY id

-- == SET / RESET ======================================================================================

SET spark.sql.shuffle.partitions = 3

SET spark.sql.shuffle.partitions

SET spark.sql.ansi.enabled=false

SET spark.sql.no.such.key

SET `spark.sql.session.timeZone`=`UTC`

SET

SET -v

SET TIME ZONE 'America/Los_Angeles'

SET TIME ZONE LOCAL

RESET spark.sql.shuffle.partitions

SET spark.sql.shuffle.partitions

RESET `spark.sql.ansi.enabled`

RESET

SET

SET spark.sql.warehouse.dir=/elsewhere

RESET spark.sql.warehouse.dir

SET parallelism.default=2

SET parallelism.default

SET spark.sql.no-such-key=1

RESET spark.sql.no-such-key

SET `spark.sql.some-key`=`x`

-- == variables ========================================================================================

DECLARE VARIABLE tp_var INT DEFAULT 5

DECLARE OR REPLACE VARIABLE tp_name STRING

SET VAR tp_var = 7

SET VARIABLE tp_name = 'named'

SET VAR (tp_var, tp_name) = (SELECT 8, 'both')

SELECT tp_var, tp_name

SELECT session.tp_var + 1

DROP TEMPORARY VARIABLE tp_name

SELECT tp_name

-- == queries: CTEs, IDENTIFIER, hints, comments, escapes ==============================================

WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM a CROSS JOIN b

SELECT * FROM IDENTIFIER('tp_a.' || 'src') WHERE IDENTIFIER('id') = 1

SELECT IDENTIFIER('upper')('abc')

SELECT /*+ BROADCAST(b) */ a.id FROM tp_a.src a JOIN tp_a.parts b ON a.id = b.v ORDER BY a.id

SELECT /*+ COALESCE(1), NO_SUCH_HINT */ 1

/* a leading block comment */ SELECT 1 AS one -- and a trailing one

-- a leading line comment
SELECT 2 AS two

SELECT /* nested /* comment */ still a comment */ 3 AS three

SELECT 1 /* never closed

SELECT 'it\'s', "double \"quote\"", 'tab\there', 'back\\slash', 'uni\u0041'

SELECT 'a' 'b' AS adjacent, R'raw\n' AS raw

SELECT 'unterminated

SELECT `weird name` FROM (SELECT 1 AS `weird name`)

SELECT ';' AS semicolon_in_a_string

VALUES (1, 'a'), (2, 'b')

SELECT * FROM VALUES (1, 'a') AS t(id, s)

EXPLAIN SELECT 1

-- shape-only
EXPLAIN EXTENDED SELECT * FROM tp_a.src

SELECT nonexistent_function(1)

SELECT * FROM tp_a.no_such_table

SELECT 1 +

UNREFRESH TABLE tp_a.src

CREATE TEMPORARY FUNCTION tp_plus(x INT) RETURNS INT RETURN x + 1

SELECT tp_plus(41)

DROP TEMPORARY FUNCTION tp_plus

-- == DROP =============================================================================================

DROP TABLE tv

DROP TABLE tv

DROP TABLE IF EXISTS tv

DROP VIEW tv2

DROP VIEW global_temp.gtv

DROP TABLE IF EXISTS tp_a.no_such_table

DROP TABLE tp_a.no_such_table

DROP TABLE tp_a.v

DROP VIEW tp_a.v

DROP TABLE IDENTIFIER('tp_a.idt')

DROP TABLE tp_a.ctas PURGE

DROP TABLE tp_a.ext

DROP TABLE src

SHOW TABLES IN tp_a

DROP DATABASE tp_a

USE default

DROP DATABASE tp_a CASCADE

DROP SCHEMA IF EXISTS tp_b CASCADE

DROP NAMESPACE tp_c CASCADE

DROP DATABASE tp_d

DROP DATABASE IF EXISTS tp_d
