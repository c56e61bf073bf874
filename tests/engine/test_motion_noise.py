"""The noise an encoder kept, read from the motion-compensated frame-to-frame change (issue 19)."""

import numpy as np
import pytest
from clips import DATA

from nlmeans_studio.engine.video.block_match_kernel import tile_mean_squares
from nlmeans_studio.engine.video.motion_noise import (
    ARTIFACT_SIGMA,
    BLOCK,
    CORRELATION_REACH,
    MATCH_GAP,
    MATCH_MARGIN,
    MAX_BLOCKS,
    _fit_degrees,
    _ring_match,
    compensated_change,
    kept_noise,
    motion_residuals,
)


@pytest.fixture(scope="module")
def picture() -> np.ndarray:
    """A textured clean picture larger than the tests' frames (bikes, tests/data), float64."""
    with np.load(DATA / "bikes_frames.npz") as archive:
        return archive["frames"][0].astype(np.float64) / 255


def moved_pair(picture: np.ndarray, motion: tuple[int, int], sigma: float, seed: int, size=(192, 256)):
    """Two frames of ``picture`` with the second one's content moved by ``motion`` (dy, dx)
    pixels, each with its own white noise of ``sigma`` levels."""
    rng = np.random.default_rng(seed)
    height, width = size
    dy, dx = motion
    first = picture[40 : 40 + height, 40 : 40 + width]
    second = picture[40 - dy : 40 - dy + height, 40 - dx : 40 - dx + width]
    return [frame + rng.normal(0, sigma / 255, frame.shape) for frame in (first, second)]


