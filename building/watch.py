"""Has a file of an op changed since its last call? Asked on every call, so the answer must cost almost nothing.

Statting every source file of an op and of kernels/common/ costs ~30 us a call, 20 times what torch.add costs. The
operating system can tell us instead: an inotify descriptor (Linux) watching kernels/, each op folder and common/
collects an event the moment any process writes, creates, renames or deletes a file there (JupyterLab's save, which
writes a temporary file and renames it over; an editor's in-place write; `sed -i`; a new or deleted file). The event
is queued inside the write itself, so one `epoll_wait(0)` right after an edit always sees it: a call that checks
costs ~0.3 us, and an edit can never be missed however soon the call comes.

Why not watchdog's Observer: it delivers events on a thread, some time after the write; a call in between would run
the old code. inotify_simple gives the descriptor itself, to ask synchronously.

Where watching cannot work, the loader falls back to statting every call and says why, once: no inotify (macOS,
Windows) or no inotify_simple, a network filesystem (edits made on another machine raise no event here), the
inotify limits reached, a forked child (it shares the parent's queue: reading it would steal the parent's events),
or LABKIT_WATCH=0.
"""

import os
import select
import sys
import weakref
from pathlib import Path

from building import say_once

# Filesystems where another machine's writes raise no inotify event here.
NETWORK_FILESYSTEMS = {
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "afs",
    "ceph",
    "glusterfs",
    "lustre",
    "gpfs",
    "fuse.sshfs",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "fuse.rclone",
    "davfs",
    "fuse.davfs2",
}

_watches = weakref.WeakSet()


def filesystem_type(path):
    """The type of the filesystem holding `path` ("ext4", "nfs4", ...), from /proc/self/mountinfo; None if unknown."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    path = os.path.realpath(path)
    best, kind = "", None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = fields[4].replace("\\040", " ")
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, right.split()[0]
    return kind


def why_not_watched(folder):
    """None if inotify can watch `folder` here, else the reason it cannot."""
    if os.environ.get("LABKIT_WATCH") == "0":
        return "LABKIT_WATCH=0 is set"
    if not sys.platform.startswith("linux"):
        return f"the loader watches files with Linux's inotify, and this is {sys.platform}"
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        return "the package inotify_simple is not installed (pip install inotify_simple)"
    kind = filesystem_type(folder)
    if kind in NETWORK_FILESYSTEMS:
        return f"{folder} is on a network filesystem ({kind}), where edits made elsewhere raise no event here"
    return None


class Watch:
    """inotify on a kernels folder: `pending()` is one epoll_wait(0); `take()` reads the events and returns the names
    of the folders they happened in (an op's folder name, or "common", or "" for kernels/ itself)."""

    def __init__(self, kernels, common=None):
        from inotify_simple import INotify, flags

        self.kernels = Path(kernels)
        self._mask = (
            flags.MODIFY
            | flags.ATTRIB
            | flags.CLOSE_WRITE
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.CREATE
            | flags.DELETE
            | flags.DELETE_SELF
            | flags.MOVE_SELF
        )
        self._inotify = INotify(nonblocking=True)
        self._epoll = select.epoll()
        self._epoll.register(self._inotify.fileno(), select.EPOLLIN)
        self.pending = self._epoll.poll  # pending(0): a non-empty list when events wait
        self._folders = {}  # watch descriptor -> folder name
        self.on_close = []  # called when watching stops (a fork): the owner then checks files on every call
        self._add(self.kernels, "")
        for sub in sorted(self.kernels.iterdir()):
            if sub.is_dir():
                self._add(sub, sub.name)
        if common is not None and Path(common).parent != self.kernels:  # exercises/ shares kernels/common/
            self._add(Path(common), "common")
        _watches.add(self)

    def _add(self, path, name):
        self._folders[self._inotify.add_watch(path, self._mask)] = name

    def take(self):
        """Drain the queue; the set of folder names touched. A new folder under kernels/ is watched from now on."""
        touched = set()
        for event in self._inotify.read(timeout=0):
            if event.mask & 0x4000:  # IN_Q_OVERFLOW: the queue was full and events were lost
                touched.add("*")
            name = self._folders.get(event.wd)
            if name is None:
                continue
            if name == "" and event.name:  # something appeared or went directly under kernels/
                touched.add(event.name)
                sub = self.kernels / event.name
                if sub.is_dir() and event.name not in self._folders.values():
                    self._add(sub, event.name)
            else:
                touched.add(name)
        return touched

    def close(self):
        try:
            self._epoll.close()
            self._inotify.close()
        except OSError:
            pass
        for callback in self.on_close:
            callback()


def always(timeout=0):
    """What `pending` is where nothing is watched: every call checks the files."""
    return [True]


def start(kernels, common=None):
    """A Watch on `kernels` (and on the shared headers' folder `common`, where it lies elsewhere), or None (with the
    reason said once) where watching cannot work."""
    reason = why_not_watched(kernels)
    if reason is None:
        try:
            return Watch(kernels, common)
        except OSError as e:  # EMFILE/ENOSPC: the inotify limits (fs.inotify.max_user_instances / max_user_watches)
            reason = f"inotify refused ({e.strerror}; see /proc/sys/fs/inotify/)"
    say_once(f"not watching {kernels} for edits: {reason}; every op call checks its files instead (~30 us a call)")
    return None


def _after_fork_in_child():
    # the child shares the parent's inotify queue: reading it would steal the parent's events
    for watch in list(_watches):
        watch.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
