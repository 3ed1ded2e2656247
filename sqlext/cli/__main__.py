"""``python -m sqlext.cli``."""

import sys

from sqlext.cli.main import main

sys.exit(main())