@pytest.mark.parametrize("motion", [(0, 0), (1, -2), (5, -9), (-20, 13), (33, -30)])
def test_the_change_after_motion_compensation_is_the_fresh_noise(picture, motion) -> None:
    # White noise of 6 levels new in each frame: (block - its match) / sqrt(2) has its covariance,
    # whatever the motion up to 34 pixels (4 x 8 coarse + 2 fine). Tolerance: the median of 192
    # block variances of 768 samples each (relative spread 5 % per block).
    first, second = moved_pair(picture, motion, 6, seed=1)
    covariances, corners = motion_residuals(first, second)
    assert len(covariances) == (192 // BLOCK) * (256 // BLOCK) and corners.shape == (len(covariances), 2)
    # Blocks whose match lies inside the frame (the rest match its edge-padded border).
    inside = np.all((corners >= 40) & (corners + BLOCK <= np.array([192, 256]) - 40), axis=1)
    variance = np.median(np.trace(covariances[inside], axis1=1, axis2=2) / 3)
    assert np.sqrt(variance) * 255 == pytest.approx(6, rel=0.1)
    np.testing.assert_allclose(covariances, np.swapaxes(covariances, 1, 2))


def test_without_motion_compensation_the_change_would_be_the_picture(picture) -> None:
    # The same frames compared in place change by 1.5 times the noise and more: the search is
    # what finds 6.
    first, second = moved_pair(picture, (5, -9), 6, seed=2)
    in_place = np.sqrt(np.median(((first - second) ** 2).mean(axis=-1)) / 2) * 255
    assert in_place > 9


def test_kept_noise_reads_the_quiet_quarter_plus_the_artifacts(picture) -> None:
    frames = moved_pair(picture, (3, 4), 6, seed=3)
    covariance, regions, samples = kept_noise(frames)
    sigmas = np.sqrt(np.trace(motion_residuals(*frames)[0], axis1=1, axis2=2) / 3)
    quartile = np.quantile(sigmas, 0.25)
    average = np.sqrt(np.trace(covariance) / 3)
    assert average == pytest.approx(np.sqrt(quartile**2 + ARTIFACT_SIGMA**2), rel=1e-9)
    assert len(regions) == int((sigmas <= quartile).sum()) and samples == len(regions) * BLOCK * BLOCK
    assert all(w == h == BLOCK and 0 <= x <= 256 - BLOCK and 0 <= y <= 192 - BLOCK for x, y, w, h in regions)


def test_clean_or_repeated_frames_are_not_taken_for_noise(picture) -> None:
    still = picture[:64, :96]
    assert kept_noise([still, still.copy()]) is None
    clean_motion = moved_pair(picture, (2, -3), 0, seed=4)
    assert kept_noise(clean_motion) is None
    # 1.5 levels of fresh noise is under the gate (MOTION_GATE, 2.5 levels): footage the
    # encoder left that little noise in is treated as clean.
    assert kept_noise(moved_pair(picture, (2, -3), 1.5, seed=4)) is None


def test_gray_frames_odd_sizes_and_one_block(picture) -> None:
    rng = np.random.default_rng(5)
    for shape in [(16, 16, 1), (37, 53, 1), (16, 40, 3), (70, 18, 3)]:
        frames = [picture[: shape[0], : shape[1], : shape[2]] + rng.normal(0, 0.03, shape) for _ in range(3)]
        covariance, regions, _ = kept_noise(frames)
        assert covariance.shape == (shape[2], shape[2]) and regions
        assert 0.02 < np.sqrt(np.trace(covariance) / shape[2]) < 0.045


def test_large_frames_match_a_bounded_number_of_blocks(picture) -> None:
    frame = np.tile(picture, (4, 2, 1))[:1080, :640]
    covariances, corners = motion_residuals(frame, frame)
    assert len(covariances) == MAX_BLOCKS
    # Spread over the whole frame, not its top rows.
    assert corners[:, 0].min() == 0 and corners[:, 0].max() >= 1080 - 2 * BLOCK


def test_the_flat_blocks_estimate_stands_where_the_moving_blocks_change_no_more(picture) -> None:
    frames = moved_pair(picture, (3, 4), 6, seed=6)
    assert kept_noise(frames, flat_sigma=5 / 255) is not None
    assert kept_noise(frames, flat_sigma=7 / 255) is None


@pytest.mark.parametrize(
    ("size", "radius", "tile"), [((17, 17), 8, (17, 17)), ((32, 30), 2, (8, 8)), ((5, 7), 1, (5, 7))]
)
def test_the_compiled_search_costs_each_shift_and_tile_as_float64_does(size, radius, tile) -> None:
    """The mean squared difference per shift and per tile (whole tiles from the top left corner),
    against float64 NumPy: a row of a tile is summed in float32, so within 1e-5 relative."""
    rng = np.random.default_rng(sum(size) + radius)
    height, width = size
    template = rng.random((4, height, width, 3), dtype=np.float32)
    region = rng.random((4, height + 2 * radius, width + 2 * radius, 3), dtype=np.float32)
    costs = tile_mean_squares(template, region, radius, *tile)
    rows, cols = height // tile[0], width // tile[1]
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            squares = (template.astype(np.float64) - region[:, dy : dy + height, dx : dx + width]) ** 2
            tiles = squares[:, : rows * tile[0], : cols * tile[1]].reshape(4, rows, tile[0], cols, tile[1], 3)
            expected = tiles.mean(axis=(2, 4, 5)).reshape(4, -1)
            np.testing.assert_allclose(costs[:, dy, dx], expected, rtol=1e-5)


def test_frames_too_small_for_a_block_and_its_margin_give_no_change() -> None:
    frames = np.random.default_rng(4).random((2, 16, 24, 3))
    change, degrees, corners = compensated_change(*frames)
    assert change.shape == (0, BLOCK, BLOCK, 3) and degrees.shape == (0, 3) and corners.shape == (0, 2)


def test_the_fit_s_degrees_of_freedom_are_its_residual_s_share_of_correlated_noise() -> None:
    """tr((I - P) R) against float64 dense matrices written from its definition: P the fit's
    projection on random terms, R a 4:2:0-like correlation between the block's pixels (0.66 a
    pixel across, 0.75 and 0.3 down); white noise leaves the pixels less the terms. Within 1e-3
    (the sums run in float32)."""
    rng = np.random.default_rng(7)
    terms = rng.standard_normal((3, BLOCK * BLOCK, 16))
    inverse = np.linalg.pinv(terms)
    correlation = np.zeros((2 * CORRELATION_REACH + 1, 2 * CORRELATION_REACH + 1, 2))
    centre = CORRELATION_REACH
    correlation[centre, centre] = 1.0
    for (dy, dx), value in {(0, 1): 0.66, (1, 0): 0.75, (2, 0): 0.3, (1, 1): 0.5}.items():
        for sy, sx in ((dy, dx), (-dy, -dx)):
            correlation[centre + sy, centre + sx, 1] = value
    rows, cols = np.divmod(np.arange(BLOCK * BLOCK), BLOCK)
    lag_y, lag_x = rows[None, :] - rows[:, None], cols[None, :] - cols[:, None]
    inside = (np.abs(lag_y) <= centre) & (np.abs(lag_x) <= centre)
    for channel in range(2):
        dense = np.where(
            inside,
            correlation[np.clip(lag_y + centre, 0, 2 * centre), np.clip(lag_x + centre, 0, 2 * centre), channel],
            0,
        )
        expected = [np.trace((np.eye(BLOCK * BLOCK) - t @ i) @ dense) for t, i in zip(terms, inverse, strict=True)]
        np.testing.assert_allclose(_fit_degrees(terms, inverse, correlation)[:, channel], expected, atol=1e-3)
    np.testing.assert_allclose(_fit_degrees(terms, inverse, correlation)[:, 0], BLOCK * BLOCK - 16, atol=1e-3)


def test_a_match_is_chosen_on_the_ring_around_the_block() -> None:
    """The ring's cost against float64: the mean squared difference of the 3 x 3-blurred windows
    over the pixels more than MATCH_GAP from the block's, at each shift; a difference inside the
    block, however large, changes nothing."""
    rng = np.random.default_rng(8)
    side = BLOCK + 2 + 2 * MATCH_MARGIN
    template = rng.random((2, side, side, 3), dtype=np.float32)
    region = rng.random((2, side + 4, side + 4, 3), dtype=np.float32)
    cost, shift = _ring_match(template, region, 2)

    def blurred(a: np.ndarray) -> np.ndarray:
        return sum(a[:, y : y + a.shape[1] - 2, x : x + a.shape[2] - 2] for y in range(3) for x in range(3)) / 9

    t, r = blurred(template.astype(np.float64)), blurred(region.astype(np.float64))
    # Blurred pixel j averages the window's j .. j + 2; the block's derivative window is the
    # window's MATCH_MARGIN .. MATCH_MARGIN + BLOCK + 1.
    j = np.arange(t.shape[1])
    near = (j + 2 >= MATCH_MARGIN - MATCH_GAP) & (j <= MATCH_MARGIN + BLOCK + 1 + MATCH_GAP)
    ring = ~(near[:, None] & near[None, :])
    costs = np.array(
        [
            [
                [np.mean(((t[n] - r[n, dy : dy + t.shape[1], dx : dx + t.shape[2]]) ** 2)[ring]) for dx in range(5)]
                for dy in range(5)
            ]
            for n in range(2)
        ]
    )
    best = costs.reshape(2, -1).argmin(axis=1)
    np.testing.assert_allclose(cost, costs.reshape(2, -1)[[0, 1], best], rtol=1e-4)
    np.testing.assert_array_equal(shift, np.stack(np.divmod(best, 5), axis=1) - 2)
    inner = slice(MATCH_MARGIN, MATCH_MARGIN + BLOCK + 2)  # the block's window itself
    changed = template.copy()
    changed[:, inner, inner] += 5
    np.testing.assert_array_equal(_ring_match(changed, region, 2)[1], shift)
