"""``python -m engine``: the same command line as ``nlmeans-studio``."""

import sys

from .cli import main

sys.exit(main())
