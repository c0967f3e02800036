"""Boxes and what hangs off them: files, policy, volumes, desktop, prompts,
snapshots (each a thin layer over the box's directory in the tree)."""
from __future__ import annotations

import http.client
import json
import os
import tarfile
from dataclasses import dataclass
from typing import (IO, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Union)

from ._client import Client, segment, tree_path
from ._commands import Commands, random_name
from ._errors import ConflictError, NotFoundError, PaddockError, UnsafeArchiveError
from ._tar import safe_extract, tar_stream

Ttl = Union[int, float, None]
PolicyValue = Union[str, Sequence[str]]


def _client(client: Optional[Client], url: Optional[str], token: Optional[str],
            cacert: Optional[str]) -> Client:
    return client if client is not None else Client(url=url, token=token, cacert=cacert)


def _ttl_value(ttl: Ttl) -> str:
    if ttl is None:
        return "none"
    if ttl < 1:
        raise ValueError("ttl must be at least 1 second (or None: no limit)")
    return str(int(ttl))


def policy_body(policy: PolicyValue) -> str:
    """A policy file's text: "allow-all", "deny-all", a whole policy text,
    or a list of allowed entries (domains, *.domains, IPv4 networks)."""
    if isinstance(policy, str):
        return policy if policy.endswith("\n") else policy + "\n"
    return "allowlist\n" + "".join("%s\n" % e for e in policy)


@dataclass
class Entry:
    """One entry of a directory listing."""
    name: str
    type: str  # "dir", "file" or "link"
    mode: str
    size: int
    path: str


class Files:
    """``box.files``: the box's filesystem (boxes/NAME/root/), live."""

    def __init__(self, client: Client, prefix: str):
        self._client = client
        self._prefix = prefix  # "boxes/NAME/root" or "volumes/NAME/data"

    def _path(self, path: str, dir_slash: bool = False) -> str:
        return tree_path(self._prefix, path, dir_slash)

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes."""
        return self._client.get(self._path(path))

    def read(self, path: str, encoding: str = "utf-8") -> str:
        """The file's text."""
        return self.read_bytes(path).decode(encoding)

    def write(self, path: str, data: Union[str, bytes, IO[bytes]],
              make_parents: bool = True) -> None:
        """Replaces the file with data (atomically, on the server). Missing
        parent directories are made (make_parents)."""
        body: Any
        if isinstance(data, str):
            body = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        else:
            f = data
            body = iter(lambda: f.read(256 * 1024), b"")
        # A stream is used up by the first try: no second one.
        make_parents_ok = make_parents and isinstance(body, bytes)
        try:
            self._client.put(self._path(path), body)
        except NotFoundError:
            parent = "/".join(path.strip("/").split("/")[:-1])
            if not make_parents_ok or not parent:
                raise
            self.make_dir(parent)
            self._client.put(self._path(path), body)

    def make_dir(self, path: str) -> None:
        """mkdir -p."""
        self._client.put(self._path(path, dir_slash=True))

    def list(self, path: str = "/") -> List[Entry]:
        """The directory's entries."""
        ans = self._client.get_json(self._path(path, dir_slash=True))
        base = "/" + "/".join(p for p in path.split("/") if p)
        return [Entry(e["name"], e["type"], e.get("mode", ""), int(e.get("size", 0)),
                      (base.rstrip("/") + "/" + e["name"]))
                for e in ans.get("entries", [])]

    def exists(self, path: str) -> bool:
        parent = "/".join(path.strip("/").split("/")[:-1])
        name = path.strip("/").split("/")[-1]
        try:
            return any(e.name == name for e in self.list(parent or "/"))
        except NotFoundError:
            return False

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes a file or an empty directory; recursive: a whole tree."""
        p = self._path(path)
        self._client.delete(p + ("?recursive=1" if recursive else ""))

    def upload(self, local_dir: str, remote_dir: str) -> Dict[str, Any]:
        """Copies local_dir's contents into remote_dir (made if missing) as
        one tar stream. Returns {"entries": N, "bytes": M}."""
        if not os.path.isdir(local_dir):
            raise NotADirectoryError("%s: not a directory" % local_dir)
        ans = self._client.put(self._path(remote_dir, dir_slash=True) + "?format=tar",
                               tar_stream(local_dir))
        return json.loads(ans.decode("utf-8")) if ans.strip() else {}

    def download(self, remote_dir: str, local_dir: str) -> None:
        """Copies remote_dir's contents (or one file) into local_dir. What
        the box sent that would land outside local_dir (absolute names,
        '..', links out, devices) is not written: UnsafeArchiveError names
        it after the rest was extracted."""
        with self._client.open("GET", "/v1/tree/" + self._path(remote_dir) + "?format=tar",
                               timeout=None) as r:
            try:
                skipped = safe_extract(r.raw, local_dir)  # type: ignore[arg-type]
            except (tarfile.TarError, EOFError, http.client.HTTPException) as e:
                # Cut short (the server could not finish it) or not a tar.
                raise PaddockError("the archive of %s ended early or is damaged: %s; what "
                                   "came before it is in %s" % (remote_dir, e, local_dir),
                                   errno="EIO") from e
        if skipped:
            raise UnsafeArchiveError("%d %s refused: %s" % (
                len(skipped), "entry was" if len(skipped) == 1 else "entries were",
                "; ".join(skipped[:10])), errno="EPERM")


class Policy:
    """``box.policy``: the network egress policy."""

    def __init__(self, client: Client, path: str):
        self._client = client
        self._path = path

    def get(self) -> str:
        """The policy's text: "allow-all", "deny-all" or "allowlist\\n…"."""
        return self._client.get_value(self._path)

    def set(self, policy: PolicyValue) -> None:
        """Replaces the policy: "allow-all", "deny-all", or a list of
        allowed entries (an allowlist)."""
        self._client.put(self._path, policy_body(policy))


