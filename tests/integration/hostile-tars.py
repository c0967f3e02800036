#!/usr/bin/env python3
"""hostile-tars.py DIR [--big] - writes the hostile archives the import and
push tests feed the daemon, each DIR/NAME.tar:

  dotdot       a good file, then ../escape
  absolute     /etc/paddock-escape
  symlink      a link to /../../../../etc, then a file through it
  symlink-rel  a link climbing out with ../../../..
  hardlink     a hard link to /etc/passwd
  device       a character device (1, 3)

With --big also:
  terabyte     a header claiming 1 TiB, 4 KiB of data and no more
  million      1,000,000 empty files (headers written directly)
"""
import io
import os
import sys
import tarfile

h = sys.argv[1]


def make(name, add):
    with tarfile.open(os.path.join(h, name + ".tar"), "w", format=tarfile.PAX_FORMAT) as t:
        add(t)


def file(t, name, data=b"x"):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    t.addfile(i, io.BytesIO(data))


def link(t, name, target, kind):
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = target
    t.addfile(i)


def dev(t):
    i = tarfile.TarInfo("null")
    i.type = tarfile.CHRTYPE
    i.devmajor, i.devminor = 1, 3
    t.addfile(i)


make("dotdot", lambda t: (file(t, "ok"), file(t, "../escape")))
make("absolute", lambda t: file(t, "/etc/paddock-escape"))
make("symlink", lambda t: (link(t, "out", "/../../../../etc", tarfile.SYMTYPE), file(t, "out/x")))
make("symlink-rel", lambda t: link(t, "up", "../../../..", tarfile.SYMTYPE))
make("hardlink", lambda t: link(t, "pw", "/etc/passwd", tarfile.LNKTYPE))
make("device", dev)

if "--big" in sys.argv[2:]:
    i = tarfile.TarInfo("sparse")
    i.size = 1 << 40
    with open(os.path.join(h, "terabyte.tar"), "wb") as f:
        f.write(i.tobuf(tarfile.PAX_FORMAT) + b"\0" * 4096)
    tmpl = bytearray(tarfile.TarInfo("f0000000").tobuf(tarfile.USTAR_FORMAT))
    with open(os.path.join(h, "million.tar"), "wb") as f:
        chunk = []
        for n in range(1000000):
            b = bytearray(tmpl)
            b[0:8] = b"f%07d" % n
            b[148:156] = b"        "
            b[148:156] = b"%06o\0 " % sum(b)
            chunk.append(bytes(b))
            if len(chunk) == 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk) + b"\0" * 1024)
