"""A source's audio and subtitle streams, copied untouched into an output and cut to a span.

``VideoWriter`` copies them after the frames it encodes; ``join_segments`` after the segments it
joins. Either way they are copied once, in one pass over the source, in sync with the picture.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .probe import VideoInfo, open_input
from .tags import keep_track


class CopiedStreams:
    """The audio and subtitle streams of ``info``'s file, added to ``container``; ``copy`` muxes their packets.

    Parameters
    ----------
    info : VideoInfo
        The source.
    container : av.container.OutputContainer
        The output, before its header is written.
    span : (float, float)
        The part of the source the output's picture is, in seconds from its frame 0 (start, end):
        packets are cut to it and shifted to start with the picture.
    demuxer : av.container.InputContainer, optional
        The source opened at its start (``VideoReader.demuxer``); by default ``info.path`` is
        opened again. Closed by ``close``.
    """

    def __init__(
        self, info: VideoInfo, container: Any, span: tuple[float, float] = (0.0, math.inf), demuxer: Any = None
    ) -> None:
        self._source = open_input(info.path) if demuxer is None else demuxer
        streams = [*self._source.streams.audio, *self._source.streams.subtitles]
        self._outputs = {stream.index: container.add_stream_from_template(stream) for stream in streams}
        for index, output in self._outputs.items():  # a second track's language: "fra", not "und"
            keep_track(output, self._source.streams[index])
        self._span = (info.start_time + span[0], info.start_time + span[1])  # on the source's clock
        # From the picture's first frame, the packets that lead into it are kept, as FFmpeg's command
        # keeps them: those that end there (AAC's and Opus's priming, without which the first samples
        # decode wrong) and those that start less than a frame before it (a file's sound a few ms
        # ahead: Vorbis's first packet, 2 ms, without which the next one's first 13 ms are lost too).
        # A lead of a frame or more is the export's own (``sound_lead``). MP4 and MOV hold times before
        # 0 (an edit list), Matroska Opus's priming (CodecDelay); elsewhere the muxer shifts the
        # streams by the lead, in sync.
        self._lead_in = span[0] == 0
        self._lead_window = 1 / float(info.frame_rate) if self._lead_in else 0.0  # seconds

    def copy(self, mux: Callable[[Any], None]) -> None:
        """Pass each packet within the span, retimed and restreamed, to ``mux``; then close the source.

        A packet whose decoding time is not after its stream's last (a DVD's AC3 repeats one) is
        moved one tick later, as FFmpeg's own command does: MP4 refuses it, at the file's end.
        """
        last_dts: dict[int, int] = {}
        try:
            streams = [self._source.streams[index] for index in self._outputs]
            for packet in self._source.demux(streams):  # one pass for all
                if packet.dts is not None and packet.pts is not None and self._shift_into_span(packet):
                    index = packet.stream.index
                    if index in last_dts and packet.dts <= last_dts[index]:
                        packet.dts = last_dts[index] + 1
                        packet.pts = max(packet.pts, packet.dts)
                    last_dts[index] = packet.dts
                    packet.stream = self._outputs[index]
                    mux(packet)
        finally:
            self.close()

    def _shift_into_span(self, packet: Any) -> bool:
        """Whether a packet starts within the span, or leads into it from the picture's first frame.

        If so, its timestamps are made relative to the span's start, as the video's are. A packet
        that starts before the span is left out whole, but where ``_lead_in`` one that ends at its
        start or later, or starts less than a frame before it: sound stays in sync, and a range's
        may start up to one audio frame late.
        """
        start, end = self._span
        begins = packet.pts * packet.time_base
        ends = (packet.pts + (packet.duration or 0)) * packet.time_base
        leads = self._lead_in and begins < start and (ends >= start or start - begins < self._lead_window)
        if not (start <= begins < end or leads):
            return False
        offset = round(start / packet.time_base)
        packet.pts, packet.dts = packet.pts - offset, packet.dts - offset
        if not self._lead_in:
            packet.dts = max(0, packet.dts)
        return True

    def close(self) -> None:
        """Close the source (idempotent)."""
        self._source.close()
