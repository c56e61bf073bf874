"""Volume files (engine/volume/io.py, engine/volume/writer.py), the noise estimate of volumes
(engine/volume/noise.py) and the ``denoise-volume`` command."""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from clips import CLI, default_signals, run_cli, stopped_under_way

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.engine.cli import main
from nlmeans_studio.engine.volume.io import read_volume
from nlmeans_studio.engine.volume.noise import estimate_volume_noise, suggest_volume_h
from nlmeans_studio.engine.volume.writer import lost_in, write_volume

NIFTI = Path(__file__).parents[1] / "data" / "mni152_t1_crop.nii.gz"
nibabel = pytest.importorskip("nibabel")
tifffile = pytest.importorskip("tifffile")


def test_nifti_round_trip_keeps_the_grid_and_type(tmp_path) -> None:
    source = read_volume(NIFTI)
    assert source.data.shape == (22, 24, 20) and source.data.dtype == np.uint8  # (z, y, x) of the file's (i, j, k)
    assert np.array_equal(source.data, np.asarray(nibabel.load(NIFTI).dataobj).transpose(2, 1, 0))
    write_volume(tmp_path / "out.nii.gz", source.data.astype(np.float32) + 0.4, source)
    written = nibabel.load(tmp_path / "out.nii.gz")
    assert written.get_data_dtype() == np.uint8
    np.testing.assert_array_equal(written.affine, nibabel.load(NIFTI).affine)
    assert written.header.get_zooms() == nibabel.load(NIFTI).header.get_zooms()
    np.testing.assert_array_equal(read_volume(tmp_path / "out.nii.gz").data, source.data)  # rounded back
    assert [p.name for p in tmp_path.iterdir()] == ["out.nii.gz"]  # no hidden file left


def test_a_niftis_directions_are_read_from_its_affine_unless_it_has_none(tmp_path) -> None:
    """The direction each (z, y, x) index grows towards, from the affine's nearest world axes (an
    oblique grid included); none from a NIfTI whose qform and sform codes are 0, nor from a TIFF."""
    turn = np.radians(20)  # an oblique grid: j turned 20 degrees from A towards S, k from S towards P
    affine = np.array(
        [[-1, 0, 0, 0], [0, np.cos(turn), -np.sin(turn), 0], [0, np.sin(turn), np.cos(turn), 0], [0, 0, 0, 1]]
    )
    image = nibabel.Nifti1Image(np.zeros((10, 11, 12), np.int16), affine)
    nibabel.save(image, tmp_path / "oblique.nii.gz")
    assert read_volume(tmp_path / "oblique.nii.gz").directions == ("S", "A", "L")
    image.set_sform(None, code=0)
    image.set_qform(None, code=0)
    nibabel.save(image, tmp_path / "unknown.nii.gz")
    assert read_volume(tmp_path / "unknown.nii.gz").directions is None
    tifffile.imwrite(tmp_path / "stack.tif", np.zeros((10, 11, 12), np.uint8))
    assert read_volume(tmp_path / "stack.tif").directions is None


def test_tiff_stack_keeps_voxel_size_and_float_data(tmp_path) -> None:
    stack = np.random.default_rng(0).random((6, 7, 8), dtype=np.float32)
    tifffile.imwrite(tmp_path / "in.tif", stack, imagej=True, resolution=(2.0, 2.0), metadata={"spacing": 3.0})
    source = read_volume(tmp_path / "in.tif")
    assert source.spacing == (3.0, 0.5, 0.5)
    write_volume(tmp_path / "out.tif", stack * 2, source)
    written = read_volume(tmp_path / "out.tif")
    assert written.spacing == (3.0, 0.5, 0.5) and written.data.dtype == np.float32
    np.testing.assert_array_equal(written.data, stack * 2)


def test_npy_round_trip_and_refusals(tmp_path) -> None:
    volume = np.random.default_rng(1).random((5, 6, 7, 2), dtype=np.float32)
    np.save(tmp_path / "in.npy", volume)
    source = read_volume(tmp_path / "in.npy")
    write_volume(tmp_path / "out.npy", volume, source)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), volume)
    with pytest.raises(FileExistsError, match="exists; use --overwrite"):
        write_volume(tmp_path / "out.npy", volume, source)
    with pytest.raises(ValueError, match="not a volume file"):
        read_volume(tmp_path / "in.mp4")
    np.save(tmp_path / "flat.npy", np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"one 2D image of shape \(4, 4\), not a volume \(Z, Y, X\) or \(Z, Y, X, C\)"):
        read_volume(tmp_path / "flat.npy")
    np.save(tmp_path / "five.npy", np.zeros((2, 4, 4, 4, 1)))
    with pytest.raises(ValueError, match=r"an array of shape \(2, 4, 4, 4, 1\); a volume is \(Z, Y, X\) or"):
        read_volume(tmp_path / "five.npy")
    nibabel.save(nibabel.Nifti1Image(np.zeros((8, 8, 8, 3), np.float32), np.eye(4)), tmp_path / "series.nii")
    with pytest.raises(ValueError, match="the volume filter takes one 3D volume"):
        read_volume(tmp_path / "series.nii")


@pytest.mark.parametrize("rician", [False, True])
def test_noise_estimate_on_the_template(rician) -> None:
    clean = read_volume(NIFTI).data.astype(np.float64)
    rng = np.random.default_rng(2)
    sigma = 8.0
    noisy = clean + rng.normal(0, sigma, clean.shape)
    if rician:  # magnitude of a complex signal: Rician, Gaussian where the signal is well above sigma
        noisy = np.hypot(noisy, rng.normal(0, sigma, clean.shape))
    estimate = estimate_volume_noise(noisy)
    assert estimate.average_sigma == pytest.approx(sigma, rel=0.15)  # 22 x 24 x 20 voxels: few blocks
    assert suggest_volume_h(estimate) == pytest.approx(1.08 * estimate.average_sigma)


def test_h_is_suggested_for_the_patch_size_and_centre_weight() -> None:
    """The calibrated h / sigma (scripts/calibrate_volume_h.py): a patch of one voxel wants about
    twice a 3^3 patch's h (a first-time user's suggested h at patch radius 0 hardly filtered:
    27.4 dB against 35.1 at 3x it); anisotropic patches lie between by their voxel count, larger
    ones than 7^3 as 7^3; centre weight max wants less."""
    assert suggest_volume_h(10.0) == pytest.approx(10.8)
    assert suggest_volume_h(10.0, patch_radius=0) == pytest.approx(22.5)
    assert suggest_volume_h(10.0, "bisquare", patch_radius=2) == pytest.approx(24.2)
    assert suggest_volume_h(10.0, center_weight="max") == pytest.approx(8.4)
    between = suggest_volume_h(10.0, patch_radius=(0, 1, 1))  # 9 voxels
    assert 10.8 < between < 22.5 and between == pytest.approx(10 * (2.25 + (1.08 - 2.25) * np.log(9) / np.log(27)))
    assert suggest_volume_h(10.0, patch_radius=5) == suggest_volume_h(10.0, patch_radius=3)
    with pytest.raises(ValueError, match="center_weight must be"):
        suggest_volume_h(10.0, center_weight="all")


