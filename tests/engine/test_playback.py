"""Render-ahead playback (engine.video.playback): every frame in order, bounded, thread-safe."""

import subprocess
import sys
import threading

import numpy as np
import pytest

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.video.playback import RenderAhead
from nlmeans_studio.engine.video.preview import ArrayFrames, Previewer, SyntheticNoise

PARAMS = NLMParams(h=40, patch_radius=1, search_radius=1)


@pytest.fixture
def previewer() -> Previewer:
    clip = np.random.default_rng(3).integers(0, 256, (9, 12, 16, 3), dtype=np.uint8)
    return Previewer(ArrayFrames(clip), "cpu")


def test_render_ahead_stops_when_full_and_resumes_when_a_frame_is_taken(previewer) -> None:
    playback = RenderAhead(previewer, PARAMS, None, 2, 9, ahead=3)
    while playback.render_next():
        pass
    assert playback.rendered == 3 and not playback.done and playback.frames_per_second > 0
    assert playback.take(3).index == 3  # frame 2 leaves the buffer unseen
    assert playback.render_next() and playback.render_next() and not playback.render_next()  # 4, 5, 6 held
    assert playback.rendered == 5
    assert playback.take(2) is None and playback.take(5).index == 5


def test_a_consumer_thread_gets_every_frame_equal_to_the_still_render(previewer) -> None:
    playback = RenderAhead(previewer, PARAMS, None, 1, 9, ahead=2)
    shown = []

    def show() -> None:
        index = playback.start
        while index < playback.stop:
            preview = playback.take(index)
            if preview is None:
                threading.Event().wait(0.001)
                continue
            shown.append(preview)
            index += 1

    consumer = threading.Thread(target=show)
    consumer.start()
    while not playback.done:
        if not playback.render_next():
            threading.Event().wait(0.001)
    consumer.join(timeout=60)
    playback.close()
    assert [preview.index for preview in shown] == list(range(1, 9))
    still = Previewer(previewer.source, "cpu")
    for preview in shown:
        np.testing.assert_array_equal(preview.after, still.render(preview.index, PARAMS).after)


def test_cancel_ends_the_run(previewer) -> None:
    playback = RenderAhead(previewer, PARAMS, None, 0, 9)
    assert playback.render_next()
    playback.cancel()
    assert playback.done and not playback.render_next() and playback.take(0) is None
    playback.close()


@pytest.mark.parametrize(
    ("start", "stop", "ahead", "message"),
    [(3, 3, 4, "0 <= start < stop <= 9, got 3, 3"), (0, 10, 4, "got 0, 10"), (0, 4, 0, "ahead must be at least 1")],
)
def test_bad_ranges_are_refused(previewer, start, stop, ahead, message) -> None:
    with pytest.raises(ValueError, match=message):
        RenderAhead(previewer, PARAMS, None, start, stop, ahead=ahead)


@pytest.mark.gpu
def test_gpu_playback_is_within_one_level_of_the_cpu_still(previewer) -> None:
    played = list(Previewer(previewer.source, "gpu").play(0, 9, PARAMS, SyntheticNoise(20)))
    assert [preview.index for preview in played] == list(range(9))
    for preview in played:
        still = previewer.render(preview.index, PARAMS, SyntheticNoise(20)).after
        # The GPU rounds to uint8 on the device: float32 sums on a half step may round the other way.
        assert np.abs(preview.after.astype(np.int16) - still).max() <= 1


def test_playback_runs_without_qt() -> None:
    """The render-ahead is the engine's: it imports and plays where Qt is missing."""
    code = (
        "import sys\n"
        "for name in ('PySide6', 'pyqtgraph', 'nlmeans_studio.gui'): sys.modules[name] = None\n"
        "import numpy as np\n"
        "from nlmeans_studio.engine import NLMParams\n"
        "from nlmeans_studio.engine.video.playback import RenderAhead\n"
        "from nlmeans_studio.engine.video.preview import ArrayFrames, Previewer\n"
        "clip = ArrayFrames(np.zeros((3, 8, 8, 3), np.uint8))\n"
        "playback = RenderAhead(Previewer(clip, 'cpu'), NLMParams(h=20, patch_radius=1, search_radius=1), None, 0, 3)\n"
        "while playback.render_next(): pass\n"
        "print([playback.take(i).index for i in range(3)])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 1, 2]"
