"""Media files in and out through PyAV: the frame index (``frame_index``), the reader and writer
(``video``), y4m pipes (``pipe``) and outputs written under a hidden name and published when
complete (``staged_output``)."""
