"""``python -m nlmeans_studio.engine``: the same command line as ``nlmeans-studio``."""

import os
import sys

try:
    from nlmeans_studio.engine.cli import main

    sys.exit(main())
except KeyboardInterrupt:  # Ctrl-C while the engine is imported; main() handles it afterwards
    print("nlmeans-studio: cancelled", file=sys.stderr)
    sys.exit(130)
except MemoryError:  # the engine's import found no room (a tight ulimit); main() says the rest
    os.write(2, b"nlmeans-studio: error: out of memory loading the engine; raise the limit (ulimit -v, ulimit -d)\n")
    os._exit(1)
