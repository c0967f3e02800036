"""The connection to a Paddock server: where it is, the token, and HTTP
requests on its tree (http.client, one small pool of kept-alive
connections)."""
from __future__ import annotations

import configparser
import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from ._errors import AuthError, PaddockError, error_from_response

__all__ = ["Client", "config_path", "login"]

DEFAULT_SOCKET = "/run/paddock/paddock.sock"
USER_AGENT = "paddock-sdk-python/0.1.0"
# The server closes a kept-alive connection after 10 s without a request
# (web/README.md, Limits); one idle longer than this is not reused.
IDLE_REUSE_S = 8.0

Body = Union[None, bytes, str, Iterable[bytes]]


def config_path() -> Optional[str]:
    """The CLI's config file: $PADDOCK_CONFIG, else
    $XDG_CONFIG_HOME/paddock/config.ini, else ~/.config/paddock/config.ini."""
    env = os.environ.get("PADDOCK_CONFIG")
    if env:
        return env
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "paddock", "config.ini")
    home = os.environ.get("HOME")
    if home:
        return os.path.join(home, ".config", "paddock", "config.ini")
    return None


def _read_config() -> Dict[str, str]:
    path = config_path()
    if not path or not os.path.exists(path):
        return {}
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read(path, encoding="utf-8")
    except (configparser.Error, OSError) as e:
        raise PaddockError("cannot read %s: %s" % (path, e)) from e
    if not cp.has_section("server"):
        return {}
    return {k: v.strip() for k, v in cp.items("server") if v.strip()}


def segment(s: str) -> str:
    """One path segment, percent-encoded."""
    return urllib.parse.quote(s, safe="")


