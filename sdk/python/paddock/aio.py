"""The asyncio API: the same surface as coroutines. The HTTP requests run
in threads (asyncio.to_thread); streams are async iterators.

    from paddock.aio import AsyncBox
    box = await AsyncBox.create(type="small")
    r = await box.commands.run("echo hi")
    async for stream, text in await box.commands.run("make", background=True): ...
"""
from __future__ import annotations

import asyncio
import inspect
from typing import (Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Tuple,
                    Union)

from ._box import Box, BoxVolumes, Desktop, Entry, Files, Policy, PolicyValue, Prompt, Ttl, Volume
from ._client import Client
from ._commands import Command, CommandHandle, CommandResult, Commands
from ._errors import NotFoundError

__all__ = ["AsyncBox", "AsyncCommandHandle", "AsyncVolume"]

AsyncCallback = Callable[[str], Any]


async def _call(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kw)


class AsyncCommandHandle:
    """A running command; ``async for stream, text in handle`` follows its
    output ("stdout"/"stderr", text) until it ends."""

    def __init__(self, h: CommandHandle):
        self._h = h
        self.job = h.job
        self._pump: Optional["asyncio.Future[None]"] = None

    @property
    def stdout(self) -> str:
        return self._h.stdout

    @property
    def stderr(self) -> str:
        return self._h.stderr

    @property
    def exit_code(self) -> Optional[int]:
        return self._h.exit_code

    async def __aiter__(self) -> AsyncIterator[Tuple[str, str]]:
        i = 0
        while True:
            n = await asyncio.to_thread(self._h.next_chunk, i, 1.0)
            if n is None:
                return
            i, chunk = n
            if chunk is not None:
                yield chunk

    async def wait(self, timeout: Optional[float] = None) -> CommandResult:
        return await _call(self._h.wait, timeout)

    async def kill(self) -> None:
        await _call(self._h.kill)

    async def signal(self, sig: Union[str, int]) -> None:
        await _call(self._h.signal, sig)

    async def send_stdin(self, data: Union[str, bytes]) -> None:
        await _call(self._h.send_stdin, data)

    async def close_stdin(self) -> None:
        await _call(self._h.close_stdin)


class AsyncCommands:
    def __init__(self, c: Commands):
        self._c = c

    async def run(self, cmd: Command, on_stdout: Optional[AsyncCallback] = None,
                  on_stderr: Optional[AsyncCallback] = None, cwd: Optional[str] = None,
                  env: Optional[Mapping[str, str]] = None, background: bool = False,
                  stdin: Union[None, str, bytes] = None, timeout: Optional[float] = None,
                  desktop: bool = False) -> Any:
        """As Commands.run; on_stdout/on_stderr (plain functions or
        coroutine functions) are called in the event loop, in order."""
        h = AsyncCommandHandle(await _call(self._c.start, cmd, cwd=cwd, env=env, stdin=stdin,
                                           desktop=desktop))
        if background and not (on_stdout or on_stderr):
            return h

        async def pump() -> None:
            cbs = {"stdout": on_stdout, "stderr": on_stderr}
            async for stream, text in h:
                cb = cbs[stream]
                if cb is not None:
                    res = cb(text)
                    if inspect.isawaitable(res):
                        await res

        if background:
            h._pump = asyncio.ensure_future(pump())  # kept: a task nobody holds may vanish
            return h
        if timeout is None:
            await pump()
            return await h.wait()
        try:
            await asyncio.wait_for(pump(), timeout)
        except asyncio.TimeoutError:
            return await h.wait(timeout=0)  # kills it: CommandTimeoutError
        return await h.wait()

    async def list(self) -> List[str]:
        return await _call(self._c.list)


class AsyncFiles:
    def __init__(self, f: Files):
        self._f = f

    async def read(self, path: str, encoding: str = "utf-8") -> str:
        return await _call(self._f.read, path, encoding)

    async def read_bytes(self, path: str) -> bytes:
        return await _call(self._f.read_bytes, path)

    async def write(self, path: str, data: Union[str, bytes], make_parents: bool = True) -> None:
        await _call(self._f.write, path, data, make_parents)

    async def make_dir(self, path: str) -> None:
        await _call(self._f.make_dir, path)

    async def list(self, path: str = "/") -> List[Entry]:
        return await _call(self._f.list, path)

    async def exists(self, path: str) -> bool:
        return await _call(self._f.exists, path)

    async def remove(self, path: str, recursive: bool = False) -> None:
        await _call(self._f.remove, path, recursive)

    async def upload(self, local_dir: str, remote_dir: str) -> Dict[str, Any]:
        return await _call(self._f.upload, local_dir, remote_dir)

    async def download(self, remote_dir: str, local_dir: str) -> None:
        await _call(self._f.download, remote_dir, local_dir)


class AsyncPolicy:
    def __init__(self, p: Policy):
        self._p = p

    async def get(self) -> str:
        return await _call(self._p.get)

    async def set(self, policy: PolicyValue) -> None:
        await _call(self._p.set, policy)


class AsyncBoxVolumes:
    def __init__(self, v: BoxVolumes):
        self._v = v

    async def list(self) -> List[str]:
        return await _call(self._v.list)

    async def attach(self, name: str) -> None:
        await _call(self._v.attach, name)

    async def detach(self, name: str) -> None:
        await _call(self._v.detach, name)


