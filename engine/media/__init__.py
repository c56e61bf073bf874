"""Media files in and out through PyAV, a module for each job.

FFmpeg's messages and errors (``ffmpeg``), what a file holds (``probe``), the frame index
(``frame_index``), reading (``reader``), the outputs there are (``formats``), writing (``writer``),
image sequences (``image_sequence``), one image in its own layout (``still_image``), y4m (``y4m``)
and y4m pipes (``pipe``), Y'CbCr <-> RGB (``yuv``), outputs written under a hidden name and
published when complete (``staged_output``), a source's sound copied into an output
(``copied_streams``) and segments of an output joined by stream copy (``join``).
"""