def test_a_masked_background_is_no_evidence_of_noise_growing_with_the_signal() -> None:
    """A skull-stripped scan's zeros have no residual at all: they read "sigma 0 in the darkest
    blocks", and the noise was said to grow with the signal (shot noise): sigma 10 read 29.
    Blocks of exactly no residual are left out: the noise inside reads as it is, no warning."""
    z, y, x = np.mgrid[:64, :64, :64]
    inside = (z - 32) ** 2 + (y - 32) ** 2 + (x - 32) ** 2 < 29**2
    brain = np.where(inside, 400 + np.random.default_rng(16).normal(0, 10, inside.shape), 0.0)
    estimate = estimate_volume_noise(brain)
    assert estimate.average_sigma == pytest.approx(10, rel=0.1)
    assert not estimate.signal_dependent and estimate.growth == "" and min(estimate.band_sigmas) > 5
    with pytest.raises(ValueError, match="constant"):  # nothing but such blocks: nothing to denoise
        suggest_volume_h(estimate_volume_noise(np.zeros((24, 24, 24))))


def test_noise_estimate_refuses_bad_volumes() -> None:
    with pytest.raises(ValueError, match="at least 3 voxels"):
        estimate_volume_noise(np.zeros((2, 20, 20)))
    with pytest.raises(ValueError, match="finite"):
        estimate_volume_noise(np.full((12, 12, 12), np.nan))
    with pytest.raises(
        ValueError, match=r"got 2 x 20 x 20 \(z, y, x\) \(the first three axes; the last, of 2, is read"
    ):
        estimate_volume_noise(np.zeros((2, 20, 20, 2)))
    with pytest.raises(ValueError, match=r"has 17 channels \(its last axis\) and at most 16 are filtered together"):
        estimate_volume_noise(np.zeros((12, 12, 12, 17)))
    with pytest.raises(ValueError, match="sigma must be"):
        suggest_volume_h(0.0)


def test_estimate_noise_reads_a_volume_as_denoise_volume_does(tmp_path) -> None:
    """``estimate-noise scan.nii.gz`` said "not a video file FFmpeg can read"; it prints the
    volume's noise and the h denoise-volume would take for each weighting."""
    rng = np.random.default_rng(12)
    clean = np.zeros((20, 24, 28), np.float32)
    clean[4:16, 6:18, 6:22] = 300
    np.save(tmp_path / "scan.npy", clean + rng.normal(0, 12, clean.shape).astype(np.float32))
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "scan.npy"), "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["channels"] == "together" and len(report["estimates"]) == 1
    (report,) = report["estimates"]
    estimate = estimate_volume_noise(np.load(tmp_path / "scan.npy"))
    assert report["sigma"] == pytest.approx(estimate.sigma, rel=1e-5) and 11 < report["sigma"][0] < 13
    assert report["suggested_h"] == pytest.approx(
        {weighting: suggest_volume_h(estimate, weighting) for weighting in ("exponential", "bisquare")}, rel=1e-5
    )
    assert list(report["suggested_h"]) == ["exponential", "bisquare"] and report["warning"] is None
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "scan.npy")], capture_output=True, text=True)
    assert run.returncode == 0 and "noise sigma (the volume's units): 12." in run.stdout
    assert f"suggested h: {suggest_volume_h(estimate):.4g} for exponential weights, patch radius 1" in run.stdout
    denoise = [*CLI, "denoise-volume", str(tmp_path / "scan.npy"), str(tmp_path / "out.npy"), "--backend", "cpu"]
    run = subprocess.run([*denoise, "--h", "1e6"], capture_output=True, text=True)  # a typo's h: said to blur
    assert run.returncode == 0 and "warning: h 1e+06 is more than the volume's whole range" in run.stderr
    (tmp_path / "out.npy").unlink()
    run = subprocess.run([*denoise, "--patch-radius", "0", "--weighting", "bisquare"], capture_output=True, text=True)
    h = suggest_volume_h(estimate, "bisquare", patch_radius=0)
    assert run.returncode == 0 and f"-> h {h:.4g}\n" in run.stderr  # h for a patch of one voxel
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "scan.npy"), "--frame", "2"], capture_output=True, text=True)
    assert run.returncode == 1 and "is a volume: --frame apply to videos only" in run.stderr
    np.save(tmp_path / "flat.npy", np.zeros((2, 20, 20), np.float32))
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "flat.npy")], capture_output=True, text=True)
    assert run.returncode == 1 and "flat.npy: volume must be at least 3 voxels on each axis" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("planes", [3, 4, 6, 9])
def test_the_noise_of_a_stack_of_few_planes_is_estimated(planes) -> None:
    """A z-stack of fewer than 10 planes (common in microscopy) was refused, by the command line
    and by the window; its blocks are now as thin as its residual, their quantile's bias measured
    for that shape. Gaussian noise of sigma 10 on a bright box reads within 5 %, as on 8^3 blocks."""
    clean = np.zeros((planes, 120, 120), np.float32)
    clean[:, 30:90, 20:100] = 300
    readings = [
        estimate_volume_noise(clean + np.random.default_rng(seed).normal(0, 10, clean.shape)).sigma[0]
        for seed in range(3)
    ]
    assert readings == pytest.approx([10, 10, 10], rel=0.05)


def test_denoise_volume_command(tmp_path, capsys) -> None:
    output = tmp_path / "out.nii.gz"
    assert main(["denoise-volume", str(NIFTI), str(output), "--search-radius", "1,2,2", "--backend", "cpu"]) == 0
    printed = capsys.readouterr().err
    assert "noise sigma" in printed
    # stderr is no terminal here (a log): whole progress lines, the first without an ETA yet
    assert "\r" not in printed and "%  starting\n" in printed and "100.0 %  ETA 0 s\n" in printed
    assert read_volume(output).data.dtype == np.uint8
    assert main(["denoise-volume", str(NIFTI), str(output), "--backend", "cpu", "--quiet"]) == 1
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert main(["denoise-volume", str(NIFTI), str(tmp_path / "out.tif"), "--h", "9", "--search-radius", "1"]) == 0
    assert "note: " + str(tmp_path / "out.tif") + ": a TIFF keeps the voxel size but not the NIfTI affine" in (
        capsys.readouterr().err
    )
    (tmp_path / "out.tif").unlink()
    np.save(tmp_path / "small.npy", np.zeros((4, 20, 20), np.float32))
    assert main(["denoise-volume", str(tmp_path / "small.npy"), str(tmp_path / "o.npy"), "--h", "1"]) == 1
    assert "smaller than the filter's window" in capsys.readouterr().err
    np.save(tmp_path / "series.npy", np.zeros((10, 32, 48, 64), np.float32))  # 64 time points, read as channels
    assert main(["denoise-volume", str(tmp_path / "series.npy"), str(tmp_path / "o.npy")]) == 1
    assert "series.npy: volume of shape (10, 32, 48, 64) has 64 channels" in capsys.readouterr().err
    (tmp_path / "series.npy").unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nii.gz", "small.npy"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["nodir/x.npy"], "the folder {tmp}/nodir does not exist"),
        (["ok.npy/x.npy"], "{tmp}/ok.npy is a file, not a folder"),  # was "does not exist"
        (["x.npy", "--search-radius", "99"], "--search-radius must be an integer in 0..16, got 99"),
        (["x.npy", "--weighting", "gauss"], "invalid choice: 'gauss'"),
        (["ok.npy"], "the output must not be the input"),
        (["x.npy", "--devices", "0,1", "--backend", "cpu"], "--devices spreads the volume over GPUs: not with"),
        (["x.npy", "--devices", "-1"], "argument --devices: GPU ids count from 0, got '-1'"),
        (["x.npy", "--h", "abc"], "argument --h: expected a number, or one a channel such as 12,30, got 'abc'"),
    ],
)
def test_denoise_volume_refuses_before_reading_the_volume(tmp_path, capsys, arguments, message) -> None:
    # An MRI user's run to a missing folder filtered the whole volume first, then failed naming a
    # hidden temporary file; radii out of range were refused after the noise estimate.
    np.save(tmp_path / "ok.npy", np.zeros((20, 20, 20), np.float32))
    output, *options = arguments
    refused_by_argparse = "invalid" in message or "argument" in message
    with pytest.raises(SystemExit) if refused_by_argparse else contextlib.nullcontext():
        assert main(["denoise-volume", str(tmp_path / "ok.npy"), str(tmp_path / output), *options]) == 1
    error = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in error and "noise sigma" not in error and "Traceback" not in error
    assert len(error.splitlines()) == 1  # one line, not the usage first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.npy"]