class BoxVolumes:
    """``box.volumes``: the volumes mounted at /mnt/NAME in the box."""

    def __init__(self, client: Client, path: str):
        self._client = client
        self._path = path

    def list(self) -> List[str]:
        return [l for l in self._client.get_value(self._path).splitlines() if l]

    def _write(self, names: List[str]) -> None:
        self._client.put(self._path, "".join(n + "\n" for n in names))

    def attach(self, name: str) -> None:
        names = self.list()
        if name not in names:
            self._write(names + [name])

    def detach(self, name: str) -> None:
        names = self.list()
        if name not in names:
            raise NotFoundError("volume %s is not attached" % name, errno="ENOENT")
        self._write([n for n in names if n != name])


class Desktop:
    """``box.desktop``: the box's graphical session (desktop images)."""

    def __init__(self, client: Client, box: str):
        self._client = client
        self._box = "boxes/%s/" % segment(box)

    def on(self) -> None:
        self._client.put_value(self._box + "desktop/state", "on")

    def off(self) -> None:
        self._client.put_value(self._box + "desktop/state", "off")

    def screenshot(self) -> bytes:
        """A PNG of the current screen."""
        return self._client.get(self._box + "screenshot.png")

    def actions(self, lines: Iterable[str]) -> None:
        """Sends actions, one a line (desktop/input's syntax)."""
        body = ""
        for l in lines:
            if "\n" in l or "\r" in l:
                raise ValueError("an action is one line (for Enter use key('Return'))")
            body += l + "\n"
        self._client.put(self._box + "desktop/input", body)

    def click(self, x: Optional[int] = None, y: Optional[int] = None,
              button: str = "left") -> None:
        self.actions(["click %s" % button + ("" if x is None else " %d %d" % (x, y or 0))])

    def double_click(self, x: int, y: int) -> None:
        self.actions(["double %d %d" % (x, y)])

    def move(self, x: int, y: int) -> None:
        self.actions(["move %d %d" % (x, y)])

    def scroll(self, direction: str, amount: int = 1) -> None:
        self.actions(["scroll %s %d" % (direction, amount)])

    def type(self, text: str) -> None:
        """Types text (one line)."""
        self.actions(["type " + text])

    def key(self, combo: str) -> None:
        """Presses a key combination, e.g. "ctrl+s", "Return"."""
        self.actions(["key " + combo])


class Prompt:
    """A coding agent's run in the box: iterate it for its events (dicts,
    one schema for every agent: start, message, tool_call, tool_result,
    usage, error, end)."""

    def __init__(self, client: Client, box: str, name: str):
        self._client = client
        self.name = name
        self._dir = "boxes/%s/prompts/%s/" % (segment(box), segment(name))

    def events(self) -> Iterator[Dict[str, Any]]:
        buf = b""
        with self._client.stream(self._dir + "events") as r:
            for data in r:
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    ev = _event(line)
                    if ev is None:
                        continue
                    yield ev
                    if ev.get("type") == "end":
                        return
        ev = _event(buf)
        if ev is not None:
            yield ev

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self.events()

    def result(self) -> str:
        """The final answer (once it ended)."""
        return self._client.get_value(self._dir + "result")

    def wait(self) -> int:
        """Waits for the end; the exit code."""
        return int(self._client.get_value(self._dir + "exit"))

    def kill(self) -> None:
        self._client.put_value(self._dir + "ctl", "kill")


