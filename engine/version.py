"""The installed version of nlmeans-studio, as ``--version`` and the public ``__version__`` say it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nlmeans-studio")
except PackageNotFoundError:  # run from a source tree that was not installed
    __version__ = "0+unknown"