def test_a_missing_input_is_said_before_anything_about_the_output(tmp_path) -> None:
    """With out.tif there already, a first-time user's typo in the input name was answered
    'out.tif exists; use --overwrite'."""
    (tmp_path / "out.tif").write_bytes(b"an earlier result")
    for source, message in (("nonexist.tif", "nonexist.tif: no such file"), ("in.mp4", "in.mp4: not a volume file")):
        command = [*CLI, "denoise-volume", str(tmp_path / source), str(tmp_path / "out.tif")]
        result = run_cli(command, capture_output=True, text=True, timeout=300)
        assert result.returncode == 1 and result.stderr.startswith(f"nlmeans-studio: error: {tmp_path / message}")
    assert (tmp_path / "out.tif").read_bytes() == b"an earlier result"


def test_an_unwritable_folder_is_refused_before_the_filter_runs(tmp_path) -> None:
    """A first-time user's run into /sys filtered for 18 s, then printed 'Permission denied' for
    a hidden temporary file: os.access lets root write anywhere. sysfs refuses root too."""
    np.save(tmp_path / "in.npy", np.random.default_rng(8).random((20, 20, 20), dtype=np.float32))
    command = [*CLI, "denoise-volume", str(tmp_path / "in.npy"), "/sys/x.npy", "--backend", "cpu"]
    result = run_cli(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr == "nlmeans-studio: error: /sys/x.npy: the folder /sys is not writable (Permission denied)\n"


def test_a_link_to_nothing_as_output_is_refused_before_the_filter_runs(tmp_path, capsys) -> None:
    """It was found only when the finished volume was to be renamed into place."""
    np.save(tmp_path / "in.npy", np.random.default_rng(9).random((12, 12, 12), dtype=np.float32))
    (tmp_path / "out.npy").symlink_to(tmp_path / "gone" / "out.npy")
    assert main(["denoise-volume", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--search-radius", "1"]) == 1
    assert capsys.readouterr().err == (
        f"nlmeans-studio: error: {tmp_path}/out.npy is a link to {tmp_path}/gone/out.npy, which does not exist; use "
        "--overwrite (overwrite=True from Python) to replace it\n"
    )  # before the noise estimate and the filter: nothing else was said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "out.npy"]


def test_a_write_that_fails_late_names_the_output(tmp_path, capsys, monkeypatch) -> None:
    """A disk that fills while the volume is written: the error names the output, not the hidden
    file it was written as, and nothing is left."""
    np.save(tmp_path / "in.npy", np.random.default_rng(9).random((20, 20, 20), dtype=np.float32))

    def full_disk(file, *args, **kwargs) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), file.name)

    monkeypatch.setattr(np, "save", full_disk)
    output = tmp_path / "out.npy"
    assert main(["denoise-volume", str(tmp_path / "in.npy"), str(output), "--h", "1", "--search-radius", "1"]) == 1
    error = capsys.readouterr().err
    assert f"nlmeans-studio: error: {output}: the disk is full: the volume needs 31.2 KiB and " in error
    assert "free some space or write it to another disk\n" in error
    assert ".part" not in error and sorted(p.name for p in tmp_path.iterdir()) == ["in.npy"]


def test_a_file_size_limit_is_said_in_words_not_numpys(tmp_path) -> None:
    """numpy's writer lost the system's reason: "64000 requested and 25568 written"."""
    np.save(tmp_path / "in.npy", np.random.default_rng(9).random((40, 40, 40), dtype=np.float32))
    command = " ".join([*CLI, "denoise-volume", "in.npy", "out.npy", "--h", "1", "--search-radius", "1", "--quiet"])
    run = subprocess.run(
        ["bash", "-c", f"trap '' XFSZ; ulimit -f 100; exec {command}"], capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr == (
        "nlmeans-studio: error: out.npy: the system refused to make the file 250.0 KiB long (a file size limit: "
        "ulimit -f, or the file system's largest file); raise the limit or write it to another disk\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy"]


def _npy_header(shape: tuple[int, ...]) -> bytes:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}".ljust(117) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _imagej_stack() -> bytes:
    """An ImageJ stack of 8 planes of 32 x 32 uint16, as Fiji writes it."""
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, np.ones((8, 32, 32), np.uint16), imagej=True, metadata={"axes": "ZYX"})
    return buffer.getvalue()


def _zlib_stack() -> bytes:
    """A stack of 8 planes of 32 x 32 uint16 as tifffile writes it compressed: its shape in its description."""
    buffer = io.BytesIO()
    planes = np.random.default_rng(0).integers(0, 60000, (8, 32, 32)).astype(np.uint16)
    tifffile.imwrite(buffer, planes, compression="zlib")
    return buffer.getvalue()


def _nifti_header(shape: tuple[int, ...], version: int = 1) -> bytes:
    nibabel = pytest.importorskip("nibabel")
    image = (nibabel.Nifti1Image if version == 1 else nibabel.Nifti2Image)(np.zeros((2, 2, 2), np.float32), np.eye(4))
    image.header.set_data_shape(shape)
    return image.header.binaryblock + bytes(4)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("archive.npy", None, r"archive\.npy: a NumPy \.npz archive \(several arrays, zipped\), named \.npy; "
         r"save the volume alone: np\.save\('volume\.npy', np\.load\('archive\.npy'\)\['NAME'\]\)"),
        ("huge.npy", _npy_header((100000,) * 3) + bytes(64), r"huge\.npy: its header declares an array of shape "
         r"\(100000, 100000, 100000\) of float32, 3\.6 PiB, but the file holds 64 bytes of data: it is truncated"),
        ("objects.npy", lambda: _npy_bytes(np.full((4, 4, 4), None)), r"objects\.npy: holds Python objects "
         r"\(object\), not numbers; save an array of numbers"),
        ("cut.tif", lambda: _imagej_stack()[:6000], r"cut\.tif: its ImageJ header declares 8 images, but the file "
         r"holds 1 whole: it is truncated or damaged"),
        ("cut-zlib.tif", lambda: _zlib_stack()[:9000], r"cut-zlib\.tif: its description \(tifffile's\) declares 8 "
         r"images, but the file holds 1 whole: it is truncated or damaged"),  # was "one 2D image"
        ("huge.nii", lambda: _nifti_header((32767,) * 3) + bytes(64), r"huge\.nii: its header declares an array "
         r"of shape \(32767, 32767, 32767\) of float32, 128\.0 TiB, but the file holds \d+ bytes of data"),
        ("huge2.nii", lambda: _nifti_header((100000,) * 3, 2) + bytes(64), r"huge2\.nii: its header declares an "
         r"array of shape \(100000, 100000, 100000\) of float32, 3\.6 PiB, but the file holds \d+ bytes of data"),
        ("huge.nii.gz", lambda: gzip.compress(_nifti_header((32767,) * 3)), r"huge\.nii\.gz: its header declares "
         r"an array of shape \(32767, 32767, 32767\) of float32, 128\.0 TiB, more than this machine's memory"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["denoise-volume", "estimate-noise"])
