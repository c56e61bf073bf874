"""An output file written under a hidden name beside it, held by one run, renamed when complete.

A run writes OUTPUT as ``.<digest>.part<suffix>`` (or, for an image sequence, into a hidden
folder ``.<digest>.part``): short whatever the length of OUTPUT's name, and the same for every
run that writes OUTPUT, so a second run at the same time finds it locked and is refused instead
of writing over the first's work. The lock (``flock``) dies with its process, so what a killed
run left behind is taken over, not a reason to refuse. Publishing renames into place, and never
over a file that appeared meanwhile unless the run may overwrite; a sequence's images go as one
step, taken back all together where one cannot be placed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: an exclusive create stands in for the lock
    fcntl = None


class OutputBusyError(OSError):
    """Another run is writing the same output now."""


def folder_problem(path: Path) -> str | None:
    """Why no file can be written beside ``path`` (its folder missing or read-only), or None.

    Asked before any work, so that a long run does not end on it.

    A file is created there and dropped: ``os.access`` says yes to root everywhere, /sys
    included, where a run then failed at its end.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not folder.is_dir():
        return f"the folder {folder} does not exist: create it, or choose a folder that does"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return f"the folder {folder} is not writable ({error.strerror or error})"
    return None


def dangling_link(path: Path) -> str | None:
    """Return what ``path`` is where it is a symbolic link to nothing, else None.

    Such a name passes a look with ``exists`` and then fails the rename into place, after all the
    work.
    """
    if path.is_symlink() and not path.exists():
        return f"is a link to {os.readlink(path)}, which does not exist"
    return None


def hidden_name(path: Path, *, sequence: bool) -> Path:
    """Return where a run writes ``path`` until it is complete: ``.<digest>.part<suffix>``, or a sequence's folder."""
    digest = hashlib.sha256(path.name.encode()).hexdigest()[:12]
    return path.with_name(f".{digest}.part" if sequence else f".{digest}.part{path.suffix}")


def remove_left_behind(hidden: Path) -> None:
    """Remove the hidden file (``hidden_name``) a stopped run left, unless a run holds it now.

    For a batch cancelled while its workers wrote: a later run would take the file over, but
    until then it sits in the user's folder.
    """
    with _unheld(hidden) as free, contextlib.suppress(OSError):  # one that cannot be removed is left as it is
        if free:
            hidden.unlink(missing_ok=True)


def held_by_a_run(hidden: Path) -> bool:
    """Whether a run is writing the hidden file ``hidden`` now (it holds the file's lock)."""
    with _unheld(hidden) as free:
        return hidden.exists() and not free


@contextlib.contextmanager
def _unheld(hidden: Path) -> Iterator[bool]:
    """Yield whether ``hidden`` exists with no run holding it, holding its lock meanwhile where it does."""
    try:
        descriptor = os.open(hidden, os.O_RDWR)
    except OSError:  # none, or not ours to open
        yield False
        return
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        free = True
    except OSError:  # a run holds it (BlockingIOError)
        free = False
    try:
        yield free
    finally:
        os.close(descriptor)


class StagedOutput:
    """Where ``path`` is written until it is complete; ``path`` is ``staged`` once published.

    Parameters
    ----------
    path : Path
        The output: a file, or an image sequence's pattern (``scans/%06d.png``).
    sequence : bool
        Whether ``path`` is an image sequence: its images are written into a hidden folder.
    overwrite : bool
        Whether publishing may replace files of that name.

    Raises
    ------
    OutputBusyError
        Another run holds the output.
    """

    def __init__(self, path: Path, *, sequence: bool, overwrite: bool) -> None:
        self.path, self._sequence, self._overwrite = path, sequence, overwrite
        self._hidden = hidden_name(path, sequence=sequence)
        if sequence:
            self._hidden.mkdir(exist_ok=True)
            self.staged = self._hidden / path.name
        else:
            self.staged = self._hidden
        self._lock = self._claim()

    def _claim(self) -> int:
        """Return an open descriptor of the hidden file or folder, locked for this run."""
        if fcntl is None:
            try:
                return os.open(self._hidden / ".lock" if self._sequence else self._hidden, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                raise OutputBusyError(
                    f"{self.path}: another run is writing it (or one that stopped abnormally left {self._hidden}: "
                    "remove it)"
                ) from None
        descriptor = os.open(self._hidden, os.O_RDONLY if self._sequence else os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            busy = f"{self.path}: another run is writing it now; wait for it or choose another name"
            raise OutputBusyError(busy) from None
        return descriptor

    def publish(self, replaced: Sequence[Path] = ()) -> None:
        """Rename what was written into place and release the output.

        An image sequence is placed as one step: where any rename fails, or an exception (a
        signal's) comes meanwhile, every image placed is taken back and every file it replaced
        put back, and nothing of the run is kept.

        Parameters
        ----------
        replaced : sequence of Path
            With overwrite, files the sequence replaces besides those of its images' names (the
            images of an older, longer sequence): removed with the same step, put back with it.

        Raises
        ------
        FileExistsError
            Without overwrite, a file of that name appeared while the run wrote: a single file is
            kept beside it under a name of its own, which the message gives; a sequence is not kept.
        """
        try:
            if self._sequence:
                self._publish_sequence(replaced)
            else:
                self._place(self._hidden, self.path)
        finally:
            self._release()

    def _publish_sequence(self, replaced: Sequence[Path]) -> None:
        images = sorted(image for image in self._hidden.iterdir() if image.name != ".lock" and image.is_file())
        aside = self._hidden / ".replaced"  # what the sequence replaces, until every image is placed
        aside.mkdir(exist_ok=True)
        renamed: list[tuple[Path, Path]] = []  # (from, to), undone in reverse where a step fails
        try:
            if self._overwrite:
                for old in [*replaced, *(self.path.parent / image.name for image in images)]:
                    if os.path.lexists(old):
                        os.replace(old, aside / old.name)
                        renamed.append((old, aside / old.name))
            for image in images:
                target = self.path.parent / image.name
                if not _link(image, target):
                    raise FileExistsError(
                        f"{target}: appeared while this run wrote the sequence; nothing of it was kept: pass "
                        "--overwrite to replace it, or choose another name"
                    )
                renamed.append((image, target))
                image.unlink(missing_ok=True)
        except BaseException:
            for source, target in reversed(renamed):
                os.replace(target, source)
            self.discard()
            raise
        self._release()
        shutil.rmtree(self._hidden, ignore_errors=True)

    def _place(self, written: Path, target: Path) -> None:
        if self._overwrite:
            os.replace(written, target)
            return
        if not _link(written, target):
            kept = target.with_name(f"{target.stem}.{os.getpid()}{target.suffix}")
            os.replace(written, kept)
            raise FileExistsError(f"{target}: appeared while this run wrote it; the result is {kept}")
        written.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove what was written and release the output (idempotent)."""
        if self._sequence:
            shutil.rmtree(self._hidden, ignore_errors=True)
        else:
            self._hidden.unlink(missing_ok=True)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock)
            self._lock = None


def _link(written: Path, target: Path) -> bool:
    """Give ``written`` the name ``target`` too, unless that name exists (False).

    Atomically by a hard link, else (a file system without them) by a rename after a look.
    """
    try:
        os.link(written, target)
    except FileExistsError:
        return False
    except OSError:
        if os.path.lexists(target):
            return False
        os.replace(written, target)
    return True
