"""NLMeans Studio's filter in VapourSynth scripts, with KNLMeansCL's parameters.

``nlmeans_studio.vapoursynth.NLMeans(clip, d=1, a=2, s=4, h=1.2, ...)`` takes the arguments of
KNLMeansCL's ``knlm.KNLMeansCL`` and of ``nlm_ispc.NLMeans`` (the same filter on the CPU) with
their meanings, and runs the engine's filter of docs/DESIGN.md §1 on the CPU or a GPU. Interior
pixels equal nlm_ispc's; the borders, the ends of the clip (unless ``temporal_ends="clamp"``) and
the RGB distance follow our definition (the function's Notes say how far they differ).

This package imports VapourSynth, which the engine never does: it sits above the engine's public
face, as the window does, and installs with ``pip install -e ".[peers]"`` (Python >= 3.12).
"""

from .nlmeans import NLMeans

__all__ = ["NLMeans"]