def test_files_that_cannot_hold_their_volume_are_said_so(tmp_path, name, content, message, command) -> None:
    """An .npz named .npy gave a traceback; headers of a huge volume over a tiny body "Unable to
    allocate 3.55 PiB" or an empty "error:"."""
    path = tmp_path / name
    if content is None:
        np.savez(path, volume=np.zeros((4, 4, 4), np.float32))
        (tmp_path / f"{name}.npz").rename(path)
    else:
        path.write_bytes(content() if callable(content) else content)
    outputs = [str(tmp_path / "out.npy")] if command == "denoise-volume" else []
    run = run_cli([*CLI, command, str(path), *outputs], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert re.fullmatch(f"nlmeans-studio: error: {re.escape(str(tmp_path))}/{message}.*\n", run.stderr), run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("h", [[], ["--h", "1"]])
def test_nan_voxels_and_small_volumes_are_named_with_the_file(tmp_path, capsys, h) -> None:
    volume = np.random.default_rng(2).random((20, 20, 20)).astype(np.float32)
    volume[3, 4, 5] = np.nan
    np.save(tmp_path / "masked.npy", volume)
    assert main(["denoise-volume", str(tmp_path / "masked.npy"), str(tmp_path / "o.npy"), *h]) == 1
    assert f"{tmp_path / 'masked.npy'}: volume must be finite, got 1 NaN or infinite voxels" in capsys.readouterr().err
    np.save(tmp_path / "thin.npy", np.ones((2, 12, 12), np.float32))
    radii = ["--search-radius", "0,2,2", "--patch-radius", "0,1,1"]
    assert main(["denoise-volume", str(tmp_path / "thin.npy"), str(tmp_path / "o.npy"), *radii]) == 1
    error = capsys.readouterr().err
    expected = "thin.npy: volume must be at least 3 voxels on each axis to estimate its noise, got 2 x 12 x 12"
    assert expected + " (z, y, x); give --h instead" in error
    np.save(tmp_path / "flat.npy", np.ones((12, 12, 12), np.float32))  # said without the file's name
    assert main(["denoise-volume", str(tmp_path / "flat.npy"), str(tmp_path / "o.npy")]) == 1
    assert "flat.npy: the volume is constant: there is no noise and nothing to denoise" in capsys.readouterr().err
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("not-gzip.nii.gz", b"not a NIfTI file"),
        ("garbage.nii", b"\x00" * 400),
        ("garbage.tif", b"II*\x00garbage"),
        ("garbage.npy", b"\x93NUMPY garbage"),
    ],
)
def test_a_file_its_reader_cannot_read_is_a_clear_value_error(tmp_path, name, content) -> None:
    """Whatever the reader library raises, the caller gets a ValueError naming the file."""
    pytest.importorskip("nibabel")
    pytest.importorskip("tifffile")
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{name}: not a .* volume that can be read"):
        read_volume(path)


@pytest.mark.parametrize("compression", ["lzw", "zstd", "zlib"])
def test_compressed_tiff_stacks_are_read_and_written_back_so(tmp_path, compression) -> None:
    """A microscopist's LZW stack (as acquisition software writes them) was refused: its codec is
    imagecodecs', which the installation lacked; a zlib one came back uncompressed (548 -> 790 KB)."""
    stack = np.random.default_rng(13).integers(0, 4096, (6, 2, 20, 22), dtype=np.uint16)  # Z, C, Y, X
    tifffile.imwrite(tmp_path / "s.tif", stack, imagej=True, metadata={"axes": "ZCYX"}, compression=compression)
    tifffile.imwrite(tmp_path / "big.tif", stack[:, 0], compression=compression, bigtiff=True)  # a plain BigTIFF
    np.testing.assert_array_equal(read_volume(tmp_path / "s.tif").data, stack.transpose(0, 2, 3, 1))
    for name, data in (("s.tif", stack.transpose(0, 2, 3, 1)), ("big.tif", stack[:, 0])):
        write_volume(tmp_path / f"out-{name}", data, read_volume(tmp_path / name))
        with tifffile.TiffFile(tmp_path / name) as given, tifffile.TiffFile(tmp_path / f"out-{name}") as written:
            assert written.pages[0].compression == given.pages[0].compression
            assert written.is_bigtiff == given.is_bigtiff
        np.testing.assert_array_equal(read_volume(tmp_path / f"out-{name}").data, data)


def test_a_truncated_nifti_is_a_clear_value_error(tmp_path) -> None:
    nibabel = pytest.importorskip("nibabel")
    path = tmp_path / "whole.nii.gz"
    nibabel.save(nibabel.Nifti1Image(np.random.default_rng(0).random((20, 20, 20), dtype=np.float32), np.eye(4)), path)
    cut = tmp_path / "cut.nii.gz"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"cut\.nii\.gz: the file is cut short \(.*\); copy it again from its source"):
        read_volume(cut)


def test_a_clean_volume_gets_a_gentle_h_and_a_warning(tmp_path, capsys) -> None:
    """A template or synthetic volume reads no noise: h for half an 8-bit level of its range."""
    z, y, x = np.mgrid[0:24, 0:24, 0:24].astype(np.float32)
    clean = 1000 * np.exp(-((z - 12) ** 2 + (y - 12) ** 2 + (x - 12) ** 2) / 60)
    estimate = estimate_volume_noise(clean)
    assert estimate.clean and estimate.average_sigma < 1e-3
    range_ = np.percentile(clean, 99.5) - np.percentile(clean, 0.5)
    assert suggest_volume_h(estimate) == pytest.approx(1.08 * 0.5 / 255 * range_, rel=1e-6)
    with pytest.raises(ValueError, match="constant"):
        suggest_volume_h(estimate_volume_noise(np.full((24, 24, 24), 7.0)))
    np.save(tmp_path / "clean.npy", clean)
    assert main(["denoise-volume", str(tmp_path / "clean.npy"), str(tmp_path / "out.npy"), "--search-radius", "1"]) == 0
    assert "the volume looks clean" in capsys.readouterr().err


def _counts_volume() -> np.ndarray:
    """Expected photon counts of a 48 x 64 x 64 microscopy-like stack: a dim background (25)
    and, over half of it, a smooth bright object (400 to 650)."""
    z, y, x = np.mgrid[0:48, 0:64, 0:64].astype(np.float64)
    return 25 + np.where(x >= 32, 375 + 250 * np.sin(np.pi * z / 47) * np.cos(np.pi * (y - 32) / 128), 0.0)


def test_shot_noise_sets_h_for_the_noisiest_parts_and_says_so(tmp_path, capsys) -> None:
    expected = _counts_volume()
    rng = np.random.default_rng(4)
    shot = estimate_volume_noise(rng.poisson(expected).astype(np.float32))
    bright = float(np.sqrt(expected[expected > 100].mean()))  # the object's noise, about 23
    assert shot.signal_dependent and shot.band_sigmas[-1] > 3 * shot.band_sigmas[0]
    assert shot.average_sigma == pytest.approx(bright, rel=0.15)  # the flattest blocks' would be 5
    assert "the noise grows with the signal" in shot.growth
    gaussian = estimate_volume_noise(expected + rng.normal(0, 10, expected.shape))  # the same scene, even noise
    assert not gaussian.signal_dependent and gaussian.growth == ""
    assert gaussian.average_sigma == pytest.approx(10, rel=0.15)
    tifffile.imwrite(tmp_path / "cells.tif", rng.poisson(expected).astype(np.uint16))
    command = ["denoise-volume", str(tmp_path / "cells.tif"), str(tmp_path / "out.tif"), "--search-radius", "1"]
    assert main(command) == 0
    printed = capsys.readouterr().err
    h = float(printed.split(" -> h ")[1].split()[0])
    assert h == pytest.approx(1.1 * bright, rel=0.15)
    assert "warning: the noise grows with the signal (sigma " in printed and "give --h to choose" in printed


