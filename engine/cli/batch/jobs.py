"""The files a batch's inputs name, and where each one's output goes.

An input is a file (taken whatever its name), a folder (its video and volume files, at any depth)
or a glob (the video and volume files it matches). An output keeps its input's path relative to
the folder, or to the glob's fixed leading folders (a file: its name alone), under the output
folder; and its extension, unless the codec asked for cannot be held there (a .mov given
``--codec ffv1``), where it becomes .mkv, which holds every codec. A batch never reads outputs:
neither the output folder's files nor those of a folder another batch wrote (its record there).
An image sequence found in a folder or glob (numbered images of one name: a film scan's reel) is
one job, its frames filtered together; its output is a sequence of the same name, format and
frame numbers under the output folder, written whole (its images are no keyframes' segments).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...media.formats import OUTPUT_CONTAINERS
from ...media.image_sequence import is_image_sequence, sequence_files
from ...media.reader import VIDEO_SUFFIXES
from ...volume.io import VOLUME_SUFFIXES

BATCH_MANIFEST = ".nlmeans-batch.json"  # in the output folder: the record of its batches (``manifest``)
LOG_FOLDER = ".nlmeans-logs"  # in the output folder: one log a file, at its output's relative path
SEGMENT_FOLDER = ".nlmeans-segments"  # in the output folder: a long file's segments until they are joined
ANY_CODEC_SUFFIX = ".mkv"  # Matroska holds every codec the writer has
NUMBERED_IMAGE = re.compile(r"(.*?)(\d+)(\.[A-Za-z]+)")  # a sequence's image: a name, its number, its format
SEQUENCE_SUFFIXES = (".png", ".tif", ".tiff", ".dpx", ".exr", ".jpg", ".jpeg")  # images FFmpeg reads as sequences


@dataclass(frozen=True)
class Job:
    """One file of a batch: paths absolute, as every worker must see them.

    Attributes
    ----------
    input : str
        The file to denoise, or the sequence's pattern.
    output : str
        Where its denoised copy goes (a pattern for a sequence).
    name : str
        The output's path relative to the output folder: the job's name in the manifest, the
        progress and the summary.
    log : str
        The file the run's messages (``denoise``'s stderr) go to.
    volume : bool
        Whether it goes through ``denoise-volume`` rather than ``denoise``.
    sequence : bool
        Whether its input and output are image sequences, named by patterns (``reel1/%06d.dpx``).
    segments : str
        The folder its segments are written to, where it is long enough to be cut (``segments``),
        removed once they are joined.
    """

    input: str
    output: str
    name: str
    log: str
    volume: bool
    sequence: bool
    segments: str

    def output_files(self) -> list[Path]:
        """Return the output's files that exist: the file, or the sequence's images."""
        return self._existing(Path(self.output))

    def input_files(self) -> list[Path]:
        """Return the input's files that exist: the file, or the sequence's images."""
        return self._existing(Path(self.input))

    def _existing(self, path: Path) -> list[Path]:
        return sequence_files(path) if self.sequence else [path] if path.exists() else []

    def segment(self, index: int) -> Path:
        """Return where segment ``index`` is written: a file of the output's container."""
        return Path(self.segments) / f"{index:05d}{Path(self.output).suffix}"

    def segment_log(self, index: int) -> str:
        """Return the log of segment ``index``: beside the file's."""
        return f"{self.log.removesuffix('.log')}.segment{index + 1:05d}.log"  # counted from 1, as the progress does


def find_jobs(
    inputs: list[str],
    out: Path,
    *,
    codec: str | None,
    left_out: list[Path] | None = None,
    skipped: list[Path] | None = None,
) -> list[Job]:
    """Find the jobs of ``inputs`` (files, folders, globs) with outputs under ``out``, in input order.

    Parameters
    ----------
    inputs : list of str
        As the command line gives them.
    out : Path
        The output folder; files under it are never inputs (a rerun would denoise its outputs).
    codec : str or None
        The video codec asked for (``denoise --codec``): it decides the extension an output can have.
        None: each file's own (``default_codec``), which its own container holds where it is one.
    left_out : list of Path, optional
        Gets the folders inside an input folder that another batch wrote (its BATCH_MANIFEST there):
        their files are that batch's outputs, not inputs.
    skipped : list of Path, optional
        Gets the files of input folders and globs that are not named as videos or volumes (notes,
        thumbnails), hidden ones left out. The images of a folder's or glob's image sequences are
        one job a sequence, as a pattern (``scans/%06d.dpx``), not files of their own.

    Raises
    ------
    ValueError
        An input that is neither a file, a folder nor a glob that matches, or that lies in ``out``;
        inputs that match no file at all; two inputs whose outputs would have the same name.
    """
    out = _absolute(out)
    left_out = [] if left_out is None else left_out
    skipped = [] if skipped is None else skipped
    jobs: dict[str, Job] = {}
    for given in inputs:
        for path, root, sequence in _files_of(given, out, left_out, skipped):
            job = _job(path, path.relative_to(root), out, codec, sequence=sequence)
            other = jobs.setdefault(job.name, job)
            if other.input != job.input:
                same_folder = Path(other.input).parent == Path(job.input).parent
                way_out = (
                    "rename one of them, or run them in two batches with other --out folders"
                    if same_folder  # the same stem: a codec's container made their names one
                    else "give the folder that holds both, so that their outputs keep their folders, or run them "
                    "in two batches"
                )
                raise ValueError(f"{other.input} and {job.input} would both be written to {job.output}: {way_out}")
    if not jobs:
        raise ValueError(
            f"no video, volume or image sequence in {' '.join(inputs)}: give files, folders holding files named "
            f"{', '.join((*VIDEO_SUFFIXES, *VOLUME_SUFFIXES))} or numbered images, or globs matching some"
        )
    return list(jobs.values())


