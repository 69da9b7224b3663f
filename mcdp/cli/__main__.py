"""``python -m mcdp.cli``: the same command line as ``mcdp`` and ``python -m mcdp``."""

import sys

from mcdp.cli import main

sys.exit(main())