def test_a_background_subtracted_stack_reads_the_noise_its_offset_did_not_change() -> None:
    """A microscopist's stack 300 counts below zero (camera offset subtracted) read sigma 44 from
    14 blocks instead of 29 from 450: the magnitude images' floor at 0 left all else out. Signed
    volumes keep all their blocks; shifted up, or not at all, the stack reads as before."""
    rng = np.random.default_rng(9)
    counts = rng.poisson(100 + _counts_volume()) + rng.normal(0, 4, (48, 64, 64))
    as_taken = estimate_volume_noise(counts)
    for offset in (-300, 1000):
        shifted = estimate_volume_noise(counts + offset)
        assert shifted.blocks == as_taken.blocks
        np.testing.assert_allclose(shifted.sigma, as_taken.sigma, rtol=1e-6)
        np.testing.assert_allclose(shifted.band_sigmas, as_taken.band_sigmas, rtol=1e-6)


def test_multichannel_tiff_stacks_keep_their_channels_apart(tmp_path, capsys) -> None:
    """ImageJ hyperstacks (Z, C, Y, X) and OME-TIFF (C, Z, Y, X): channels last, as the filter
    takes them, and an ImageJ hyperstack written back as one; time series refused."""
    rng = np.random.default_rng(5)
    stack = rng.integers(100, 900, (12, 2, 16, 18), dtype=np.uint16)  # Z, C, Y, X
    red, green = (np.zeros((3, 256), np.uint8) for _ in range(2))
    red[0] = green[1] = np.arange(256)
    fiji = {"mode": "composite", "Ranges": (100.0, 900.0, 150.0, 850.0), "LUTs": [red, green], "Info": "63x oil"}
    fiji |= {"Labels": [f"z{z}c{c}" for z in range(12) for c in range(2)], "Properties": {"scope": "A1"}}
    tifffile.imwrite(tmp_path / "ij.tif", stack, imagej=True, metadata={"axes": "ZCYX", "spacing": 2.0, **fiji})
    tifffile.imwrite(tmp_path / "ome.ome.tif", stack.transpose(1, 0, 2, 3), ome=True, metadata={"axes": "CZYX"})
    for name in ("ij.tif", "ome.ome.tif"):
        np.testing.assert_array_equal(read_volume(tmp_path / name).data, stack.transpose(0, 2, 3, 1))
    command = ["denoise-volume", str(tmp_path / "ij.tif"), str(tmp_path / "out.tif"), "--h", "50"]
    assert main([*command, "--search-radius", "1", "--backend", "cpu", "--quiet"]) == 0
    with tifffile.TiffFile(tmp_path / "out.tif") as written:
        assert written.series[0].axes == "ZCYX" and written.series[0].shape == stack.shape
        assert written.imagej_metadata["spacing"] == 2.0
        # Fiji's display and notes (a microscopist's composite came back gray, without colours or labels)
        kept = written.imagej_metadata
        assert {key: kept[key] for key in ("mode", "Ranges", "Info", "Labels", "Properties")} == {
            key: fiji[key] for key in ("mode", "Ranges", "Info", "Labels", "Properties")
        }
        np.testing.assert_array_equal(kept["LUTs"], fiji["LUTs"])
    tifffile.imwrite(tmp_path / "t.tif", stack[:3], imagej=True, metadata={"axes": "TZYX"})
    assert main(["denoise-volume", str(tmp_path / "t.tif"), str(tmp_path / "t_out.tif"), "--h", "5"]) == 1
    assert "a TIFF series of 3 time points (TZYX" in capsys.readouterr().err
    # A 2D time-lapse has no volumes to split: a microscopist was told to split it; it is a video.
    tifffile.imwrite(tmp_path / "tyx.tif", stack[:, 0], imagej=True, metadata={"axes": "TYX"})
    assert main(["denoise-volume", str(tmp_path / "tyx.tif"), str(tmp_path / "tyx_out.tif"), "--h", "5"]) == 1
    said = capsys.readouterr().err
    assert "a 2D time-lapse of 12 frames (TYX" in said and "nlmeans_studio.denoise(frames, time_axis=0)" in said


