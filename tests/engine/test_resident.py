"""ResidentFrames' bookkeeping on NumPy: which frames are uploaded, how many stay, and many threads at once."""

import random
import threading
import time

import numpy as np
import pytest

from nlmeans_studio.engine.gpu.device import DeviceFrame
from nlmeans_studio.engine.gpu.resident import ResidentFrames


class CountingUploads:
    """Slots of one float32 pixel; an upload writes the key into its slot and is recorded."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.made = 0
        self.uploaded: list[int] = []
        self.at_once: list[int] = []  # keys uploaded while another upload of them ran
        self._uploading: set[int] = set()
        self._lock = threading.Lock()

    def empty(self, shape, dtype) -> DeviceFrame:
        with self._lock:
            self.made += 1
        return DeviceFrame(np.empty((shape[2], shape[0], shape[1]), np.float32))

    def upload_into(self, frame: np.ndarray, out: DeviceFrame) -> None:
        key = int(frame[0, 0, 0])
        with self._lock:
            if key in self._uploading:
                self.at_once.append(key)
            self._uploading.add(key)
        time.sleep(self.delay)  # a copy over the bus: other threads run meanwhile
        out.planar[...] = np.moveaxis(frame, -1, 0)
        with self._lock:
            self._uploading.discard(key)
            self.uploaded.append(key)


def host_frame(key: int) -> np.ndarray:
    return np.full((1, 1, 1), key, np.float32)


def window(n: int, length: int, d: int = 1) -> list[int]:
    """Frame n's window with its ends clamped, as VapourSynth's filter asks for them."""
    return [min(max(n + k, 0), length - 1) for k in range(-d, d + 1)]


def test_consecutive_windows_upload_each_frame_once() -> None:
    uploads = CountingUploads()
    resident = ResidentFrames(uploads, spare=2)
    for n in range(10):
        with resident.held(window(n, 10), host_frame) as frames:
            assert [int(frame.planar[0, 0, 0]) for frame in frames] == window(n, 10)
    assert uploads.uploaded == list(range(10)) and resident.uploads == 10
    assert len(resident) <= 3 + 2 and uploads.made <= 3 + 2  # a window and the spares: slots reused


def test_a_window_asked_for_again_uploads_nothing() -> None:
    uploads = CountingUploads()
    resident = ResidentFrames(uploads, spare=0)
    first = resident.window([4, 5, 6], host_frame)
    assert resident.window([6, 5, 4], host_frame) == first[::-1] and uploads.uploaded == [4, 5, 6]


def test_frames_no_window_holds_beyond_spare_are_given_up_least_recently_used_first() -> None:
    uploads = CountingUploads()
    resident = ResidentFrames(uploads, spare=1)
    resident.window([0, 1], host_frame)
    resident.window([2], host_frame)  # 0 and 1 idle: 0 given up
    assert 0 not in resident and 1 in resident and len(resident) == 2
    with resident.held([3, 4], host_frame), resident.held([5], host_frame):  # held: kept, whatever spare says
        assert [key for key in range(6) if key in resident] == [2, 3, 4, 5]
    assert uploads.made == 4  # 2 and 3 took the slots 0 and 1 gave up


def test_eight_threads_asking_out_of_order_upload_each_frame_once_and_keep_held_slots() -> None:
    """As VapourSynth asks: its threads take the next outputs in turn, finishing them in any order."""
    length, d, threads = 48, 1, 8
    uploads = CountingUploads(delay=0.002)
    spare = threads + 2 * d  # as VapourSynth's filter keeps
    resident = ResidentFrames(uploads, spare=spare)
    rng = random.Random(0)
    order = [n for start in range(0, length, threads) for n in rng.sample(range(start, start + threads), threads)]
    pending = iter(order)
    lock = threading.Lock()
    wrong: list[tuple[int, list[int]]] = []
    most = [0]

    def work() -> None:
        while True:
            with lock:
                n = next(pending, None)
            if n is None:
                return
            with resident.held(window(n, length, d), host_frame) as frames:
                most[0] = max(most[0], len(resident))
                time.sleep(0.001)  # the filter runs: no other thread may reuse these slots meanwhile
                seen = [int(frame.planar[0, 0, 0]) for frame in frames]
                if seen != window(n, length, d):
                    wrong.append((n, seen))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not wrong and not uploads.at_once
    assert sorted(uploads.uploaded) == list(range(length)) == sorted(set(uploads.uploaded))  # each frame once
    assert most[0] <= threads * (2 * d + 1) + spare and uploads.made <= threads * (2 * d + 1) + spare


def test_a_shuffled_clip_with_room_for_it_uploads_each_frame_exactly_once_from_eight_threads() -> None:
    length = 24
    uploads = CountingUploads(delay=0.001)
    resident = ResidentFrames(uploads, spare=length)
    order = list(range(length)) * 2
    random.Random(1).shuffle(order)
    barrier = threading.Barrier(8)

    def work(part: list[int]) -> None:
        barrier.wait()
        for n in part:
            with resident.held(window(n, length), host_frame):
                pass

    workers = [threading.Thread(target=work, args=(order[i::8],)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(uploads.uploaded) == list(range(length))


def test_a_failed_upload_is_raised_to_its_waiters_and_tried_again_when_asked_for_again() -> None:
    uploads = CountingUploads()
    resident = ResidentFrames(uploads, spare=4)
    reading = threading.Event()

    def failing(key: int) -> np.ndarray:
        reading.set()
        time.sleep(0.2)  # the other thread now waits for frame 7, which this call claimed with 6
        raise OSError(f"frame {key} could not be read")

    errors: list[BaseException] = []

    def waiter() -> None:
        reading.wait(5)
        try:
            with resident.held([7], host_frame):
                pass
        except OSError as error:
            errors.append(error)

    other = threading.Thread(target=waiter)
    other.start()
    with pytest.raises(OSError, match="frame 6 could not be read"), resident.held([6, 7], failing):
        pass
    other.join()
    assert [str(error) for error in errors] == ["frame 6 could not be read"]
    assert 6 not in resident and 7 not in resident and resident.uploads == 0
    resident.window([6, 7], host_frame)
    assert uploads.uploaded == [6, 7]
