"""``python -m icnd ...``: the same as the ``icnd`` console script."""

import sys

from .cli import main

sys.exit(main())