def _files_of(given: str, out: Path, left_out: list[Path], skipped: list[Path]) -> list[tuple[Path, Path, bool]]:
    """(file, root, sequence) of one input, sorted by name; the root is what the output's path is relative to.

    A folder's or glob's image sequences come as their patterns, in place of their images, with
    ``sequence`` True. The folders another batch wrote are not walked, but added to ``left_out``;
    the files that are not videos or volumes (``_is_media``), hidden ones but for, to ``skipped``.
    """
    path = _absolute(Path(given))
    if path.exists() and path.is_relative_to(out):
        raise ValueError(
            f"{given} is in --out {out}, where the outputs go, and a batch never reads its outputs: give an "
            "--out folder outside the inputs"
        )
    if path.is_file():
        return [(path, path.parent, False)]
    if is_image_sequence(path) and sequence_files(path):
        return [(path, path.parent, True)]
    if path.is_dir() and (path / BATCH_MANIFEST).exists():
        raise ValueError(
            f"{given} is a batch's output folder (its {BATCH_MANIFEST}), and a batch never reads outputs: give "
            "the folder of the sources"
        )
    if path.is_dir():
        root = path
        files = (Path(folder) / name for folder, _, names in _walk_inputs(root, out, left_out) for name in names)
    elif glob.has_magic(given):
        root = _absolute(_fixed_part(given))
        files = (_absolute(Path(match)) for match in glob.glob(given, recursive=True) if os.path.isfile(match))
    else:
        raise ValueError(f"{given}: no such file or folder, and not a glob (*, ?, [...]): check the name")
    found = sorted((file, root) for file in files if not file.is_relative_to(out))
    runs = _sequences([file for file, _ in found if not _hidden(file.relative_to(root))])
    in_runs = {file for pattern in runs for file in sequence_files(pattern)}
    found = [(file, root) for file, root in found if file not in in_runs]
    skipped += [file for file, _ in found if not (_hidden(file.relative_to(root)) or _is_media(file.relative_to(root)))]
    media = [(file, root, False) for file, root in found if _is_media(file.relative_to(root))]
    return sorted(media + [(pattern, root, True) for pattern in runs])


def _sequences(files: list[Path]) -> list[Path]:
    """Return the image sequences among ``files``, as patterns: numbered images of one name, two or more.

    A film scan's frames (reel1_086400.dpx, ...), which a batch would otherwise fail one by one as
    2D images or skip. Numbered TIFF stacks of several planes stay volumes.
    """
    runs: dict[tuple[Path, str, int, str], list[Path]] = {}
    for file in files:
        match = NUMBERED_IMAGE.fullmatch(file.name)
        if match and match[3].lower() in SEQUENCE_SUFFIXES:
            runs.setdefault((file.parent, match[1], len(match[2]), match[3]), []).append(file)
    return [
        folder / f"{prefix.replace('%', '%%')}%0{digits}d{suffix}"
        for (folder, prefix, digits, suffix), images in runs.items()
        if len(images) > 1 and not _a_volume(images[0])
    ]


def _a_volume(image: Path) -> bool:
    """Whether a numbered image is a stack of planes (a TIFF volume), not one frame of a sequence."""
    if image.suffix.lower() not in VOLUME_SUFFIXES:
        return False
    try:
        import tifffile

        with tifffile.TiffFile(image) as tiff:
            return len(tiff.pages) > 1
    except Exception:  # unreadable here: the job that reads it says why
        return True


def _walk_inputs(root: Path, out: Path, left_out: list[Path]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)``, without the folders another batch wrote (added to ``left_out``) and ``out``."""
    for folder, folders, names in os.walk(root):
        here = Path(folder)
        if here == out or (here != root and BATCH_MANIFEST in names):
            if here != out:
                left_out.append(here)
            folders.clear()
            continue
        yield folder, folders, names


def _absolute(path: Path) -> Path:
    """``path`` from the root, links left as they are: a linked file keeps its own name and folder."""
    return Path(os.path.abspath(path))


def _fixed_part(pattern: str) -> Path:
    """Return the leading folders of a glob that hold no wildcard: its matches' root."""
    parts = Path(pattern).parts
    fixed = parts[: next(index for index, part in enumerate(parts) if glob.has_magic(part))]
    return Path(*fixed) if fixed else Path(".")


def _is_media(relative: Path) -> bool:
    """Tell a video or volume file, in no hidden folder and not hidden (a run's staged ``.part`` files)."""
    return not _hidden(relative) and relative.name.lower().endswith((*VIDEO_SUFFIXES, *VOLUME_SUFFIXES))


def _hidden(relative: Path) -> bool:
    """Tell a hidden file, or one in a hidden folder."""
    return any(part.startswith(".") for part in relative.parts)


def _job(path: Path, relative: Path, out: Path, codec: str | None, *, sequence: bool) -> Job:
    volume = not sequence and path.name.lower().endswith(VOLUME_SUFFIXES)
    if not (volume or sequence):
        holds = OUTPUT_CONTAINERS.get(relative.suffix.lower(), ((), ()))[1]
        held = codec in holds if codec is not None else bool(holds)  # no codec asked for: the file's own is held
        relative = relative if held else relative.with_suffix(ANY_CODEC_SUFFIX)
    name = relative.as_posix()
    return Job(
        input=str(path),
        output=str(out / relative),
        name=name,
        log=str(out / LOG_FOLDER / f"{name}.log"),
        volume=volume,
        sequence=sequence,
        segments=str(out / SEGMENT_FOLDER / name),
    )