def _event(line: bytes) -> Optional[Dict[str, Any]]:
    line = line.strip()
    if not line:
        return None
    try:
        ev = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        return None
    return ev if isinstance(ev, dict) else None


class Box:
    """A box: an isolated Linux computer on the server.

    ``Box.create()`` makes and starts one, ``Box.connect(name)`` takes an
    existing one (resuming it when stopped). Connection arguments (url=,
    token=, cacert=, or client=) are as for Client."""

    def __init__(self, name: str, client: Optional[Client] = None, url: Optional[str] = None,
                 token: Optional[str] = None, cacert: Optional[str] = None):
        self.name = name
        self.client = _client(client, url, token, cacert)
        self._dir = "boxes/%s/" % segment(name)
        self.commands = Commands(self.client, name)
        self.files = Files(self.client, self._dir + "root")
        self.policy = Policy(self.client, self._dir + "policy")
        self.volumes = BoxVolumes(self.client, self._dir + "volumes")
        self.desktop = Desktop(self.client, name)

    def __repr__(self) -> str:
        return "Box(%r)" % self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.name == self.name and \
            other.client.url == self.client.url

    def __hash__(self) -> int:
        return hash(self.name)

    def __enter__(self) -> "Box":
        return self

    def __exit__(self, *exc: Any) -> None:
        """``with Box.create() as box:`` deletes the box at the end."""
        try:
            self.kill()
        except NotFoundError:
            pass

    # --- making, finding --------------------------------------------------

    @classmethod
    def create(cls, type: Optional[str] = None, ttl: Ttl = None, image: Optional[str] = None,
               policy: Optional[PolicyValue] = None, name: Optional[str] = None,
               docker: Optional[bool] = None, start: bool = True,
               client: Optional[Client] = None, url: Optional[str] = None,
               token: Optional[str] = None, cacert: Optional[str] = None) -> "Box":
        """Creates a box and starts it (as ``paddock new``): name (else
        box-XXXXXX), image, type, docker, ttl (seconds; None: the
        server's default), policy. A refused setting deletes the box again
        and raises the server's error."""
        c = _client(client, url, token, cacert)
        for _ in range(5):
            n = name or random_name("box-")
            try:
                c.put("boxes/%s/" % segment(n))
                break
            except ConflictError:
                if name:
                    raise
        else:
            raise ConflictError("no free box name found", status=409, errno="EEXIST")
        box = cls(n, client=c)
        steps = [("image", image), ("type", type),
                 ("docker", None if docker is None else ("on" if docker else "off")),
                 ("ttl", None if ttl is None else _ttl_value(ttl)),
                 ("policy", None if policy is None else policy_body(policy)),
                 ("state", "running" if start else None)]
        try:
            for f, v in steps:
                if v is None:
                    continue
                if f == "policy":
                    c.put(box._dir + f, v)
                else:
                    c.put_value(box._dir + f, v)
        except BaseException:
            # The server's reason names the file; nothing half-made stays.
            try:
                c.delete(box._dir)
            except PaddockError:
                pass
            raise
        return box

    @classmethod
    def connect(cls, name: str, client: Optional[Client] = None, url: Optional[str] = None,
                token: Optional[str] = None, cacert: Optional[str] = None) -> "Box":
        """An existing box; resumed when stopped. NotFoundError if none."""
        box = cls(name, client=client, url=url, token=token, cacert=cacert)
        if box.state() in ("stopped", "stopping"):
            box.resume()
        return box

    @classmethod
    def list(cls, client: Optional[Client] = None, url: Optional[str] = None,
             token: Optional[str] = None, cacert: Optional[str] = None) -> List["Box"]:
        """Every box on the server."""
        c = _client(client, url, token, cacert)
        ans = c.get_json("boxes/")
        return [cls(e["name"], client=c) for e in ans.get("entries", []) if e.get("type") == "dir"]

    # --- state ------------------------------------------------------------

    def info(self) -> Dict[str, Any]:
        """Everything about the box (its info file: state, type, ttl,
        expires, ip, policy, usage...)."""
        return self.client.get_json(self._dir + "info")

    def state(self) -> str:
        return self.client.get_value(self._dir + "state")

    def stop(self) -> None:
        """Stops it (its files are snapshotted; processes end)."""
        self.client.put_value(self._dir + "state", "stopped")

    def resume(self) -> None:
        """Starts it again (or for the first time)."""
        self.client.put_value(self._dir + "state", "running")

    start = resume

    def kill(self) -> None:
        """Deletes the box (stopped first if running)."""
        self.client.delete(self._dir)

    def ttl(self) -> Optional[int]:
        """Seconds left before it is stopped automatically; None: no limit."""
        v = self.client.get_value(self._dir + "ttl")
        return None if v == "none" else int(v)

    def set_ttl(self, seconds: Ttl) -> None:
        """Restarts the countdown at seconds; None: no limit."""
        self.client.put_value(self._dir + "ttl", _ttl_value(seconds))

    def set_type(self, type: str) -> None:
        self.client.put_value(self._dir + "type", type)

    # --- snapshots --------------------------------------------------------

    def snapshot(self, label: str = "manual") -> str:
        """Snapshots its files now; returns the snapshot's id."""
        ans = json.loads(self.client.put_value(self._dir + "snapshot", label).decode("utf-8"))
        return str(ans["snapshot"])

    def snapshots(self) -> List[str]:
        """This box's snapshot ids."""
        ans = self.client.get_json(self._dir + "snapshots/")
        return [e["name"] for e in ans.get("entries", []) if e["name"] != "last"]

    def fork(self, name: Optional[str] = None) -> "Box":
        """A new box from this one's current files (named name, else
        box-XXXXXX)."""
        n = name or random_name("box-")
        self.client.put_value(self._dir + "fork", n)
        return Box(n, client=self.client)

    def restore(self, snapshot: str) -> Dict[str, Any]:
        """Resets its files to a snapshot (an id, or a label only one of
        its snapshots has). Returns the server's answer ({"snapshot": ID,
        "restarted": bool, ...})."""
        return json.loads(self.client.put_value(self._dir + "restore", snapshot).decode("utf-8"))

    # --- agents -----------------------------------------------------------

    def prompt(self, text: str, agent: Optional[str] = None, model: Optional[str] = None,
               cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
               continue_from: Optional[str] = None) -> Prompt:
        """Runs a coding agent in the box on text; iterate the result for
        its events (dicts) as they come."""
        name = random_name("sdk-")
        p = Prompt(self.client, self.name, name)
        c = self.client
        c.put(p._dir)
        try:
            for f, v in (("agent", agent), ("model", model), ("continue", continue_from),
                         ("cwd", cwd)):
                if v is not None:
                    c.put_value(p._dir + f, v)
            if env:
                c.put(p._dir + "env", "".join("%s=%s\n" % kv for kv in env.items()))
            c.put(p._dir + "text", text)
        except BaseException:
            try:
                c.delete(p._dir)
            except PaddockError:
                pass
            raise
        return p


