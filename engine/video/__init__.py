"""The video product.

The filter's parameters (``params``), its window filters (``filters``), the clip denoisers
(``denoiser``, ``luma_chroma``, ``guided``, ``several_gpus``, chosen by ``clip_denoiser``) and the
GPU pipeline they drive (``gpu_pipeline``); the noise, measured (``noise``, ``motion_noise`` and
its compiled search ``block_match_kernel``),
turned into a strength (``choose_h``, ``sure``, ``default_filter``) and made (``synthetic_noise``);
the window's previews and playback (``preview``, ``playback``), the export of a file (``export``),
presets (``presets``) and the sample clip (``sample``).
"""
