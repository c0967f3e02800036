"""Commands in a box: exec jobs (boxes/NAME/exec/JOB/), their stdout and
stderr followed live over two streamed GETs."""
from __future__ import annotations

import codecs
import json
import secrets
import shlex
import threading
import time
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import Client, segment
from ._errors import CommandTimeoutError, ConflictError, PaddockError

OutputCallback = Callable[[str], object]
Command = Union[str, Sequence[str]]

# stdin is a FIFO written without blocking: a write of at most PIPE_BUF
# bytes goes in whole or is refused (EAGAIN, 503) while the FIFO is full;
# a larger one may go in only in part (the answer's "written" says how
# much).
STDIN_PIECE = 4096
STDIN_STALL = 60.0  # seconds without room before giving up


def _written(answer: bytes, sent: int) -> int:
    """How much of a stdin write the job's pipe took: the server's
    {"written": N} (a short write; the rest goes next), else all of it."""
    try:
        n = json.loads(answer.decode("utf-8")).get("written") if answer else None
    except (ValueError, AttributeError):
        n = None
    return n if isinstance(n, int) and 0 <= n <= sent else sent


def random_name(prefix: str) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(6))


class CommandResult:
    """What a finished command gave: stdout and stderr (text, UTF-8 with
    invalid bytes replaced) and its exit code (128+SIG when killed)."""

    def __init__(self, stdout: str, stderr: str, exit_code: int, job: str):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.job = job

    def __repr__(self) -> str:
        return "CommandResult(exit_code=%d, stdout=%r, stderr=%r)" % (
            self.exit_code, self.stdout[:80], self.stderr[:80])