class Volume:
    """A named volume: outlives boxes; attach it with box.volumes.attach."""

    def __init__(self, name: str, client: Optional[Client] = None, url: Optional[str] = None,
                 token: Optional[str] = None, cacert: Optional[str] = None):
        self.name = name
        self.client = _client(client, url, token, cacert)
        self._dir = "volumes/%s/" % segment(name)
        self.files = Files(self.client, self._dir + "data")

    def __repr__(self) -> str:
        return "Volume(%r)" % self.name

    @classmethod
    def create(cls, name: str, client: Optional[Client] = None, url: Optional[str] = None,
               token: Optional[str] = None, cacert: Optional[str] = None) -> "Volume":
        v = cls(name, client=client, url=url, token=token, cacert=cacert)
        v.client.put(v._dir)
        return v

    @classmethod
    def list(cls, client: Optional[Client] = None, url: Optional[str] = None,
             token: Optional[str] = None, cacert: Optional[str] = None) -> List["Volume"]:
        c = _client(client, url, token, cacert)
        ans = c.get_json("volumes/")
        return [cls(e["name"], client=c) for e in ans.get("entries", []) if e.get("type") == "dir"]

    @classmethod
    def remove(cls, name: str, client: Optional[Client] = None, url: Optional[str] = None,
               token: Optional[str] = None, cacert: Optional[str] = None) -> None:
        c = _client(client, url, token, cacert)
        c.delete("volumes/%s/" % segment(name))

    def delete(self) -> None:
        self.client.delete(self._dir)

    def size(self) -> int:
        return int(self.client.get_value(self._dir + "size"))

    def boxes(self) -> List[str]:
        return [l for l in self.client.get_value(self._dir + "boxes").split() if l]
