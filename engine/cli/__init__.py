"""The command line, ``nlmeans-studio bench | denoise | denoise-volume | estimate-noise ...``.

Its arguments (``arguments``), one module a video command (``denoise``, ``estimate``; the volume's
is ``engine.volume.cli``), and the entry that runs them and words their errors (``main``).
"""

from .main import main

__all__ = ["main"]
