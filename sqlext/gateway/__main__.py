"""``python -m sqlext.gateway --port N [--host H] [--master M] [--conf k=v ...]``: run the gateway in the
foreground (``sqlext gateway start`` runs this in the background)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sqlext.runtime.console import quiet_third_party_warnings, setup_command_logging


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sqlext.gateway", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--master", help="Spark master (default: spark.master, else local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark conf")
    args = parser.parse_args(argv)
    quiet_third_party_warnings()
    setup_command_logging()
    conf = {key: value for key, _, value in (pair.partition("=") for pair in args.conf)}

    from sqlext.errors import SqlextError
    from sqlext.gateway.server import run

    try:
        return run(args.host, args.port, args.master, conf)
    except SqlextError as exc:
        print(f"sqlext gateway: error: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
