#!/usr/bin/env python3
"""hostile-tars.py DIR [--big] [--transfer] - writes the hostile archives
the import, push and pull tests feed paddock, each DIR/NAME.tar:

  dotdot       a good file, then ../escape
  absolute     /etc/paddock-escape
  symlink      a link to /../../../../etc, then a file through it
  symlink-rel  a link climbing out with ../../../..
  hardlink     a hard link to /etc/passwd
  device       a character device (1, 3)

Chains of symlinks, each inside when read lexically, out when followed
from the root they are extracted into:

  chain-dot    a -> ., then b -> a/.. (the root's parent)
  chain-climb  a -> ., b -> a/.., c -> b/../..
  chain-moved  d/e/l -> ../../f (inside), then h, a hard link to d/e/l:
               the same target one level up leads out
  via-up       x -> up/etc: out through a link `up` already there
  via-chain    x -> b2: out through links a2 -> ., b2 -> a2/.. already there

With --big also:
  terabyte     a header claiming 1 TiB, 4 KiB of data and no more
  million      1,000,000 empty files (headers written directly)

With --transfer also:
  pull-mix     what a crafted pull stream may hold: ok (a file), rootshell
               (setuid root, uid 0), sgid (setgid), owned (uid 1234), null
               (a device), fifo, etc -> /etc, up -> .., a -> ., b -> a/..,
               shadow (a hard link to /etc/shadow), rel -> ok
  links300     big (1 MiB) and 300 hard links to it, l000 ... l299
  big3m        one file of 3 MiB
  half-a       a (1.5 MiB); half-b: b (1.5 MiB)
  merge-1      e/ and d -> e; merge-2: e/sub -> a/b/c/d2 and
               d/sub/L -> ../../../../../../etc/shadow (d/ lands in e/)
  dirs-links   (gzip) 20,000 directories and 20,000 links with 4,000-byte
               targets: no content, 158 MB on a disk
  chain99k     (gzip) t/, a chain c01 -> c02 ... c39 -> t, and 99,000 links
               x/NNNNN -> ../c01, each 39 links deep
  deep-links   (gzip) 120 levels of d/ and 40,000 links, each to a new name
               at the bottom: 4.8 million lookups to judge
  cut-gzip     a gzip stream cut in its trailer
"""
import gzip
import io
import os
import sys
import tarfile

h = sys.argv[1]


def make(name, add, mode="w"):
    with tarfile.open(os.path.join(h, name + ".tar"), mode, format=tarfile.PAX_FORMAT) as t:
        add(t)


def dir_(t, name):
    i = tarfile.TarInfo(name)
    i.type = tarfile.DIRTYPE
    i.mode = 0o755
    t.addfile(i)


def file(t, name, data=b"x", mode=0o644, uid=0):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    i.mode = mode
    i.uid = i.gid = uid
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

sym = tarfile.SYMTYPE
make("chain-dot", lambda t: (link(t, "a", ".", sym), link(t, "b", "a/..", sym)))
make("chain-climb", lambda t: (link(t, "a", ".", sym), link(t, "b", "a/..", sym),
                               link(t, "c", "b/../..", sym)))
make("chain-moved", lambda t: (link(t, "d/e/l", "../../f", sym),
                               link(t, "h", "d/e/l", tarfile.LNKTYPE)))
make("via-up", lambda t: link(t, "x", "up/etc", sym))
make("via-chain", lambda t: link(t, "x", "b2", sym))

if "--transfer" in sys.argv[2:]:
    def fifo(t, name):
        i = tarfile.TarInfo(name)
        i.type = tarfile.FIFOTYPE
        t.addfile(i)

    def mix(t):
        file(t, "ok", b"fine\n")
        file(t, "rootshell", b"#!/bin/sh\nid\n", 0o4755, 0)
        file(t, "sgid", b"x", 0o2755, 0)
        file(t, "owned", b"mine\n", 0o644, 1234)
        dev(t)
        fifo(t, "fifo")
        link(t, "etc", "/etc", sym)
        link(t, "up", "..", sym)
        link(t, "a", ".", sym)
        link(t, "b", "a/..", sym)
        link(t, "shadow", "/etc/shadow", tarfile.LNKTYPE)
        link(t, "rel", "ok", sym)

    def links300(t):
        file(t, "big", os.urandom(1 << 20))
        for n in range(300):
            link(t, "l%03d" % n, "big", tarfile.LNKTYPE)

    make("pull-mix", mix)
    make("links300", links300)
    make("big3m", lambda t: file(t, "big", os.urandom(3 << 20)))
    make("half-a", lambda t: file(t, "a", os.urandom(3 << 19)))
    make("half-b", lambda t: file(t, "b", os.urandom(3 << 19)))
    make("merge-1", lambda t: (dir_(t, "e"), link(t, "d", "e", sym)))
    make("merge-2", lambda t: (link(t, "e/sub", "a/b/c/d2", sym),
                               link(t, "d/sub/L", "../../../../../../etc/shadow", sym)))

    def dirs_links(t):
        for n in range(20000):
            dir_(t, "d%05d" % n)
            link(t, "l%05d" % n, "t" * 4000, sym)

    def chain99k(t):
        dir_(t, "t")
        for n in range(1, 40):
            link(t, "c%02d" % n, "c%02d" % (n + 1) if n < 39 else "t", sym)
        for n in range(99000):
            link(t, "x/%05d" % n, "../c01", sym)

    def deep_links(t):
        deep = "d/" * 120
        dir_(t, deep)
        for n in range(40000):
            link(t, "l%05d" % n, "%sx%05d" % (deep, n), sym)

    make("dirs-links", dirs_links, "w:gz")
    make("chain99k", chain99k, "w:gz")
    make("deep-links", deep_links, "w:gz")
    with open(os.path.join(h, "pull-mix.tar"), "rb") as f:
        gz = gzip.compress(f.read())
    with open(os.path.join(h, "cut-gzip.tar"), "wb") as f:
        f.write(gz[:-4])

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
