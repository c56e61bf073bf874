"""The command line, ``nlmeans-studio bench | denoise | denoise-volume | batch | estimate-noise ...``.

Its arguments (``arguments``), one module a video command (``denoise``, ``estimate``; the volume's
is ``engine.volume.cli``), ``still`` for one image in and out, a package for ``batch``, the entry
that runs them (``main``) and the wording of their errors (``errors``).
"""

from .main import main

__all__ = ["main"]
