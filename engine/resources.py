"""The files the app ships, found in one place.

The ``resources`` folder beside the engine's package, in a source tree (``resources/``), installed
(``nlmeans_studio/resources/``) and in the PyInstaller bundle alike.
"""

from pathlib import Path

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SAMPLE_CLIP = RESOURCES / "sample.mp4"  # the bundled clip the window opens with
PRESET_FOLDER = RESOURCES / "presets"  # the shipped presets, one JSON file each
ICON = RESOURCES / "icon.png"