class AsyncDesktop:
    def __init__(self, d: Desktop):
        self._d = d

    async def on(self) -> None:
        await _call(self._d.on)

    async def off(self) -> None:
        await _call(self._d.off)

    async def screenshot(self) -> bytes:
        return await _call(self._d.screenshot)

    async def click(self, x: Optional[int] = None, y: Optional[int] = None,
                    button: str = "left") -> None:
        await _call(self._d.click, x, y, button)

    async def type(self, text: str) -> None:
        await _call(self._d.type, text)

    async def key(self, combo: str) -> None:
        await _call(self._d.key, combo)

    async def actions(self, lines: List[str]) -> None:
        await _call(self._d.actions, lines)


class AsyncPrompt:
    """A coding agent's run: ``async for event in prompt``."""

    def __init__(self, p: Prompt):
        self._p = p
        self.name = p.name

    async def __aiter__(self) -> AsyncIterator[Dict[str, Any]]:
        it = self._p.events()
        end = object()
        while True:
            ev = await asyncio.to_thread(next, it, end)
            if ev is end:
                return
            yield ev  # type: ignore[misc]

    async def result(self) -> str:
        return await _call(self._p.result)

    async def wait(self) -> int:
        return await _call(self._p.wait)

    async def kill(self) -> None:
        await _call(self._p.kill)


class AsyncBox:
    """Box, with coroutines."""

    def __init__(self, box: Box):
        self.box = box
        self.name = box.name
        self.client = box.client
        self.commands = AsyncCommands(box.commands)
        self.files = AsyncFiles(box.files)
        self.policy = AsyncPolicy(box.policy)
        self.volumes = AsyncBoxVolumes(box.volumes)
        self.desktop = AsyncDesktop(box.desktop)

    def __repr__(self) -> str:
        return "AsyncBox(%r)" % self.name

    async def __aenter__(self) -> "AsyncBox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """``async with await AsyncBox.create() as box:`` deletes it at the end."""
        try:
            await self.kill()
        except NotFoundError:
            pass

    @classmethod
    async def create(cls, type: Optional[str] = None, ttl: Ttl = None,
                     image: Optional[str] = None, policy: Optional[PolicyValue] = None,
                     name: Optional[str] = None, docker: Optional[bool] = None,
                     client: Optional[Client] = None, url: Optional[str] = None,
                     token: Optional[str] = None, cacert: Optional[str] = None) -> "AsyncBox":
        return cls(await _call(Box.create, type=type, ttl=ttl, image=image, policy=policy,
                               name=name, docker=docker, client=client, url=url, token=token,
                               cacert=cacert))

    @classmethod
    async def connect(cls, name: str, client: Optional[Client] = None, url: Optional[str] = None,
                      token: Optional[str] = None, cacert: Optional[str] = None) -> "AsyncBox":
        return cls(await _call(Box.connect, name, client=client, url=url, token=token,
                               cacert=cacert))

    @classmethod
    async def list(cls, client: Optional[Client] = None, url: Optional[str] = None,
                   token: Optional[str] = None, cacert: Optional[str] = None) -> List["AsyncBox"]:
        boxes = await _call(Box.list, client=client, url=url, token=token, cacert=cacert)
        return [cls(b) for b in boxes]

    async def info(self) -> Dict[str, Any]:
        return await _call(self.box.info)

    async def state(self) -> str:
        return await _call(self.box.state)

    async def stop(self) -> None:
        await _call(self.box.stop)

    async def resume(self) -> None:
        await _call(self.box.resume)

    async def kill(self) -> None:
        await _call(self.box.kill)

    async def set_ttl(self, seconds: Ttl) -> None:
        await _call(self.box.set_ttl, seconds)

    async def snapshot(self, label: str = "manual") -> str:
        return await _call(self.box.snapshot, label)

    async def snapshots(self) -> List[str]:
        return await _call(self.box.snapshots)

    async def fork(self, name: Optional[str] = None) -> "AsyncBox":
        return AsyncBox(await _call(self.box.fork, name))

    async def restore(self, snapshot: str) -> Dict[str, Any]:
        return await _call(self.box.restore, snapshot)

    async def prompt(self, text: str, agent: Optional[str] = None, model: Optional[str] = None,
                     cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                     continue_from: Optional[str] = None) -> AsyncPrompt:
        return AsyncPrompt(await _call(self.box.prompt, text, agent=agent, model=model, cwd=cwd,
                                       env=env, continue_from=continue_from))


class AsyncVolume:
    """Volume, with coroutines."""

    def __init__(self, v: Volume):
        self.volume = v
        self.name = v.name

    @classmethod
    async def create(cls, name: str, **kw: Any) -> "AsyncVolume":
        return cls(await _call(Volume.create, name, **kw))

    @classmethod
    async def list(cls, **kw: Any) -> List["AsyncVolume"]:
        return [cls(v) for v in await _call(Volume.list, **kw)]

    @classmethod
    async def remove(cls, name: str, **kw: Any) -> None:
        await _call(Volume.remove, name, **kw)