def test_a_hyperstacks_channels_are_filtered_separately_each_from_its_own_noise(tmp_path) -> None:
    """A fluorescence hyperstack's channels image different structures: denoise-volume filters
    them separately by default, each with the h of its own noise (channel 0 was left noisy along
    channel 1's edges); --channels together sums them, and a .npy's channels stay together."""
    rng = np.random.default_rng(9)
    z, y, x = np.mgrid[:12, :40, :40]
    spheres = np.where((z - 6) ** 2 + (y - 20) ** 2 + (x - 20) ** 2 < 49, 3000.0, 500.0)
    channels = np.stack(
        [np.full(spheres.shape, 800.0) + rng.normal(0, 40, spheres.shape), spheres + rng.normal(0, 80, spheres.shape)],
        axis=1,
    )  # Z, C, Y, X
    stack = np.rint(channels).astype(np.uint16)
    tifffile.imwrite(tmp_path / "cells.tif", stack, imagej=True, metadata={"axes": "ZCYX"})
    radii = ["--search-radius", "2", "--backend", "cpu"]
    run = run_cli(
        [*CLI, "denoise-volume", str(tmp_path / "cells.tif"), str(tmp_path / "out.tif"), *radii],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "2 channels, filtered separately" in run.stderr
    said = dict(line.split(": noise sigma ") for line in run.stderr.splitlines() if ": noise sigma " in line)
    sigmas = {name: float(text.split()[0]) for name, text in said.items()}
    assert sigmas["channel 1"] == pytest.approx(40, rel=0.08) and sigmas["channel 2"] == pytest.approx(80, rel=0.08)
    volume = stack.transpose(0, 2, 3, 1).astype(np.float32)
    strengths = [suggest_volume_h(estimate_volume_noise(volume[..., c])) for c in range(2)]
    expected = denoise_volume(
        volume, h=strengths, search_radius=2, channels="separately", backend="cpu", channel_axis=3
    )
    written = read_volume(tmp_path / "out.tif").data
    np.testing.assert_allclose(written, np.clip(np.rint(expected), 0, 65535), atol=1)  # rounded to uint16
    run = run_cli(
        [*CLI, "denoise-volume", str(tmp_path / "cells.tif"), str(tmp_path / "both.tif"), *radii, "--h", "60,120"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    run = subprocess.run(
        [
            *CLI,
            "denoise-volume",
            str(tmp_path / "cells.tif"),
            str(tmp_path / "t.tif"),
            *radii,
            "--channels",
            "together",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and "2 channels, filtered together" in run.stderr and "channel 1:" not in run.stderr
    for extra, message in (
        (["--h", "60,120", "--channels", "together"], "--h gives one h a channel: the channels must be filtered"),
        (["--h", "60,120,5"], "cells.tif: h must be one number or one a channel (2), got 3"),
    ):
        run = run_cli(
            [*CLI, "denoise-volume", str(tmp_path / "cells.tif"), str(tmp_path / "x.tif"), *radii, *extra],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr
    np.save(tmp_path / "cells.npy", volume)
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "cells.npy"), "--json"], capture_output=True, text=True)
    assert json.loads(run.stdout)["channels"] == "separately"  # a .npy's channels, apart where their noise differs
    run = run_cli([*CLI, "estimate-noise", str(tmp_path / "cells.tif"), "--json"], capture_output=True, text=True)
    report = json.loads(run.stdout)
    assert report["channels"] == "separately" and [e["channel"] for e in report["estimates"]] == [1, 2]
    assert report["estimates"][1]["suggested_h"]["exponential"] == pytest.approx(strengths[1], rel=1e-5)


def test_an_ome_tiffs_tags_agree_with_its_voxel_size_and_its_channels_keep_their_names(tmp_path) -> None:
    """A microscopist's OME-TIFF of 0.1 µm pixels came back with tags of 10 pixels an inch (2540
    µm, to any reader of the tags alone) and without its channels' names."""
    stack = np.random.default_rng(12).integers(100, 900, (2, 12, 16, 18), dtype=np.uint16)  # C, Z, Y, X
    metadata = {"axes": "CZYX", "PhysicalSizeX": 0.1, "PhysicalSizeY": 0.1, "PhysicalSizeZ": 0.5}
    metadata |= {"PhysicalSizeXUnit": "µm", "PhysicalSizeYUnit": "µm", "Channel": {"Name": ["DAPI", "Actin"]}}
    tifffile.imwrite(tmp_path / "cells.ome.tif", stack, ome=True, metadata=metadata)
    options = ["--h", "50", "--search-radius", "1", "--backend", "cpu", "--quiet"]
    assert main(["denoise-volume", str(tmp_path / "cells.ome.tif"), str(tmp_path / "out.ome.tif"), *options]) == 0
    with tifffile.TiffFile(tmp_path / "out.ome.tif") as written:
        tags = written.pages[0].tags
        assert tags["ResolutionUnit"].value == tifffile.RESUNIT.CENTIMETER
        assert tags["XResolution"].value == (100_000, 1) and tags["YResolution"].value == (100_000, 1)  # a cm / 0.1 µm
        assert 'Name="DAPI"' in written.ome_metadata and 'Name="Actin"' in written.ome_metadata
    assert read_volume(tmp_path / "out.ome.tif").spacing == pytest.approx((0.5, 0.1, 0.1))
    np.save(tmp_path / "plain.npy", stack[0])  # no unit: the tags say none
    assert main(["denoise-volume", str(tmp_path / "plain.npy"), str(tmp_path / "plain.ome.tif"), *options]) == 0
    with tifffile.TiffFile(tmp_path / "plain.ome.tif") as written:
        assert written.pages[0].tags["ResolutionUnit"].value == tifffile.RESUNIT.NONE


def test_channels_go_to_nifti_as_vector_valued_voxels_and_come_back(tmp_path) -> None:
    """An ImageJ hyperstack's two channels written as .nii.gz became a 4D NIfTI, channels on its
    time axis, which denoise-volume then refused as a time series (found by a first-time user):
    NIfTI keeps them as vectors, (X, Y, Z, 1, C) with intent "vector", read back as channels."""
    stack = np.random.default_rng(10).integers(100, 900, (12, 2, 16, 18), dtype=np.uint16)  # Z, C, Y, X
    tifffile.imwrite(tmp_path / "ij.tif", stack, imagej=True, metadata={"axes": "ZCYX", "spacing": 2.0})
    options = ["--h", "50", "--search-radius", "1", "--backend", "cpu", "--quiet"]
    assert main(["denoise-volume", str(tmp_path / "ij.tif"), str(tmp_path / "out.nii.gz"), *options]) == 0
    written = nibabel.load(tmp_path / "out.nii.gz")
    assert written.shape == (18, 16, 12, 1, 2) and written.header.get_intent()[0] == "vector"
    assert written.header["intent_code"] == 1007 and written.header.get_zooms()[:3] == (1.0, 1.0, 2.0)
    assert main(["denoise-volume", str(tmp_path / "out.nii.gz"), str(tmp_path / "back.tif"), *options]) == 0
    with tifffile.TiffFile(tmp_path / "back.tif") as back:
        assert back.series[0].axes == "ZCYX" and back.series[0].shape == stack.shape

    # The values themselves, unfiltered: TIFF -> NIfTI -> TIFF gives the hyperstack back.
    source = read_volume(tmp_path / "ij.tif")
    write_volume(tmp_path / "same.nii.gz", source.data.astype(np.float32), source)
    vectors = read_volume(tmp_path / "same.nii.gz")
    assert vectors.data.dtype == np.uint16 and vectors.spacing == (2.0, 1.0, 1.0)
    np.testing.assert_array_equal(vectors.data, stack.transpose(0, 2, 3, 1))
    write_volume(tmp_path / "same.tif", vectors.data.astype(np.float32), vectors)
    with tifffile.TiffFile(tmp_path / "same.tif") as again:
        assert again.series[0].axes == "ZCYX"
        np.testing.assert_array_equal(again.series[0].asarray(), stack)
    series = nibabel.Nifti1Image(np.zeros((8, 8, 8, 3, 2), np.float32), np.eye(4))  # vectors at 3 time points
    nibabel.save(series, tmp_path / "series.nii")
    with pytest.raises(ValueError, match="the volume filter takes one 3D volume"):
        read_volume(tmp_path / "series.nii")


@pytest.mark.parametrize(("metadata", "axes"), [({}, "QYXS"), ({"unit": "um"}, "ZYXS")])
def test_a_plain_tiff_of_two_samples_a_pixel_comes_back_in_its_layout(tmp_path, metadata, axes) -> None:
    """A plain TIFF stack of 2 samples per pixel came back as a page per row, (X, 2) pixels each
    (found by a first-time user); with a unit it was sent to ImageJ, which takes no 2 samples:
    it is an OME-TIFF now, which keeps the unit where Fiji reads it."""
    stack = np.random.default_rng(11).integers(0, 4000, (12, 32, 36, 2), dtype=np.uint16)  # Z, Y, X, S
    tifffile.imwrite(tmp_path / "zyxc.tif", stack, photometric="minisblack", planarconfig="contig", metadata=metadata)
    command = ["denoise-volume", str(tmp_path / "zyxc.tif"), str(tmp_path / "out.tif"), "--h", "100"]
    assert main([*command, "--search-radius", "1", "--backend", "cpu", "--quiet"]) == 0
    with tifffile.TiffFile(tmp_path / "zyxc.tif") as source, tifffile.TiffFile(tmp_path / "out.tif") as written:
        assert len(written.pages) == 12 and written.pages[0].shape == (32, 36, 2)
        assert source.series[0].axes == "QYXS" and written.series[0].axes == axes
        assert written.series[0].shape == stack.shape and written.is_ome == bool(metadata)
    assert read_volume(tmp_path / "out.tif").extra["unit"] == {"um": "µm"}.get(metadata.get("unit"))


def test_one_image_is_pointed_to_the_command_that_denoises_it(tmp_path) -> None:
    """A 2D TIFF given to denoise-volume was refused as "an array of shape (64, 80)"; the message
    gives the command that denoises one image, and that command works as written."""
    image = np.random.default_rng(15).normal(30000, 2000, (64, 80)).astype(np.uint16)
    tifffile.imwrite(tmp_path / "slide.tif", image)
    run = run_cli([*CLI, "denoise-volume", "slide.tif", "out.tif"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and "slide.tif: one 2D image of shape (64, 80), not a volume" in run.stderr
    command = run.stderr.split("to denoise an image: ")[1].split()
    assert command == ["nlmeans-studio", "denoise", "slide.tif", "slide-denoised.tif"]
    run = run_cli([*CLI, *command[1:]], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    denoised = tifffile.imread(tmp_path / "slide-denoised.tif")  # one image out: gray and 16-bit, as it came
    assert denoised.shape == image.shape and denoised.dtype == np.uint16 and denoised.std() < image.std() / 2


def test_an_rgb_picture_is_one_image_not_a_volume_three_voxels_deep(tmp_path) -> None:
    """A (48, 64, 3) RGB TIFF was filtered as a volume of 48 planes of 64 x 3 voxels, exit 0."""
    tifffile.imwrite(tmp_path / "photo.tif", np.random.default_rng(4).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    run = run_cli([*CLI, "denoise-volume", "photo.tif", "out.tif"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and run.stderr == (
        "nlmeans-studio: error: photo.tif: one 2D image of shape (48, 64, 3), not a volume (Z, Y, X) or (Z, Y, X, C); "
        "to denoise an image: nlmeans-studio denoise photo.tif photo-denoised.tif\n"
    )


def test_one_image_in_a_file_denoise_cannot_read_is_pointed_to_a_tiff_first(tmp_path) -> None:
    """A 2D .npy was pointed to `denoise flat.npy flat-denoised.tif`, which `denoise` refuses."""
    image = np.random.default_rng(15).normal(30000, 2000, (64, 80)).astype(np.uint16)
    np.save(tmp_path / "flat.npy", image)
    run = run_cli([*CLI, "denoise-volume", "flat.npy", "out.npy"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and run.stderr.endswith(
        "to denoise an image: save it as a TIFF (tifffile.imwrite('flat.tif', image)), then nlmeans-studio denoise "
        "flat.tif flat-denoised.tif\n"
    )
    tifffile.imwrite(tmp_path / "flat.tif", image)
    run = run_cli([*CLI, "denoise", "flat.tif", "flat-denoised.tif"], capture_output=True, cwd=tmp_path)
    assert run.returncode == 0 and (tmp_path / "flat-denoised.tif").is_file()


@pytest.mark.parametrize(
    ("voxels", "said"),
    [
        (np.ones((16, 14, 8), np.complex64), "got dtype complex64: take the magnitude first"),
        (np.ones((32, 30), np.float32), "one 2D image of shape (30, 32), not a volume"),
        (
            np.ones((32, 30, 1), np.float32),
            "z holds 1 or 2 voxels: radii 0 there (search radius 0,5,5, patch radius 0,1,1)",
        ),
    ],
)
def test_a_nifti_the_filter_cannot_take_says_what_to_do(tmp_path, voxels, said) -> None:
    """A complex NIfTI, a 2D one and one slice: each said what to do (the magnitude, the image command, radii 0
    along the thin axis and h given), not only what was wrong."""
    nibabel.save(nibabel.Nifti1Image(voxels, np.eye(4)), tmp_path / "scan.nii.gz")
    run = run_cli([*CLI, "denoise-volume", "scan.nii.gz", "out.nii.gz"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and said in run.stderr and len(run.stderr.splitlines()) == 1, run.stderr


def test_tiff_flavours_keep_the_voxel_size_where_fiji_reads_it(tmp_path) -> None:
    """An int16 MRI written as .tif went to a plain TIFF whose slice thickness only tifffile
    read (ImageJ holds no int16): it is an OME-TIFF, in mm. A name ending .ome.tif asks for an
    OME-TIFF; an OME-TIFF of (C, Z, Y, X) comes back (C, Z, Y, X), not (Z, C, Y, X)."""
    voxels = np.random.default_rng(13).normal(300, 20, (30, 32, 12)).astype(np.int16)  # x, y, z
    image = nibabel.Nifti1Image(voxels, np.diag([0.9, 0.9, 3.0, 1.0]))
    image.header.set_xyzt_units("mm")
    nibabel.save(image, tmp_path / "t2.nii.gz")
    assert main(["denoise-volume", str(tmp_path / "t2.nii.gz"), str(tmp_path / "t2.tif"), "--h", "20", "--quiet"]) == 0
    with tifffile.TiffFile(tmp_path / "t2.tif") as written:
        assert written.is_ome and written.series[0].dtype == np.int16
        assert 'PhysicalSizeZ="3.0" PhysicalSizeZUnit="mm"' in written.ome_metadata
    assert read_volume(tmp_path / "t2.tif").spacing == pytest.approx((3.0, 0.9, 0.9))
    stack = np.random.default_rng(14).integers(100, 900, (2, 12, 16, 18), dtype=np.uint16)  # C, Z, Y, X
    sizes = {"PhysicalSizeZ": 0.5, "PhysicalSizeY": 0.1, "PhysicalSizeX": 0.1}
    tifffile.imwrite(tmp_path / "cells.ome.tif", stack, ome=True, metadata={"axes": "CZYX", **sizes})
    tifffile.imwrite(
        tmp_path / "ij.tif", stack.transpose(1, 0, 2, 3), imagej=True, metadata={"axes": "ZCYX", "unit": "um"}
    )
    for name, axes in (("cells.ome.tif", "CZYX"), ("ij.tif", "ZCYX")):
        output = tmp_path / f"out-{name.split('.')[0]}.ome.tif"
        assert (
            main(["denoise-volume", str(tmp_path / name), str(output), "--h", "50", "--search-radius", "1", "--quiet"])
            == 0
        )
        with tifffile.TiffFile(output) as written:
            assert written.is_ome and written.series[0].axes == axes
        assert read_volume(output).data.shape == (12, 16, 18, 2)
    assert read_volume(tmp_path / "out-ij.ome.tif").extra["unit"] == "µm"  # OME's symbol, not ImageJ's "um"


def test_nifti2_stays_nifti2_and_one_time_point_is_a_volume(tmp_path, capfd) -> None:
    """A NIfTI of one time point, (X, Y, Z, 1), is filtered as a volume and written back in its
    shape, its time step kept (it came back (X, Y, Z): found by a first-time user)."""
    rng = np.random.default_rng(6)
    voxels = rng.normal(100, 10, (16, 14, 12)).astype(np.float32)  # x, y, z
    affine = np.diag([0.9, 0.9, 2.5, 1.0])
    nibabel.save(nibabel.Nifti2Image(voxels, affine), tmp_path / "two.nii")
    one_time_point = nibabel.Nifti1Image(voxels[..., np.newaxis], affine)
    one_time_point.header.set_zooms((0.9, 0.9, 2.5, 2.0))  # a repetition time of 2 s
    nibabel.save(one_time_point, tmp_path / "one_time_point.nii.gz")
    cases = {
        "two.nii": (nibabel.Nifti2Image, voxels.shape),
        "one_time_point.nii.gz": (nibabel.Nifti1Image, (16, 14, 12, 1)),
    }
    for name, (kind, shape) in cases.items():
        assert read_volume(tmp_path / name).data.shape == (12, 14, 16)
        output = tmp_path / f"out_{name}"
        assert main(["denoise-volume", str(tmp_path / name), str(output), "--h", "8", "--search-radius", "1"]) == 0
        written = nibabel.load(output)
        assert type(written) is kind and written.shape == shape
        assert written.header.get_zooms() == nibabel.load(tmp_path / name).header.get_zooms()
        np.testing.assert_allclose(written.affine, affine)
    assert "sizeof_hdr" not in "".join(capfd.readouterr())  # nothing of nibabel's conversions printed


def test_an_ome_tiffs_voxel_size_is_read_and_written_back(tmp_path) -> None:
    rng = np.random.default_rng(7)
    stack = rng.integers(0, 4000, (8, 16, 18), dtype=np.uint16)
    sizes = {"PhysicalSizeZ": 1.5, "PhysicalSizeY": 0.25, "PhysicalSizeX": 0.2}
    tifffile.imwrite(tmp_path / "scope.ome.tif", stack, ome=True, metadata={"axes": "ZYX", **sizes})
    source = read_volume(tmp_path / "scope.ome.tif")
    assert source.spacing == (1.5, 0.25, 0.2) and source.extra["unit"] == "µm"
    write_volume(tmp_path / "out.ome.tif", source.data.astype(np.float32), source)
    with tifffile.TiffFile(tmp_path / "out.ome.tif") as written:
        assert written.is_ome and 'PhysicalSizeZ="1.5"' in written.ome_metadata
    assert read_volume(tmp_path / "out.ome.tif").spacing == (1.5, 0.25, 0.2)


def test_float_volumes_are_written_in_their_float_type(tmp_path) -> None:
    """denoise-volume wrote a float64 .npy as float32: now each output keeps the input's float type
    where its format holds it, and a NIfTI's scaled integers (read as float64) come back as float32."""
    volume = np.random.default_rng(4).normal(100, 5, (12, 13, 14))
    np.save(tmp_path / "in.npy", volume)
    scaled = nibabel.Nifti1Image(np.rint(volume * 10).astype(np.int16).transpose(2, 1, 0), np.eye(4))
    scaled.header.set_slope_inter(0.1, 0.0)
    nibabel.save(scaled, tmp_path / "scaled.nii.gz")
    outputs = {"in.npy": ["out.npy", "out.nii.gz", "out.tif"], "scaled.nii.gz": ["scaled_out.nii.gz", "scaled_out.npy"]}
    for source, names in outputs.items():
        for name in names:
            command = [*CLI, "denoise-volume", str(tmp_path / source), str(tmp_path / name), "--h", "5"]
            result = subprocess.run([*command, "--search-radius", "1", "--backend", "cpu", "--quiet"], timeout=300)
            assert result.returncode == 0
    dtypes = {name: read_volume(tmp_path / name).data.dtype for names in outputs.values() for name in names}
    assert dtypes == {
        "out.npy": np.float64,
        "out.nii.gz": np.float64,
        "out.tif": np.float64,
        "scaled_out.nii.gz": np.float32,
        "scaled_out.npy": np.float32,
    }
    expected = denoise_volume(volume, h=5, search_radius=1, backend="cpu")
    # The float32 filter's values in float64; the CPU kernel's fast-math sums may round differently
    # in another process (its vector loops start where the arrays' alignment lets them): 1e-6 relative.
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected.astype(np.float64), rtol=1e-6, atol=0)


def test_voxel_sizes_keep_their_unit_from_one_format_to_another(tmp_path) -> None:
    """A NIfTI in mm written as TIFF was a plain TIFF whose resolution said inches; an ImageJ
    stack in microns written as NIfTI had no unit. Each now carries its unit (found by a first-time user)."""
    rng = np.random.default_rng(5)
    voxels = rng.integers(0, 3000, (14, 12, 10), dtype=np.uint16)  # (x, y, z) as NIfTI stores it
    image = nibabel.Nifti1Image(voxels, np.diag([0.8, 0.9, 2.5, 1.0]))
    image.header.set_xyzt_units(xyz="mm")
    nibabel.save(image, tmp_path / "scan.nii.gz")
    scan = read_volume(tmp_path / "scan.nii.gz")
    assert scan.extra["unit"] == "mm" and scan.spacing == pytest.approx((2.5, 0.9, 0.8))
    write_volume(tmp_path / "scan.tif", scan.data.astype(np.float32), scan)
    with tifffile.TiffFile(tmp_path / "scan.tif") as written:  # an ImageJ stack: Fiji reads the voxel size in mm
        assert written.imagej_metadata["unit"] == "mm" and written.imagej_metadata["spacing"] == pytest.approx(2.5)
    back = read_volume(tmp_path / "scan.tif")
    assert back.extra["unit"] == "mm" and back.spacing == pytest.approx((2.5, 0.9, 0.8))
    write_volume(tmp_path / "scan64.tif", scan.data.astype(np.float64), scan)  # no ImageJ float64: plain TIFF
    with tifffile.TiffFile(tmp_path / "scan64.tif") as written:
        assert written.pages[0].tags["ResolutionUnit"].value == 1  # none, where it said inches
    assert read_volume(tmp_path / "scan64.tif").extra["unit"] == "mm"

    stack = rng.random((6, 7, 8), dtype=np.float32)
    options = {"imagej": True, "resolution": (5.0, 5.0), "metadata": {"spacing": 0.5, "unit": "micron"}}
    tifffile.imwrite(tmp_path / "cells.tif", stack, **options)
    cells = read_volume(tmp_path / "cells.tif")
    write_volume(tmp_path / "cells.nii.gz", cells.data, cells)
    header = nibabel.load(tmp_path / "cells.nii.gz").header
    assert header.get_xyzt_units()[0] == "micron" and header.get_zooms() == pytest.approx((0.2, 0.2, 0.5))
    tifffile.imwrite(tmp_path / "nano.tif", stack, **{**options, "metadata": {"spacing": 40.0, "unit": "nm"}})
    nano = read_volume(tmp_path / "nano.tif")
    write_volume(tmp_path / "nano.nii.gz", nano.data, nano)
    header = nibabel.load(tmp_path / "nano.nii.gz").header  # no NIfTI code for nm: in microns
    assert header.get_xyzt_units()[0] == "micron" and header.get_zooms() == pytest.approx((0.2e-3, 0.2e-3, 0.04))
    pixels = read_volume(tmp_path / "cells.tif")
    pixels.extra["unit"] = "pixel"
    assert "no code for the unit 'pixel'" in lost_in(tmp_path / "out.nii.gz", pixels)
    assert lost_in(tmp_path / "out.nii.gz", cells) == ""


@pytest.mark.parametrize("air", [0.25, 0.75])
def test_mri_magnitude_noise_is_read_right_beside_much_air(air) -> None:
    """Blocks at the object's edge, mostly air with a few bright voxels, passed the background test
    by their mean, and the air's Rayleigh spread pulled sigma 14 % low at three quarters air (found
    by a first-time user): a block with more than a tenth of its voxels under 3 sigma is air."""
    rng = np.random.default_rng(1)
    clean = np.zeros((24, 72, 80))
    clean[:, :, : int(80 * (1 - air))] = 400 + 100 * np.sin(np.arange(72) / 9)[None, :, None]
    sigma = 30.0
    magnitude = np.hypot(clean + rng.normal(0, sigma, clean.shape), rng.normal(0, sigma, clean.shape))
    assert estimate_volume_noise(magnitude).average_sigma == pytest.approx(sigma, rel=0.05)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stopped_volume_run_says_cancelled_and_leaves_no_file(tmp_path, stop) -> None:
    """SIGTERM ended the run with the signal and no word, where a video export says 'cancelled'."""
    np.save(tmp_path / "in.npy", np.random.default_rng(9).random((48, 128, 128), dtype=np.float32))
    command = [*CLI, "denoise-volume", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--backend", "cpu",
               "--h", "0.3", "--search-radius", "4"]  # fmt: skip
    status, error = stopped_under_way(command, " %", stop)  # the progress line: the filter is under way
    assert status == 130, error
    assert error.splitlines()[-1] == f"nlmeans-studio: cancelled; {tmp_path / 'out.npy'} was not written"
    assert "Traceback" not in error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy"]


def test_a_stopped_noise_estimate_says_cancelled(tmp_path) -> None:
    """Only denoise set up the stop signals: estimate-noise ended by SIGTERM died without a word."""
    volume = np.random.default_rng(4).normal(100, 10, (96, 384, 384)).astype(np.float32)  # seconds to estimate
    np.save(tmp_path / "in.npy", volume)
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}  # each import listed on stderr as it ends
    command = [*CLI, "estimate-noise", str(tmp_path / "in.npy")]
    with subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment,
        preexec_fn=default_signals,
    ) as child:  # fmt: skip
        error = ""
        while "nlmeans_studio.engine.cli\n" not in error:  # the command line's module, imported
            error += child.stderr.read(1)
            assert error or child.poll() is None
        time.sleep(1.0)  # reading the volume, or estimating its noise
        child.send_signal(signal.SIGTERM)
        error += child.stderr.read()
        assert child.wait(timeout=60) == 130, error
    assert error.splitlines()[-1] == "nlmeans-studio: cancelled" and "Traceback" not in error
