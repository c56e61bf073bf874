"""The volume product.

The fully 3D filter of DESIGN.md §6 on the CPU (``filter_cpu``) and the GPU (``filter_gpu``), its
parameters (``params``), the checks both filters and the driver share (``checks``), the driver over
slabs and GPUs (``denoise``, ``slabs``), masks (``mask``), the noise estimate (``noise``), Rician
noise's bias removed (``rician``), files read (``io``) and written (``writer``), and the
``denoise-volume`` command (``cli``).
"""
