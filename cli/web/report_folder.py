"""Where ``benchledger report`` writes its pages: a new folder, an empty one, or one holding an earlier report.

The report is built in a new folder beside the one named (``.NAME.benchledger-build-…``)
and then put in its place, so a folder that held an earlier report ends up holding
this report only (no page of a goal the earlier one showed is left behind), and an
interrupted report leaves the earlier one as it was. A report folder is known by the
:data:`MARKER` file every report writes; a folder that is neither new, empty nor a
report (``/``, a home folder, a project) is refused before anything is written, and so
is an earlier report holding anything a report does not write (a symbolic link above
all: the report never follows or removes one it did not make).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from benchledger.errors import InvalidInput

MARKER = ".benchledger-report"
MARKER_TEXT = (
    "This folder holds a report written by `benchledger report`.\n"
    "The next `benchledger report --output` into this folder replaces all of it.\n"
)
# The names a report writes at its top (everything else it writes is inside assets/ and goals/).
_REPORT_TOP = re.compile(r"index(?:-[0-9]+)?\.html|assets|goals|" + re.escape(MARKER))


def write_report(output: Path, build: Callable[[Path], int]) -> int:
    """Have ``build`` write a report into a new folder beside ``output``, then put it in ``output``'s place.

    ``build`` gets the new folder and returns how many files it wrote; the
    marker is written last (counted too). Refuses (:class:`InvalidInput`,
    nothing written) a folder that is not new, empty, or an earlier report.
    """
    target = Path(os.path.abspath(output))
    earlier = _earlier_content(output, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = _new_sibling(target, "build")
    try:
        written = build(folder)
        write_file(folder, [MARKER], MARKER_TEXT.encode())
        _put_in_place(folder, target, earlier)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return written + 1


def _earlier_content(output: Path, target: Path) -> str:
    """What ``target`` holds now: ``"nothing"`` (missing), ``"empty"`` or ``"report"``; anything else is refused."""
    def refuse(why: str) -> InvalidInput:
        return InvalidInput(f"refusing to write the report into {output}: {why}")

    try:
        status = os.lstat(target)
    except FileNotFoundError:
        return "nothing"
    if stat.S_ISLNK(status.st_mode):
        raise refuse("it is a symbolic link (name the folder it points to)")
    if not stat.S_ISDIR(status.st_mode):
        raise refuse("it is not a folder")
    with os.scandir(target) as entries:
        names = sorted(entry.name for entry in entries)
    if not names:
        return "empty"
    if MARKER not in names:
        raise refuse(f"it is not empty and holds no earlier report (no {MARKER} file): choose a new or empty folder")
    if not stat.S_ISREG(os.lstat(target / MARKER).st_mode):
        raise refuse(f"its {MARKER} is not the file a report writes")
    for name in names:
        if not _REPORT_TOP.fullmatch(name):
            raise refuse(f"{output / name} is not part of the earlier report (move it out, or choose another folder)")
    _refuse_links(output, target)
    return "report"


def _refuse_links(output: Path, target: Path) -> None:
    """A symbolic link in an earlier report was planted (a report makes none): refused by name, never followed or removed."""
    for folder, folders, files in os.walk(target):  # links to folders are listed, not followed
        for name in sorted(folders + files):
            if os.path.islink(os.path.join(folder, name)):
                shown = output / Path(folder, name).relative_to(target)
                raise InvalidInput(
                    f"refusing to write the report into {output}: {shown} is a symbolic link "
                    "benchledger did not make (remove it, or choose another folder)"
                )


def _new_sibling(target: Path, purpose: str) -> Path:
    """A new folder beside ``target`` (same file system, so it can be renamed into place); the umask sets its mode."""
    while True:
        sibling = target.with_name(f".{target.name}.benchledger-{purpose}-{secrets.token_hex(4)}")
        try:
            os.mkdir(sibling, 0o777)
            return sibling
        except FileExistsError:
            continue


def _put_in_place(folder: Path, target: Path, earlier: str) -> None:
    if earlier == "nothing":
        os.rename(folder, target)  # fails, rather than merges, if a folder with files appeared there meanwhile
        return
    os.chmod(folder, stat.S_IMODE(os.stat(target).st_mode))  # the folder keeps the permissions it was given
    if earlier == "empty":
        os.rename(folder, target)  # replaces the folder only while it is still empty
        return
    retired = _new_sibling(target, "old")
    os.rename(target, retired)  # onto the empty folder just made
    try:
        os.rename(folder, target)
    except BaseException:
        os.rename(retired, target)
        raise
    shutil.rmtree(retired)  # removes links it meets, never what they point at


def write_file(root: Path, parts: list[str], body: bytes) -> None:
    """Write ``body`` at ``root/parts…``, never through a link.

    Each folder on the way is opened without following links, and the file is
    written to a new file of its own, then renamed over any old one: a link
    planted meanwhile, symbolic or hard, is replaced, never written through.
    """
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, part in enumerate(parts[:-1]):
            try:
                os.mkdir(part, dir_fd=folder)
            except FileExistsError:
                pass
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as exc:
                link = root.joinpath(*parts[: depth + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(link):
                    raise InvalidInput(f"refusing to write the report into {root}: {link} is a symbolic link benchledger did not make") from exc
                raise
            os.close(folder)
            folder = inner
        name = parts[-1]
        draft = f".{name}.{os.getpid()}.partial"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=folder)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(body)
            os.replace(draft, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            os.unlink(draft, dir_fd=folder)
            raise
    finally:
        os.close(folder)