class CommandHandle:
    """A running command (``commands.run(..., background=True)``).

    Its output is followed from the start; ``for stream, text in handle``
    gives the pieces in the order they arrived per stream ("stdout" or
    "stderr") until the job ends."""

    def __init__(self, client: Client, box: str, job: str,
                 on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback]):
        self._client = client
        self.box = box
        self.job = job
        self._dir = "boxes/%s/exec/%s/" % (segment(box), segment(job))
        self._callbacks = {"stdout": on_stdout, "stderr": on_stderr}
        self._chunks: List[Tuple[str, str]] = []
        self._cond = threading.Condition()
        self._open = 2
        self._errors: List[BaseException] = []
        self._exit: Optional[int] = None
        self._threads = [threading.Thread(target=self._follow, args=(name,), daemon=True,
                                          name="paddock-%s-%s" % (job, name))
                         for name in ("stdout", "stderr")]

    def _start(self) -> None:
        for t in self._threads:
            t.start()

    def _follow(self, name: str) -> None:
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            with self._client.stream(self._dir + name) as r:
                for data in r:
                    self._add(name, dec.decode(data))
            self._add(name, dec.decode(b"", final=True))
        except BaseException as e:
            with self._cond:
                self._errors.append(e)
        finally:
            with self._cond:
                self._open -= 1
                self._cond.notify_all()

    def _add(self, name: str, text: str) -> None:
        if not text:
            return
        cb = self._callbacks[name]
        if cb is not None:
            try:
                cb(text)
            except BaseException as e:  # the caller's callback failed: say so at wait()
                with self._cond:
                    self._errors.append(e)
                self._callbacks[name] = None
        with self._cond:
            self._chunks.append((name, text))
            self._cond.notify_all()

    # --- reading ----------------------------------------------------------

    @property
    def stdout(self) -> str:
        """stdout so far."""
        with self._cond:
            return "".join(t for n, t in self._chunks if n == "stdout")

    @property
    def stderr(self) -> str:
        """stderr so far."""
        with self._cond:
            return "".join(t for n, t in self._chunks if n == "stderr")

    @property
    def exit_code(self) -> Optional[int]:
        """The exit code once wait() has seen it, else None."""
        return self._exit

    def next_chunk(self, index: int, timeout: Optional[float] = None
                   ) -> Optional[Tuple[int, Optional[Tuple[str, str]]]]:
        """Piece number index when it has arrived (and index+1), or None
        at the end; (index, None) when timeout ran out first."""
        with self._cond:
            end = None if timeout is None else time.monotonic() + timeout
            while index >= len(self._chunks) and self._open > 0:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return index, None
                self._cond.wait(left)
            if index < len(self._chunks):
                return index + 1, self._chunks[index]
            return None

    def __iter__(self) -> Iterator[Tuple[str, str]]:
        i = 0
        while True:
            n = self.next_chunk(i)
            if n is None:
                return
            i, chunk = n
            assert chunk is not None
            yield chunk

    def _streams_done(self, timeout: Optional[float]) -> bool:
        with self._cond:
            end = None if timeout is None else time.monotonic() + timeout
            while self._open > 0:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    # --- control ----------------------------------------------------------

    def wait(self, timeout: Optional[float] = None) -> CommandResult:
        """Waits for the end; returns the result. With timeout (seconds),
        a job still running then is killed and CommandTimeoutError raised."""
        if not self._streams_done(timeout):
            try:
                self.kill()
            except PaddockError:
                pass
            self._streams_done(10)
            raise CommandTimeoutError("the command did not end within %gs: killed" % timeout,
                                      errno="ETIMEDOUT")
        if self._errors:
            raise self._errors[0]
        if self._exit is None:
            code = self._client.get_value(self._dir + "exit")
            try:
                self._exit = int(code)
            except ValueError:
                raise PaddockError("unexpected exit code %r" % code, errno="EPROTO") from None
        return CommandResult(self.stdout, self.stderr, self._exit, self.job)

    def send_stdin(self, data: Union[str, bytes]) -> None:
        """Feeds data to the command's stdin."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        off = 0
        delay, stalled = 0.002, time.monotonic()
        while off < len(data):
            piece = data[off:off + STDIN_PIECE]
            try:
                answer = self._client.put(self._dir + "stdin", piece)
            except PaddockError as e:
                if e.errno != "EAGAIN" or time.monotonic() - stalled > STDIN_STALL:
                    raise
                time.sleep(delay)  # the command has not read what came before
                delay = min(delay * 2, 0.1)
                continue
            off += _written(answer, len(piece))
            delay, stalled = 0.002, time.monotonic()

    def _ctl(self, line: str) -> None:
        # Just after cmd the job may have no process yet (EAGAIN): that
        # passes within moments.
        delay, end = 0.01, time.monotonic() + 10.0
        while True:
            try:
                self._client.put_value(self._dir + "ctl", line)
                return
            except PaddockError as e:
                if e.errno != "EAGAIN" or time.monotonic() > end:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def close_stdin(self) -> None:
        """Closes its stdin (end of file)."""
        self._ctl("eof")

    def signal(self, sig: Union[str, int]) -> None:
        """Sends a signal: a name ("INT", "TERM") or a number."""
        self._ctl("signal %s" % sig)

    def kill(self) -> None:
        """Kills the command (SIGKILL)."""
        self._ctl("kill")


class Commands:
    """``box.commands``: run commands in the box."""

    def __init__(self, client: Client, box: str):
        self._client = client
        self._box = box

    def run(self, cmd: Command, on_stdout: Optional[OutputCallback] = None,
            on_stderr: Optional[OutputCallback] = None, cwd: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None, background: bool = False,
            stdin: Union[None, str, bytes] = None, timeout: Optional[float] = None,
            desktop: bool = False) -> Union[CommandResult, CommandHandle]:
        """Runs cmd (a shell command line, or a list of words quoted for the
        shell) under the box's shell. Output goes to on_stdout/on_stderr as
        it arrives. Returns a CommandResult when it has ended, or at once a
        CommandHandle with background=True. stdin: data fed to it, then
        end of file (background: left open unless given). timeout
        (seconds): killed after it, CommandTimeoutError."""
        h = self.start(cmd, on_stdout=on_stdout, on_stderr=on_stderr, cwd=cwd, env=env,
                       stdin=stdin, desktop=desktop)
        if background:
            return h
        return h.wait(timeout)

    def start(self, cmd: Command, on_stdout: Optional[OutputCallback] = None,
              on_stderr: Optional[OutputCallback] = None, cwd: Optional[str] = None,
              env: Optional[Mapping[str, str]] = None, stdin: Union[None, str, bytes] = None,
              desktop: bool = False) -> CommandHandle:
        """run(..., background=True), typed as a handle."""
        line = cmd if isinstance(cmd, str) else shlex.join(list(cmd))
        c = self._client
        for attempt in range(5):
            h = CommandHandle(c, self._box, random_name("sdk-"), on_stdout, on_stderr)
            d = h._dir
            try:
                c.put(d)
                break
            except ConflictError as e:
                # A name taken (one in 36^6) is EEXIST: another.
                if e.errno != "EEXIST" or attempt == 4:
                    raise
        try:
            if env:
                body = ""
                for k, v in env.items():
                    if "=" in k or "\n" in k or "\n" in str(v):
                        raise ValueError("bad environment entry %r" % k)
                    body += "%s=%s\n" % (k, v)
                c.put(d + "env", body)
            if cwd is not None:
                c.put_value(d + "cwd", cwd)
            if desktop:
                c.put_value(d + "desktop", "1")
            c.put(d + "cmd", line)
        except BaseException:
            try:
                c.delete(d)
            except PaddockError:
                pass
            raise
        h._start()
        if stdin is not None:
            h.send_stdin(stdin)
            h.close_stdin()
        return h

    def list(self) -> List[str]:
        """The box's jobs."""
        ans = self._client.get_json("boxes/%s/exec/" % segment(self._box))
        return [e["name"] for e in ans.get("entries", []) if e.get("type") == "dir"]

    def connect(self, job: str, on_stdout: Optional[OutputCallback] = None,
                on_stderr: Optional[OutputCallback] = None) -> CommandHandle:
        """A handle on a job already started (its output from the start)."""
        h = CommandHandle(self._client, self._box, job, on_stdout, on_stderr)
        self._client.get(h._dir + "status")
        h._start()
        return h

    def remove(self, job: str) -> None:
        """Discards a finished job."""
        self._client.delete("boxes/%s/exec/%s/" % (segment(self._box), segment(job)))
