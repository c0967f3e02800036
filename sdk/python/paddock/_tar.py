"""Tar streams for files.upload/download: a local tree packed on the fly,
and a safe extraction of what a box sends (a box is not trusted: its
archive may name absolute paths, '..', links that lead out, devices)."""
from __future__ import annotations

import os
import posixpath
import queue
import stat
import tarfile
import threading
from typing import IO, Iterator, List, Optional

CHUNK = 256 * 1024


class _QueueWriter:
    """A file object whose writes become pieces of a request body."""

    def __init__(self, q: "queue.Queue[Optional[bytes]]"):
        self.q = q
        self.buf = bytearray()
        self.cancelled = False

    def write(self, data: bytes) -> int:
        if self.cancelled:
            raise BrokenPipeError("the upload stopped")
        self.buf += data
        if len(self.buf) >= CHUNK:
            self.flush_buf()
        return len(data)

    def flush_buf(self) -> None:
        if self.buf:
            self.q.put(bytes(self.buf))
            self.buf = bytearray()

    def flush(self) -> None:
        pass


def tar_stream(local_dir: str) -> Iterator[bytes]:
    """local_dir's contents (entries relative to it) as a tar stream, made
    in a thread while the pieces are sent. Symlinks are kept as links."""
    if not os.path.isdir(local_dir):
        raise NotADirectoryError(local_dir)
    q: "queue.Queue[Optional[bytes]]" = queue.Queue(maxsize=16)
    w = _QueueWriter(q)
    failure: List[BaseException] = []

    def produce() -> None:
        try:
            with tarfile.open(fileobj=w, mode="w|", format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
                for name in sorted(os.listdir(local_dir)):
                    tf.add(os.path.join(local_dir, name), arcname=name, recursive=True)
            w.flush_buf()
        except BaseException as e:  # handed to the consumer
            failure.append(e)
        finally:
            q.put(None)

    t = threading.Thread(target=produce, name="paddock-tar", daemon=True)
    t.start()
    try:
        while True:
            piece = q.get()
            if piece is None:
                break
            yield piece
        if failure:
            raise failure[0]
    finally:
        w.cancelled = True
        # Unblock the producer if the consumer stopped early.
        while t.is_alive():
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        t.join()


def _clean_name(name: str) -> Optional[str]:
    """The member's name as a relative path, or None when it is absolute
    or climbs out with '..'."""
    if name.startswith("/") or "\\" in name and os.sep == "\\":
        return None
    parts = []
    for p in name.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            return None
        parts.append(p)
    return "/".join(parts) if parts else ""


def _inside(rel: str) -> bool:
    n = posixpath.normpath(rel)
    return not (n == ".." or n.startswith("../") or n.startswith("/"))


def _parent_ok(root: str, rel: str) -> bool:
    """Every directory on the way to rel is a real directory under root
    (never a symlink: an entry must not be written through a link)."""
    cur = root
    for p in rel.split("/")[:-1]:
        cur = os.path.join(cur, p)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            return False
    return True


def _clear(path: str) -> None:
    """Removes what is at path unless it is a directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)


def safe_extract(fileobj: IO[bytes], dest: str) -> List[str]:
    """Extracts the tar stream into dest; returns what it refused (with
    why): absolute names, '..', symlinks whose target leads out of dest,
    hard links to outside the archive's own files, devices, FIFOs, and
    entries under a symlink. Setuid/setgid bits are dropped."""
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    skipped: List[str] = []
    refused: List[str] = []
    dirs = []
    with tarfile.open(fileobj=fileobj, mode="r|*") as tf:
        for m in tf:
            rel = _clean_name(m.name)
            if rel is None:
                skipped.append("%s: an absolute name or '..'" % m.name)
                continue
            if rel == "":
                continue
            target = os.path.join(root, rel)
            if any(rel.startswith(r + "/") for r in refused):
                skipped.append("%s: under a refused entry" % m.name)
                continue
            if not _parent_ok(root, rel):
                skipped.append("%s: under a link or a file" % m.name)
                continue
            mode = m.mode & 0o777
            if m.isdir():
                try:
                    st = os.lstat(target)
                    if not stat.S_ISDIR(st.st_mode):
                        os.unlink(target)
                        os.mkdir(target, 0o700)
                except FileNotFoundError:
                    os.mkdir(target, 0o700)
                dirs.append((target, mode, m.mtime))
            elif m.isreg():
                _clear(target)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | getattr(os, "O_CLOEXEC", 0), 0o600)
                with os.fdopen(fd, "wb") as out:
                    src = tf.extractfile(m)
                    assert src is not None
                    while True:
                        piece = src.read(CHUNK)
                        if not piece:
                            break
                        out.write(piece)
                    os.fchmod(out.fileno(), mode)
                os.utime(target, (m.mtime, m.mtime), follow_symlinks=False)
            elif m.issym():
                link = m.linkname
                if link.startswith("/") or not _inside(
                        posixpath.join(posixpath.dirname(rel), link)):
                    skipped.append("%s: a link out (-> %s)" % (m.name, link))
                    refused.append(rel)
                    continue
                _clear(target)
                os.symlink(link, target)
            elif m.islnk():
                src_rel = _clean_name(m.linkname)
                src = os.path.join(root, src_rel) if src_rel else None
                if not src or not _parent_ok(root, src_rel or "") or \
                        not os.path.isfile(src) or os.path.islink(src):
                    skipped.append("%s: a hard link to outside (-> %s)" % (m.name, m.linkname))
                    refused.append(rel)
                    continue
                _clear(target)
                os.link(src, target, follow_symlinks=False)
            else:
                skipped.append("%s: a device, FIFO or socket" % m.name)
                refused.append(rel)
    # Directories last: their modes could forbid the writes inside them.
    for path, mode, mtime in reversed(dirs):
        os.chmod(path, mode | 0o700)
        os.utime(path, (mtime, mtime))
    return skipped
