"""GPU plumbing shared by the GPU filters: frames on the device and the kernels' compile cache
(``device``), the three-stream clip pipeline (``pipeline``), and work split over several GPUs
(``slabs``, ``video_devices``). Everything here takes CuPy as an argument or imports it lazily."""
