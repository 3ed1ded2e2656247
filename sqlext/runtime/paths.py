"""Where sqlext keeps its own files on the local machine, and where its packaged config lives."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def default_home() -> Path:
    """The directory for sqlext's local state: ``$SQLEXT_HOME``, else ``$XDG_DATA_HOME/sqlext``,
    else ``~/.local/share/sqlext``."""
    explicit = os.environ.get("SQLEXT_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser().resolve() / "sqlext"


def packaged_conf_dir() -> Path:
    """The directory holding the shipped config templates (``conf/`` in a checkout, ``sqlext/_conf``
    in an installed wheel)."""
    installed = Path(str(resources.files("sqlext"))) / "_conf"
    if installed.is_dir():
        return installed
    checkout = Path(__file__).resolve().parents[2] / "conf"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"sqlext's config templates are missing: looked in {installed} and {checkout}")


def packaged_sql_dir() -> Path:
    """The directory holding the shipped SQL files (``sql/`` in a checkout, ``sqlext/_sql`` in a wheel)."""
    installed = Path(str(resources.files("sqlext"))) / "_sql"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "sql"


def spark_submit_driver() -> Path:
    """The script to give spark-submit (see ``sqlext/drivers/spark_submit_driver.py``)."""
    return Path(__file__).resolve().parents[1] / "drivers" / "spark_submit_driver.py"


def pyspark_jars_dir() -> Path:
    """The ``jars`` directory of Spark (``$SPARK_HOME``, else the installed pyspark): Spark's and Hive
    2.3's jars."""
    import pyspark

    spark_home = os.environ.get("SPARK_HOME")
    jars = Path(spark_home).resolve() / "jars" if spark_home else Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise FileNotFoundError(f"pyspark is installed without its jars directory ({jars})")
    return jars
