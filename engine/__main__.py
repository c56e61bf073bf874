"""``python -m nlmeans_studio.engine``: the same command line as ``nlmeans-studio``."""

import sys

try:
    from nlmeans_studio.engine.cli import main

    sys.exit(main())
except KeyboardInterrupt:  # Ctrl-C while the engine is imported; main() handles it afterwards
    print("nlmeans-studio: cancelled", file=sys.stderr)
    sys.exit(130)
