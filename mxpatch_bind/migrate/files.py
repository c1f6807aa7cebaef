"""Private to ``migrate``: which files to read, how to read them, and how to write them safely.

Every source is read as bytes and decoded the way Python itself would (a UTF-8 BOM, a PEP 263
``coding`` line, else UTF-8), newlines untouched, so that a rewrite can hand back the same
bytes except for the statements it changed. Writes go to a temporary file beside the target,
are flushed to disk, take the target's mode and replace it in one rename: a write that fails
half-way (a full disk) leaves the target exactly as it was.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SKIPPED_DIRS = {"__pycache__", "build", "dist", "node_modules", "venv", "site-packages"}


class FileProblem(Exception):
    """A per-file problem that becomes one ``[check]`` line; ``io_error`` makes the exit 2."""

    def __init__(self, message: str, io_error: bool = False):
        super().__init__(message)
        self.io_error = io_error


@dataclass(frozen=True)
class Entry:
    """One ``.py`` name found by the walk: where it is, and whether it may be written."""

    rel: PurePosixPath
    path: Path
    problem: str | None = None   # why it cannot be read at all (then nothing else is done)
    read_only: str | None = None  # why it must not be written (a link leaving PATH)
    planned: bytes | None = None  # the content the run's planned writes give it


@dataclass(frozen=True)
class Source:
    """A decoded file and what is needed to encode it back byte for byte."""

    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        """``text`` in this file's encoding, with its BOM when it had one."""
        body = text.encode(self.encoding)
        return codecs.BOM_UTF8 + body if self.bom else body


def walk(path: Path, suffixes: tuple = (".py",)) -> tuple[Path, list[Entry]]:
    """(root, the ``.py`` entries under ``path`` in sorted order); a file is its own tree.

    Directories are not followed through symbolic links (a link loop cannot hang the walk).
    A file link pointing inside the root is skipped (its target is scanned under its own
    name); one pointing outside is read but never written; a dangling one and anything that
    is not a regular file (a FIFO named ``x.py`` would block ``open``) is a problem.
    """
    if not path.is_dir():
        root = path.parent
        return root, [_entry(root, path, root.resolve())]
    root_real = path.resolve()
    entries: list[Entry] = []
    unlisted: list[OSError] = []
    for directory, subdirs, names in os.walk(path, onerror=unlisted.append):
        subdirs[:] = sorted(d for d in subdirs if not skipped_dir(Path(directory), d))
        for name in sorted(names):
            if name.endswith(suffixes):
                entry = _entry(path, Path(directory) / name, root_real)
                if entry is not None:
                    entries.append(entry)
    for error in unlisted:  # an unreadable directory: say so instead of skipping it silently
        rel = PurePosixPath(Path(error.filename).relative_to(path).as_posix())
        entries.append(Entry(rel, Path(error.filename), problem="cannot list directory: "
                                                                f"{error.strerror or error}"))
    return path, entries


def skipped_dir(parent: Path, name: str) -> bool:
    """Whether the walk leaves out ``parent / name``: hidden folders (``.git``), build output,
    and virtual environments (a folder holding ``pyvenv.cfg``, whatever its name: a Python 2
    virtualenv inside the tree is not the repository's code).

    A folder whose ``pyvenv.cfg`` cannot even be looked at (its path is longer than PATH_MAX)
    is not skipped: the walk then fails to list it and says so in one ``[check]``."""
    if name.startswith(".") or name in SKIPPED_DIRS:
        return True
    try:
        return (parent / name / "pyvenv.cfg").is_file()
    except OSError:  # ENAMETOOLONG: pathlib's is_file raises it
        return False


def _entry(root, path, root_real):
    rel = PurePosixPath(path.relative_to(root).as_posix())
    try:
        if path.is_symlink():
            return _link_entry(rel, path, root_real)
        mode = path.lstat().st_mode
    except OSError as error:
        return Entry(rel, path, problem=f"cannot stat: {error.strerror or error}")
    if not stat.S_ISREG(mode):
        return Entry(rel, path, problem=f"not a regular file ({_kind(mode)}): skipped")
    return Entry(rel, path)


