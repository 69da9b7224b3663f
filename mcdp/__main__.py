"""``python -m mcdp``: the command line (:mod:`mcdp.cli`)."""

import sys

from mcdp.cli import main

sys.exit(main())
