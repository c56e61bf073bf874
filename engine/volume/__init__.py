"""The fully 3D filter of DESIGN.md §6 around its filters (``filters.volume_cpu``,
``filters.volume_gpu``): parameters (``params``), the driver over slabs and GPUs (``denoise``),
the noise estimate (``noise``), files (``io``) and the ``denoise-volume`` command (``cli``)."""