def _link_entry(rel, path, root_real):
    target = Path(os.path.realpath(path))
    if not target.exists():
        return Entry(rel, path, problem=f"dangling symbolic link to {os.readlink(path)}: skipped")
    if not stat.S_ISREG(target.stat().st_mode):
        return Entry(rel, path, problem=f"symbolic link to {target}, not a regular file: skipped")
    if _is_within(target, root_real):
        return None  # scanned under the target's own name
    return Entry(rel, path, read_only=f"a symbolic link to {target}, outside PATH: not written")


def _is_within(path, root):
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _kind(mode):
    for test, word in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return word
    return f"mode {mode:o}"


def read(path: Path, planned: bytes | None = None) -> Source:
    """The file decoded as Python decodes a source file; ``planned``: the content a planned
    write gives it, read instead of the disk's.

    Raises
    ------
    FileProblem
        Unreadable (``io_error``) or not decodable in its declared encoding.
    """
    return decode(read_bytes(path) if planned is None else planned)


def read_bytes(path: Path) -> bytes:
    """The file's bytes.

    Raises
    ------
    FileProblem
        Unreadable (``io_error``).
    """
    try:
        return path.read_bytes()
    except OSError as error:
        raise FileProblem(f"cannot read: {error.strerror or error}", io_error=True) from None


def content(path: Path) -> tuple[bytes, int]:
    """(its bytes, or a symbolic link's target; its ``st_mode``): what a patch deleting
    ``path`` removes.

    Raises
    ------
    FileProblem
        Unreadable (``io_error``).
    """
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            return os.fsencode(os.readlink(path)), mode
    except OSError as error:
        raise FileProblem(f"cannot read: {error.strerror or error}", io_error=True) from None
    return read_bytes(path), mode


def decode(data: bytes) -> Source:
    """``data`` decoded by its BOM / PEP 263 line (default UTF-8), newlines kept."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise FileProblem(f"cannot read: {error}") from None
    bom = encoding == "utf-8-sig"
    body = data[len(codecs.BOM_UTF8):] if bom else data
    codec = "utf-8" if bom else encoding
    try:
        return Source(body.decode(codec), codec, bom)
    except UnicodeDecodeError as error:
        raise FileProblem(f"cannot read: not {codec} ({error.reason}); declare its encoding with a "
                          "'# -*- coding: NAME -*-' line") from None


def lenient_text(path: Path) -> str:
    """Whatever text can be got from the file, for a last-resort search of its imports."""
    try:
        with open(path, "rb") as handle:  # only called on regular files
            return handle.read().decode("latin-1")
    except OSError:
        return ""


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path``'s content by ``data``, all or nothing, keeping its mode.

    Raises
    ------
    FileProblem
        The write failed (``io_error``); ``path`` is unchanged and no temporary is left.
    """
    if path.is_symlink():
        raise FileProblem("is a symbolic link: not written", io_error=True)
    temporary = None
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        # a short prefix: the temporary's name must fit NAME_MAX where the file's just does
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.",
                                             suffix=".migrate-tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
        temporary = None
        _fsync_directory(path.parent)
    except OSError as error:
        raise FileProblem(f"write failed, the file is unchanged: {error.strerror or error}",
                          io_error=True) from None
    finally:
        if temporary is not None:
            _remove_quietly(temporary)


def delete(path: Path) -> None:
    """Remove ``path`` (a link itself, never its target).

    Raises
    ------
    FileProblem
        It could not be removed (``io_error``).
    """
    try:
        path.unlink()
    except OSError as error:
        raise FileProblem(f"delete failed: {error.strerror or error}",
                          io_error=True) from None


def _fsync_directory(directory):
    # The rename is durable only once the directory entry is on disk too.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_quietly(name):
    try:
        os.unlink(name)
    except OSError:
        pass
