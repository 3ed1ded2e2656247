"""Spark's plain ``CREATE DATABASE [IF NOT EXISTS] name``, created through sqlext's metastore client exactly as
Spark's Hive catalog creates it.

The statement is Spark's (:mod:`sqlext.sql.ownership`), and the database it makes is Spark's: under
``spark.sql.warehouse.dir`` as ``<name>.db``, owned by Spark's user, no parameters. Spark would start its Hive
client for it (the Hive classes loaded, a Hive session, a metastore connection): seconds before a job's first
batch that a job which never asks Spark's catalog anything else does not need. So sqlext makes the same call on
its own client, when Spark's session catalog is the Hive catalog on the same metastore. Anything else (another
form, a catalog-qualified name, an existing database without ``IF NOT EXISTS``, whose error is Spark's to give)
is left to Spark.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlext.errors import ValidationError

if TYPE_CHECKING:
    from sqlext.catalog.hms import Catalog

_NAME = r"(?:[A-Za-z0-9_]+|`[A-Za-z0-9_]+`)"
_PLAIN = re.compile(rf"\s*CREATE\s+(?:DATABASE|SCHEMA)\s+(IF\s+NOT\s+EXISTS\s+)?({_NAME})\s*;?\s*", re.IGNORECASE)
#: The session catalog Spark builds when none is configured; another (Iceberg's, Delta's) creates its own way.
_SESSION_CATALOG = "spark.sql.catalog.spark_catalog"


def plain_create_database(sql: str) -> tuple[str, bool] | None:
    """``(name, if_not_exists)`` of ``CREATE DATABASE|SCHEMA [IF NOT EXISTS] name`` with nothing else, the name
    lower-cased as Spark stores it; None for any other statement."""
    found = _PLAIN.fullmatch(sql)
    if found is None:
        return None
    return found.group(2).strip("`").lower(), found.group(1) is not None


def create_as_spark(spark: Any, catalog: Catalog, metastore_uri: str, sql: str) -> bool:
    """Create the database of a plain ``CREATE DATABASE`` as Spark's Hive catalog would; False (nothing done)
    when Spark must run the statement itself."""
    statement = plain_create_database(sql)
    if statement is None or not _spark_catalog_is_this_metastore(spark, metastore_uri):
        return False
    name, if_not_exists = statement
    if catalog.database_exists(name):
        return if_not_exists  # else Spark's error for the existing one
    warehouse = str(spark.conf.get("spark.sql.warehouse.dir")).rstrip("/")
    try:
        catalog.create_database(name, location=f"{warehouse}/{name}.db", owner=spark.sparkContext.sparkUser())
    except ValidationError:  # created meanwhile: as above
        return if_not_exists
    return True


def _spark_catalog_is_this_metastore(spark: Any, metastore_uri: str) -> bool:
    conf = spark.sparkContext.getConf()
    return (
        conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"
        and spark.conf.get(_SESSION_CATALOG, None) is None
        and str(spark.conf.get("spark.hadoop.hive.metastore.uris", "")).strip() == metastore_uri.strip()
        and str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() != "true"
    )
