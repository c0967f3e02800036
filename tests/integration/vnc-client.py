#!/usr/bin/python3
# vnc-client.py - a small RFB client for the desktop WebSocket's tests and
# benchmark, over the daemon's WebSocket (python3-websocket) or straight on
# a VNC unix socket (the benchmark's baseline).
#
#   vnc-client.py init URL|unix:PATH [--token T | --proto T]
#       the handshake and one full FramebufferUpdate; prints
#       "version V", "size WxH" and "update WxH rects N".
#   vnc-client.py pointer URL X Y [--token T]
#       the handshake, then a PointerEvent to X,Y; waits for the server to
#       have read it (a FramebufferUpdateRequest answered after it).
#   vnc-client.py hold URL [--token T]
#       the handshake, then reads until the server closes; prints "open",
#       then "closed CODE REASON AT" (AT: time.time() when it saw the end).
#   vnc-client.py fps URL|unix:PATH SECONDS [--token T]
#       incremental updates as fast as they come for SECONDS; prints
#       "updates N bytes B seconds S latency_ms L" (L: mean time from a
#       request to its update).
#   vnc-client.py full URL|unix:PATH SECONDS [--token T]
#       the same with whole-screen (non-incremental) requests: throughput.
import socket
import struct
import sys
import time

import websocket


class WS:
    def __init__(self, url, token=None, proto=None):
        headers = []
        protos = None
        if token:
            headers.append("Authorization: Bearer " + token)
        if proto:
            protos = ["binary", "paddock-token." + proto]
        # longer than the server's ping interval (30 s): an idle desktop
        # sends nothing else
        self.ws = websocket.create_connection(url, header=headers, subprotocols=protos,
                                              timeout=120)
        self.buf = b""
        self.closed = None

    def send(self, b):
        self.ws.send_binary(b)

    def more(self):
        op, frame = self.ws.recv_data_frame(True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            data = frame.data or b""
            code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else 0
            self.closed = (code, data[2:].decode(errors="replace"))
            raise EOFError
        if op == websocket.ABNF.OPCODE_BINARY:
            self.buf += frame.data

    def close(self):
        self.ws.close()


class Unix:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.closed = None

    def send(self, b):
        self.s.sendall(b)

    def more(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError
        self.buf += d

    def close(self):
        self.s.close()


def read(c, n):
    while len(c.buf) < n:
        c.more()
    out, c.buf = c.buf[:n], c.buf[n:]
    return out


def connect(target, token=None, proto=None):
    if target.startswith("unix:"):
        return Unix(target[5:])
    return WS(target, token, proto)


def handshake(c):
    version = read(c, 12)
    c.send(b"RFB 003.008\n")
    n = read(c, 1)[0]
    types = read(c, n)
    assert 1 in types, types
    c.send(b"\x01")
    assert struct.unpack(">I", read(c, 4))[0] == 0
    c.send(b"\x01")  # shared
    w, h = struct.unpack(">HH", read(c, 4))
    pf = read(c, 16)
    nl = struct.unpack(">I", read(c, 4))[0]
    read(c, nl)
    bpp = pf[0]
    # raw only, so every update's size is known here
    c.send(struct.pack(">BBH i", 2, 0, 1, 0))
    return version.decode().strip(), w, h, bpp // 8


def update(c, bpp, w, h):
    """Reads server messages up to one FramebufferUpdate; returns its
    rectangles' area, count and bytes."""
    while True:
        t = read(c, 1)[0]
        if t == 0:
            read(c, 1)
            n = struct.unpack(">H", read(c, 2))[0]
            area = size = 0
            for _ in range(n):
                x, y, rw, rh, enc = struct.unpack(">HHHHi", read(c, 12))
                if enc == 0:
                    read(c, rw * rh * bpp)
                    area += rw * rh
                    size += rw * rh * bpp
                elif enc == -223:  # DesktopSize
                    pass
                else:
                    raise ValueError("encoding %d" % enc)
            return area, n, size
        elif t == 2:  # Bell
            continue
        elif t == 3:  # ServerCutText
            read(c, 3)
            read(c, struct.unpack(">I", read(c, 4))[0])
        elif t == 1:  # SetColourMapEntries
            read(c, 1)
            read(c, 2)
            read(c, 6 * struct.unpack(">H", read(c, 2))[0])
        else:
            raise ValueError("server message %d" % t)


def request(c, incremental, w, h):
    c.send(struct.pack(">BBHHHH", 3, 1 if incremental else 0, 0, 0, w, h))


def args():
    a = sys.argv[2:]
    opts = {}
    rest = []
    i = 0
    while i < len(a):
        if a[i] in ("--token", "--proto"):
            opts[a[i][2:]] = a[i + 1]
            i += 2
        else:
            rest.append(a[i])
            i += 1
    return rest, opts


def main():
    cmd = sys.argv[1]
    rest, o = args()
    c = connect(rest[0], o.get("token"), o.get("proto"))
    version, w, h, bpp = handshake(c)
    if cmd == "init":
        print("version", version)
        print("size %dx%d" % (w, h))
        request(c, False, w, h)
        area, n, _ = update(c, bpp, w, h)
        assert area >= w * h, (area, w * h)
        print("update %dx%d rects %d" % (w, h, n))
    elif cmd == "pointer":
        x, y = int(rest[1]), int(rest[2])
        c.send(struct.pack(">BBHH", 5, 0, x, y))
        # the server reads in order: once this request is answered, the
        # pointer event before it was read too
        request(c, False, w, h)
        update(c, bpp, w, h)
        time.sleep(0.3)
        print("sent")
    elif cmd == "hold":
        print("open", flush=True)
        try:
            while True:
                request(c, True, w, h)
                update(c, bpp, w, h)
        except (EOFError, websocket.WebSocketConnectionClosedException, OSError) as e:
            if not c.closed:
                print("error", repr(e), flush=True)
        code, reason = c.closed or (0, "")
        print("closed %d %s AT %.3f" % (code, reason.replace(" ", "_"), time.time()), flush=True)
        return
    elif cmd in ("fps", "full"):
        seconds = float(rest[1])
        incremental = cmd == "fps"
        request(c, False, w, h)
        update(c, bpp, w, h)
        n = size = 0
        lat = 0.0
        start = time.time()
        while time.time() - start < seconds:
            t0 = time.time()
            request(c, incremental, w, h)
            _, _, b = update(c, bpp, w, h)
            lat += time.time() - t0
            n += 1
            size += b
        el = time.time() - start
        print("updates %d bytes %d seconds %.2f latency_ms %.2f" % (n, size, el, 1000 * lat / max(n, 1)))
    c.close()


if __name__ == "__main__":
    main()
