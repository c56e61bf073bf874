"""GPU plumbing shared by the GPU filters: frames on the device and the kernels' compile cache (``device``).

Everything here takes CuPy as an argument or imports it lazily.
"""
