"""Writes files under a local directory without following symlinks or leaving it."""

from __future__ import annotations

import errno
import os
import stat


def safe_parts(path: str) -> list[str]:
    """The components of a workspace-relative path; ValueError for anything that could leave the
    directory (absolute, ``..``, ``.``, empty components, NUL)."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r}: expected a plain relative path such as 'out/data.csv'")
    return parts


def write_under(root: str, path: str, data: bytes) -> str:
    """Writes ``data`` to ``root/path`` and returns that path.

    Every directory is opened relative to its parent with O_NOFOLLOW, so a symlink anywhere on
    the way (planted in ``root`` or raced in) is an error instead of a way out of ``root``; the
    file itself is replaced only if it is a regular file.
    """
    parts = safe_parts(path)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    directory = os.open(root, flags)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=directory)
            except FileExistsError:
                pass
            child = os.open(part, flags, dir_fd=directory)
            os.close(directory)
            directory = child
        file_flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], file_flags | os.O_NONBLOCK, 0o644, dir_fd=directory)
        except OSError as error:
            if error.errno == errno.ELOOP:
                message = f"{path}: is a symlink in {root}; not replaced"
                raise OSError(error.errno, message) from None
            raise
        with os.fdopen(fd, "wb") as out:
            if not stat.S_ISREG(os.fstat(out.fileno()).st_mode):
                raise OSError(errno.EINVAL, f"{path}: not a regular file in {root}; not replaced")
            out.write(data)
    finally:
        os.close(directory)
    return os.path.join(root, *parts)