def tree_path(prefix: str, sub: str, dir_slash: bool = False) -> str:
    """prefix + sub's segments encoded; '.' and '..' are refused."""
    parts = [p for p in sub.split("/") if p]
    for p in parts:
        if p in (".", ".."):
            raise ValueError("%r: '.' and '..' are not allowed in paths" % sub)
    out = prefix.rstrip("/")
    if parts:
        out += "/" + "/".join(segment(p) for p in parts)
    if dir_slash:
        out += "/"
    return out


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class Response:
    """A streamed answer: read it in pieces as they arrive, then close it."""

    def __init__(self, client: "Client", conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse):
        self._client = client
        self._conn: Optional[http.client.HTTPConnection] = conn
        self.raw = resp
        self.status = resp.status

    def read1(self, n: int = 65536) -> bytes:
        """What has arrived (at least one byte), b'' at the end."""
        return self.raw.read1(n)

    def read(self, n: int = -1) -> bytes:
        return self.raw.read(n) if n >= 0 else self.raw.read()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            data = self.raw.read1(65536)
            if not data:
                return
            yield data

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        # Kept only when the answer was read to its end.
        if self.raw.isclosed() and not self.raw.will_close:
            self._client._release(conn)
        else:
            conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Client:
    """A Paddock server: url= and token= given, else PADDOCK_URL and
    PADDOCK_TOKEN, else the CLI's stored login (``paddock login``), else the
    local socket (/run/paddock/paddock.sock) when it exists. The config's
    token (and CA file) are used only with the config's own URL. URLs:
    http://, https://, unix:/PATH."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 cacert: Optional[str] = None, timeout: Optional[float] = 60.0,
                 socket_path: str = DEFAULT_SOCKET):
        conf = _read_config()
        if not url:
            url = os.environ.get("PADDOCK_URL") or None
        if not url:
            url = conf.get("url")
        if not url and socket_path and os.path.exists(socket_path):
            url = "unix:" + socket_path
        if not url:
            raise PaddockError("no server: run 'paddock login URL', or give url= or PADDOCK_URL",
                               errno="ENOENT")
        if not token:
            token = os.environ.get("PADDOCK_TOKEN") or None
        if not token and conf.get("url") == url:
            token = conf.get("token")
        if not cacert:
            cacert = os.environ.get("PADDOCK_CACERT") or None
        if not cacert and conf.get("url") == url:
            cacert = conf.get("cacert")
        if token and ("\r" in token or "\n" in token):
            raise ValueError("the token must be one line")
        self.url = url
        self.token = token
        self.timeout = timeout
        self._unix: Optional[str] = None
        self._ssl: Optional[ssl.SSLContext] = None
        if url.startswith("unix:"):
            path = url[5:]
            if not path:
                raise ValueError("unix: URL without a socket path")
            self._unix = os.path.abspath(path)
            self._host, self._port, self._https = "localhost", None, False
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError("unsupported URL %r (use http://, https:// or unix:PATH)" % url)
            self._https = u.scheme == "https"
            self._host, self._port = u.hostname, u.port
            self._base = u.path.rstrip("/")
            if self._https:
                try:
                    self._ssl = ssl.create_default_context(cafile=cacert)
                except (OSError, ssl.SSLError) as e:
                    raise PaddockError("cannot read the CA certificates %s: %s" % (cacert, e),
                                       errno="ENOENT") from e
        if self._unix:
            self._base = ""
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    # --- connections ------------------------------------------------------

    def _new_conn(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._unix:
            return _UnixConnection(self._unix, timeout)
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _take(self, fresh: bool = False) -> Tuple[http.client.HTTPConnection, bool]:
        """A kept-alive connection (True) or a new one (False). The server
        closes one silent for 10 s: older ones are not used."""
        stale = []
        conn = None
        with self._lock:
            now = time.monotonic()
            while self._idle and not fresh:
                c, since = self._idle.pop()
                if now - since < IDLE_REUSE_S:
                    conn = c
                    break
                stale.append(c)
            if fresh:
                stale, self._idle = [c for c, _ in self._idle], []
        for c in stale:
            c.close()
        if conn is not None:
            return conn, True
        return self._new_conn(self.timeout), False

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < 8:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c, _ in idle:
            c.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- requests ---------------------------------------------------------

    def _headers(self, extra: Optional[Dict[str, str]]) -> Dict[str, str]:
        h = {"User-Agent": USER_AGENT}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def open(self, method: str, path: str, body: Body = None,
             headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = -1.0) -> Response:
        """Sends a request to path (from the server's root, e.g.
        "/v1/tree/boxes/"); returns the answer unread. A non-2xx answer
        raises its PaddockError. timeout None: none (streams that follow a
        job)."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        h = self._headers(headers)
        chunked = body is not None and not isinstance(body, (bytes, bytearray, memoryview))
        if chunked:
            h["Transfer-Encoding"] = "chunked"
        for attempt in (0, 1):
            # A streamed body cannot be sent twice: never on a kept-alive
            # connection the server may have closed meanwhile.
            # After a kept-alive one failed, the others are suspect too.
            conn, reused = (self._new_conn(self.timeout), False) if chunked \
                else self._take(fresh=attempt > 0)
            want = self.timeout if timeout == -1.0 else timeout
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(want)
                conn.timeout = want
                conn.request(method, self._base + path, body=body, headers=h,
                             encode_chunked=chunked)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    ConnectionAbortedError) as e:
                conn.close()
                # A kept-alive connection the server had closed: once more,
                # on a new one (unless the body was a stream, used up now).
                if reused and attempt == 0 and not chunked:
                    continue
                raise PaddockError("%s %s: %s" % (method, path, e)) from e
            except ssl.SSLCertVerificationError as e:
                conn.close()
                raise PaddockError("%s: %s (a server with a private CA: trust it with cacert= "
                                   "or PADDOCK_CACERT; 'paddock login --cacert FILE URL' "
                                   "saves it)" % (self.url, e)) from e
            except OSError as e:
                conn.close()
                raise PaddockError("%s %s: %s" % (method, path, e),
                                   errno="ETIMEDOUT" if isinstance(e, socket.timeout) else None) from e
            except BaseException:
                conn.close()
                raise
            r = Response(self, conn, resp)
            if not 200 <= resp.status < 300:
                try:
                    data = resp.read(65536)
                finally:
                    r.close()
                err = error_from_response(resp.status, data)
                try:
                    err.retry_after = float(resp.getheader("Retry-After") or "")
                except ValueError:
                    pass
                raise err
            return r
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, body: Body = None,
                headers: Optional[Dict[str, str]] = None) -> bytes:
        """A request whose whole answer is returned."""
        r = self.open(method, path, body, headers)
        try:
            try:
                return r.read()
            except OSError as e:
                raise PaddockError("%s %s: %s" % (method, path, e)) from e
        finally:
            r.close()

    # The tree (paths relative to /v1/tree/).
    def get(self, path: str) -> bytes:
        return self.request("GET", "/v1/tree/" + path)

    def get_value(self, path: str) -> str:
        v = self.get(path).decode("utf-8", "replace")
        return v[:-1] if v.endswith("\n") else v

    def get_json(self, path: str) -> Any:
        return json.loads(self.get(path).decode("utf-8"))

    def put(self, path: str, body: Body = b"") -> bytes:
        return self.request("PUT", "/v1/tree/" + path, body if body is not None else b"")

    def put_value(self, path: str, value: str) -> bytes:
        return self.put(path, value + "\n")

    def delete(self, path: str) -> None:
        self.request("DELETE", "/v1/tree/" + path)

    def stream(self, path: str) -> Response:
        """A GET that follows a stream (a job's stdout, events...) with no
        timeout: it ends when the stream does."""
        return self.open("GET", "/v1/tree/" + path, timeout=None)

    def post_json(self, path: str, obj: Any) -> Any:
        data = self.request("POST", path, json.dumps(obj).encode("utf-8"),
                            {"Content-Type": "application/json"})
        return json.loads(data.decode("utf-8"))


def login(url: str, password: str, label: Optional[str] = None, ttl: Optional[int] = None,
          cacert: Optional[str] = None) -> Dict[str, Any]:
    """POST /v1/login: a new token for the owner. Returns the server's
    answer: {"token": ..., "id": ...} (and "expires" when ttl, seconds, is
    given). A wrong password raises AuthError."""
    c = Client(url=url, token=None, cacert=cacert)
    c.token = None
    body: Dict[str, Any] = {"password": password}
    if label is not None:
        body["label"] = label
    if ttl is not None:
        body["ttl"] = int(ttl)
    try:
        # Failed logins (anyone's, from this address) delay the next: the
        # server says for how long (429); wait that, a few times.
        for attempt in range(4):
            try:
                ans = c.post_json("/v1/login", body)
                break
            except PaddockError as e:
                if e.status != 429 or attempt == 3:
                    raise
                time.sleep(min(max(e.retry_after or 1.0, 0.5), 10.0))
    finally:
        c.close()
    if not isinstance(ans, dict) or "token" not in ans:
        raise AuthError("unexpected answer to the login", status=200)
    return ans
