"""An output folder held by one run at a time: an advisory kernel lock (``flock``) on a
file inside it, taken for the whole run.

The kernel drops the lock when the process ends, however it ends (a SIGKILL, an out of
memory kill, a power cut), so a run that died never leaves a stale lock: the next run
takes the file over. The file holds the holder's pid (and host), which a second run
names in its error. The holder deletes the file when it is done; a run that locked a
file someone deleted meanwhile (the holder, finishing) locks the new one instead, so
two runs can never each hold a lock of their own.

``flock`` and not ``fcntl``'s record locks: those belong to the process, so a second run
in the same process (a thread, a notebook cell run twice) would take the lock again,
and closing any descriptor of the file (a ``TokenDataset`` reading it) drops them.
"""

from __future__ import annotations

import errno
import os
import socket
import time
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # Windows: no flock; runs there are not locked.
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "FolderLock"]

LOCK_NAME = ".bpekit.lock"


class FolderLock:
    """Holds ``folder`` (made if missing) for one run: ``with FolderLock(folder, what):``.
    A folder held by another run raises ``BlockingIOError`` at once, naming the folder
    and the holder's pid; ``what`` says what the folder is (``"dataset"``, ``"work_dir"``).
    ``remove_empty``: the folder goes too when the run leaves it empty (a work folder
    whose results were cleared while it was held)."""

    def __init__(
        self, folder: str | os.PathLike[str], what: str = "dataset", remove_empty: bool = False
    ) -> None:
        self.folder = Path(folder)
        self.what = what
        self.remove_empty = remove_empty
        self.path = self.folder / LOCK_NAME
        self.fd: int | None = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def acquire(self) -> None:
        if fcntl is None:
            return
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(f"{self.folder}: is a file; {self.what} names a folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            # O_NOFOLLOW: a link planted at the lock's name is refused, never written through.
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            writable = True
            try:
                fd = os.open(self.path, flags, 0o644)
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise OSError(
                        e.errno, f"cannot lock the {self.what} folder: {e.strerror}", str(self.path)
                    ) from None
                # Another user's lock file (flock needs no write access), or a folder
                # this run cannot write in, where it writes nothing either (a finished
                # dataset is returned as it is, else the first write fails).
                try:
                    fd = os.open(
                        self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                    )
                except OSError:
                    return
                writable = False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise BlockingIOError(
                    f"{self.folder}: another bpekit run ({holder}) is writing this {self.what}; "
                    "wait for it to end (or stop it), then run again"
                ) from None
            except OSError:
                # A file system without locks (some network mounts): the run goes on
                # unlocked, as it did before locks were taken.
                os.close(fd)
                return
            # Locked: but the file may have been deleted (and another made) by a holder
            # that finished between our open and our lock. Only the file at the name counts.
            try:
                st, named = os.fstat(fd), os.stat(self.path, follow_symlinks=False)
                same = (st.st_dev, st.st_ino) == (named.st_dev, named.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        if writable:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            # Deleted while still locked: a run waiting on this file sees it gone and
            # makes a new one (see acquire). One that cannot be deleted (a folder made
            # read-only meanwhile) stays; its lock goes with the descriptor.
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(fd)
        if self.remove_empty:
            try:
                self.folder.rmdir()
            except OSError:  # not empty: it keeps work, or files of others
                pass


def _holder(fd: int) -> str:
    """The holder of the lock on ``fd``, as it wrote itself there: ``pid N`` (``on
    HOST`` when another host holds it)."""
    text = b""
    # The holder writes its pid just after it locks: a moment's wait reads it.
    for _ in range(20):
        text = os.pread(fd, 256, 0)
        if text.endswith(b"\n"):
            break
        time.sleep(0.01)
    parts = text.decode("utf-8", "replace").split()
    if not parts or not parts[0].isdigit():
        return "pid unknown"
    host = " ".join(parts[1:])
    return f"pid {parts[0]}" + (f" on {host}" if host and host != socket.gethostname() else "")
