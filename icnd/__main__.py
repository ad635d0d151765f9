"""``python -m icnd ...``: the same as the ``icnd`` console script."""

import sys

from icnd.cli import main

sys.exit(main())
