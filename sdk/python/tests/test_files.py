"""files: round trips of text, binary and a 100 MB file; listings;
trees up and down as tar streams; a hostile archive refused."""
import hashlib
import io
import os
import tarfile

import pytest

import paddock
from paddock._tar import safe_extract


def test_text_and_binary_round_trip(tiny):
    tiny.files.write("/tmp/sdk/a/hello.txt", "héllo\n")  # parents made
    assert tiny.files.read("/tmp/sdk/a/hello.txt") == "héllo\n"
    data = bytes(range(256)) * 3
    tiny.files.write("/tmp/sdk/bytes.bin", data)
    assert tiny.files.read_bytes("/tmp/sdk/bytes.bin") == data
    r = tiny.commands.run("od -An -tx1 -v /tmp/sdk/bytes.bin | tr -d ' \\n' | head -c 512")
    assert r.stdout == data[:256].hex()


def test_list_and_remove(tiny):
    tiny.files.write("/tmp/sdk-l/x", "1")
    tiny.files.make_dir("/tmp/sdk-l/d/e")
    got = {(e.name, e.type) for e in tiny.files.list("/tmp/sdk-l")}
    assert got == {("x", "file"), ("d", "dir")}
    assert tiny.files.exists("/tmp/sdk-l/x")
    tiny.files.remove("/tmp/sdk-l/x")
    assert not tiny.files.exists("/tmp/sdk-l/x")
    with pytest.raises(paddock.NotFoundError):
        tiny.files.read("/tmp/sdk-l/x")
    with pytest.raises(paddock.ConflictError):
        tiny.files.remove("/tmp/sdk-l")
    tiny.files.remove("/tmp/sdk-l", recursive=True)
    assert not tiny.files.exists("/tmp/sdk-l")


def test_100mb_file(tiny, tmp_path):
    data = os.urandom(1 << 20) * 100
    want = hashlib.sha256(data).hexdigest()
    tiny.files.write("/tmp/big.bin", data)
    assert tiny.commands.run("sha256sum /tmp/big.bin").stdout.split()[0] == want
    back = tiny.files.read_bytes("/tmp/big.bin")
    assert len(back) == len(data) and hashlib.sha256(back).hexdigest() == want
    # From a file object too (streamed, chunked).
    p = tmp_path / "big"
    p.write_bytes(data)
    with open(p, "rb") as f:
        tiny.files.write("/tmp/big2.bin", f)
    assert tiny.commands.run("sha256sum /tmp/big2.bin").stdout.split()[0] == want
    tiny.commands.run("rm -f /tmp/big.bin /tmp/big2.bin")


def _tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", f.read(), os.stat(p).st_mode & 0o777)
    return out


def test_upload_download_tree(tiny, tmp_path):
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    (src / "a.txt").write_text("a\n")
    (src / "sub" / "bin").write_bytes(bytes(range(256)))
    (src / "sub" / "deep" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(src / "sub" / "deep" / "run.sh", 0o755)
    (src / "empty").mkdir()
    os.symlink("a.txt", src / "link")
    ans = tiny.files.upload(str(src), "/tmp/tree")
    assert ans.get("entries", 0) >= 6
    assert tiny.commands.run("/tmp/tree/sub/deep/run.sh && readlink /tmp/tree/link").stdout \
        == "hi\na.txt\n"
    dst = tmp_path / "dst"
    tiny.files.download("/tmp/tree", str(dst))
    assert _tree(dst) == _tree(src)


def test_hostile_download_writes_nothing_outside(fresh, tmp_path):
    """The box plants links that lead out of the destination: download
    refuses them and writes nothing outside it, even through them."""
    victim = tmp_path / "victim"
    victim.mkdir()
    fresh.commands.run(
        "mkdir -p /tmp/h/sub && echo fine >/tmp/h/ok.txt && "
        "ln -s %s /tmp/h/abs && ln -s ../../victim /tmp/h/up && ln -s / /tmp/h/sub/root"
        % victim)
    dst = tmp_path / "dst" / "inner"
    with pytest.raises(paddock.UnsafeArchiveError) as e:
        fresh.files.download("/tmp/h", str(dst))
    assert "abs" in e.value.message and "up" in e.value.message
    assert (dst / "ok.txt").read_text() == "fine\n"
    assert not os.path.lexists(dst / "abs") and not os.path.lexists(dst / "up")
    assert not os.path.lexists(dst / "sub" / "root")
    assert list(victim.iterdir()) == []


def _tar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, kind, extra in entries:
            ti = tarfile.TarInfo(name)
            if kind == "file":
                ti.size = len(extra)
                tf.addfile(ti, io.BytesIO(extra))
                continue
            ti.type = {"sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE, "dir": tarfile.DIRTYPE,
                       "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("sym", "lnk"):
                ti.linkname = extra
            tf.addfile(ti)
    buf.seek(0)
    return buf


def test_safe_extract_refuses_hostile_entries(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    dest = tmp_path / "dest"
    t = _tar([
        ("/abs.txt", "file", b"x"),
        ("../up.txt", "file", b"x"),
        ("a/../../up2.txt", "file", b"x"),
        ("out", "sym", str(outside)),
        ("out/planted", "file", b"x"),
        ("rel", "sym", "../outside"),
        ("rel/planted", "file", b"x"),
        ("hard", "lnk", str(outside / "secret")),
        ("hard2", "lnk", "../outside/secret"),
        ("dev", "chr", ""),
        ("fifo", "fifo", ""),
        ("good/inner.txt", "file", b"ok"),
        ("good/link", "sym", "inner.txt"),
        ("good/hard", "lnk", "good/inner.txt"),
    ])
    skipped = safe_extract(t, str(dest))
    assert len(skipped) == 11, skipped
    assert sorted(os.listdir(outside)) == ["secret"]
    assert not (tmp_path / "up.txt").exists() and not (tmp_path / "up2.txt").exists()
    assert sorted(os.listdir(dest)) == ["good"]
    assert (dest / "good" / "link").read_text() == "ok"
    assert (dest / "good" / "hard").read_text() == "ok"


def test_after_the_servers_idle_timeout(tiny, tmp_path, monkeypatch):
    """The server closes a kept-alive connection after 10 s of silence:
    the next requests (a plain one, a streamed upload) still work, whether
    the client knew it (too old to reuse) or found out (closed under it:
    sent again on a new connection)."""
    import time
    import paddock._client
    tiny.files.write("/tmp/idle.txt", "1")
    time.sleep(10.5)
    with monkeypatch.context() as m:
        m.setattr(paddock._client, "IDLE_REUSE_S", 3600.0)
        assert tiny.files.read("/tmp/idle.txt") == "1"
        assert tiny.commands.run("echo again").stdout == "again\n"
    time.sleep(10.5)
    assert tiny.files.read("/tmp/idle.txt") == "1"
    p = tmp_path / "f"
    p.write_bytes(b"streamed")
    with open(p, "rb") as f:
        tiny.files.write("/tmp/idle.txt", f)
    assert tiny.files.read("/tmp/idle.txt") == "streamed"
