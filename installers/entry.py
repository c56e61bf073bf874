"""The bundled program's entry point: the ``nlmeans-studio`` command of a pip install."""

import sys

from nlmeans_studio.gui.launcher import main

if __name__ == "__main__":
    sys.exit(main())
