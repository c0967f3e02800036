"""Errors come back typed, with the server's reason."""
import json
import os
import urllib.request

import pytest

import paddock


def test_bad_type_is_invalid(client):
    before = {b.name for b in paddock.Box.list(client=client)}
    with pytest.raises(paddock.InvalidError) as e:
        paddock.Box.create(type="no-such-type", client=client)
    assert e.value.status == 400 and e.value.errno == "EINVAL"
    assert "no-such-type" in e.value.message, e.value.message
    assert "unknown type" in e.value.message
    # The box was deleted again.
    assert {b.name for b in paddock.Box.list(client=client)} == before


def test_missing_box_is_not_found(client):
    with pytest.raises(paddock.NotFoundError) as e:
        paddock.Box.connect("no-such-box", client=client)
    assert e.value.status == 404 and e.value.errno == "ENOENT" and e.value.message


def test_name_taken_is_conflict(tiny, client):
    with pytest.raises(paddock.ConflictError) as e:
        paddock.Box.create(name=tiny.name, client=client)
    assert e.value.status == 409


def test_bad_token_is_auth_error():
    with pytest.raises(paddock.AuthError) as e:
        paddock.Box.list(token="pd_nosuchtoken0_" + "x" * 43)
    assert e.value.status == 401 and "token" in e.value.message


def test_revoked_token_is_auth_error(tiny):
    ans = paddock.login(os.environ["PADDOCK_URL"], os.environ["PD_PASSWORD"], label="sdk-test")
    box = paddock.Box(tiny.name, token=ans["token"])
    assert box.commands.run("echo ok").stdout == "ok\n"
    tiny.client.delete("tokens/%s/" % ans["id"])
    with pytest.raises(paddock.AuthError) as e:
        box.info()
    assert e.value.status == 401


def test_wrong_password_is_auth_error():
    with pytest.raises(paddock.AuthError):
        paddock.login(os.environ["PADDOCK_URL"], "not the password")


def test_expired_token_is_auth_error(tiny):
    """A token with a TTL (login's "ttl"), once it expired."""
    import time
    try:
        ans = paddock.login(os.environ["PADDOCK_URL"], os.environ["PD_PASSWORD"], ttl=1)
    except paddock.InvalidError:
        pytest.skip("this server's login takes no ttl")
    if "expires" not in ans:
        pytest.skip("this server's tokens do not expire")
    time.sleep(2.2)
    with pytest.raises(paddock.AuthError) as e:
        paddock.Box(tiny.name, token=ans["token"]).info()
    assert "expired" in e.value.message


def test_config_file_login(tmp_path, monkeypatch, tiny):
    """The CLI's stored login is used when nothing else names a server,
    its token only with its own URL."""
    url, token = os.environ["PADDOCK_URL"], os.environ["PADDOCK_TOKEN"]
    cfg = tmp_path / "config.ini"
    cfg.write_text("[server]\nurl = %s\ntoken = %s\n[state]\ncurrent = x\n" % (url, token))
    monkeypatch.setenv("PADDOCK_CONFIG", str(cfg))
    monkeypatch.delenv("PADDOCK_URL")
    monkeypatch.delenv("PADDOCK_TOKEN")
    assert paddock.Box.connect(tiny.name).state() == "running"
    # Another URL: the config's token is not sent there.
    other = url.replace("127.0.0.1", "localhost")
    with pytest.raises(paddock.AuthError):
        paddock.Box(tiny.name, url=other).info()


def test_unix_socket_without_token(monkeypatch, tiny):
    sock = os.environ.get("PD_SDK_SOCKET")
    if not sock:
        pytest.skip("no local socket given (PD_SDK_SOCKET)")
    monkeypatch.delenv("PADDOCK_TOKEN")
    c = paddock.Client(url="unix:" + sock)
    assert c.token is None
    assert tiny.name in [b.name for b in paddock.Box.list(client=c)]
    assert paddock.Box(tiny.name, client=c).commands.run("echo sock").stdout == "sock\n"
    c.close()


def test_config_precedence(tmp_path, monkeypatch):
    """Arguments, then the environment, then the stored login; the stored
    token and CA file only for the stored URL."""
    ca = "/etc/ssl/certs/ca-certificates.crt"
    cfg = tmp_path / "config.ini"
    cfg.write_text("[server]\nurl = https://paddock.example\ntoken = pd_stored\n"
                   "cacert = %s\n" % ca)
    monkeypatch.setenv("PADDOCK_CONFIG", str(cfg))
    monkeypatch.delenv("PADDOCK_URL")
    monkeypatch.delenv("PADDOCK_TOKEN")
    c = paddock.Client(socket_path="")
    assert (c.url, c.token) == ("https://paddock.example", "pd_stored")
    c = paddock.Client(url="https://elsewhere.example", socket_path="")
    assert c.token is None
    monkeypatch.setenv("PADDOCK_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("PADDOCK_TOKEN", "pd_env")
    c = paddock.Client()
    assert (c.url, c.token) == ("http://127.0.0.1:1", "pd_env")
    c = paddock.Client(url="unix:/nonexistent.sock", token="pd_arg")
    assert (c.url, c.token) == ("unix:/nonexistent.sock", "pd_arg")
    with pytest.raises(paddock.PaddockError):
        c.get("boxes/")
    cfg.write_text("[server]\ncacert = /nonexistent/ca.pem\nurl = https://x.example\n")
    monkeypatch.delenv("PADDOCK_URL")
    with pytest.raises(paddock.PaddockError) as e:
        paddock.Client(socket_path="")
    assert "/nonexistent/ca.pem" in e.value.message
    monkeypatch.setenv("PADDOCK_CONFIG", str(tmp_path / "missing.ini"))
    with pytest.raises(paddock.PaddockError) as e:
        paddock.Client(socket_path="")
    assert "paddock login" in e.value.message
    with pytest.raises(ValueError):
        paddock.Client(url="ftp://x")
