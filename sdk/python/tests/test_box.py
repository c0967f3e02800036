"""Lifecycle, ttl, info, list, snapshots, fork, restore, policy, volumes."""
import pytest

import paddock


def test_lifecycle(fresh, client):
    assert fresh in paddock.Box.list(client=client)
    info = fresh.info()
    assert info["state"] == "running" and info["type"] == "tiny"
    fresh.set_ttl(7200)
    assert 7000 < fresh.ttl() <= 7200
    fresh.set_ttl(None)
    assert fresh.ttl() is None
    fresh.stop()
    assert fresh.state() == "stopped"
    fresh.resume()
    assert fresh.state() == "running"
    fresh.kill()
    with pytest.raises(paddock.NotFoundError):
        fresh.info()


def test_snapshot_fork_restore(fresh):
    fresh.files.write("/tmp/v", "1")
    sid = fresh.snapshot("one")
    assert sid in fresh.snapshots()
    fresh.files.write("/tmp/v", "2")
    copy = fresh.fork()
    try:
        assert copy.files.read("/tmp/v") == "2"
        ans = fresh.restore("one")
        assert ans["snapshot"] == sid
        assert fresh.files.read("/tmp/v") == "1"
    finally:
        copy.kill()


def test_policy(fresh):
    assert fresh.policy.get() == "allow-all"
    fresh.policy.set(["example.com", "*.example.org"])
    assert fresh.policy.get() == "allowlist\nexample.com\n*.example.org"
    fresh.policy.set("deny-all")
    assert fresh.policy.get() == "deny-all"
    with pytest.raises(paddock.InvalidError):
        fresh.policy.set("sometimes")


def test_volumes(fresh, client):
    v = paddock.Volume.create("sdk-vol", client=client)
    try:
        assert "sdk-vol" in [x.name for x in paddock.Volume.list(client=client)]
        v.files.write("hello", "from the volume\n")
        fresh.volumes.attach("sdk-vol")
        assert fresh.volumes.list() == ["sdk-vol"]
        assert fresh.commands.run("cat /mnt/sdk-vol/hello").stdout == "from the volume\n"
        with pytest.raises(paddock.ConflictError):
            paddock.Volume.remove("sdk-vol", client=client)
        fresh.volumes.detach("sdk-vol")
        assert fresh.volumes.list() == []
    finally:
        try:
            fresh.volumes.detach("sdk-vol")
        except paddock.PaddockError:
            pass
        paddock.Volume.remove("sdk-vol", client=client)


def test_context_manager(client):
    with paddock.Box.create(type="tiny", image="tiny", client=client) as box:
        assert box.commands.run("echo in").stdout == "in\n"
    with pytest.raises(paddock.NotFoundError):
        box.info()
