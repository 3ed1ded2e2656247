"""What sqlext's commands set up in the process they run in: log format and known third-party noise."""

from __future__ import annotations

import logging
import warnings

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def quiet_third_party_warnings() -> None:
    """Silence the warnings sqlext's commands cannot act on.

    pyspark warns on import that it "does not yet fully support pandas >= 3.0.0" whenever pandas 3 is
    installed (pyspark[connect] pulls it in). sqlext's commands use no pandas API, so the warning only
    tells a user of ``sqlext run`` about a package they did not choose; their own programs still see it.
    """
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


def setup_command_logging() -> None:
    """INFO logs on stderr, one line each; py4j quiet (it logs a line per JVM callback otherwise)."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    logging.getLogger("py4j").setLevel(logging.WARNING)
