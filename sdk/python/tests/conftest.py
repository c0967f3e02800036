"""Fixtures: the server comes from PADDOCK_URL/PADDOCK_TOKEN (the harness,
tests/integration/test-sdk-python.sh, starts it); tiny boxes for speed."""
import os

import pytest

import paddock


def pytest_configure(config):
    if not os.environ.get("PADDOCK_URL"):
        raise pytest.UsageError("PADDOCK_URL and PADDOCK_TOKEN must name a test server")


@pytest.fixture(scope="session")
def client():
    c = paddock.Client()
    yield c
    # Whatever a test left behind.
    for b in paddock.Box.list(client=c):
        try:
            b.kill()
        except paddock.PaddockError:
            pass
    c.close()


@pytest.fixture(scope="session")
def tiny(client):
    """One running tiny box shared by the tests that only run things."""
    box = paddock.Box.create(type="tiny", image="tiny", ttl=3600, client=client)
    yield box
    box.kill()


@pytest.fixture
def fresh(client):
    """A tiny box of the test's own."""
    box = paddock.Box.create(type="tiny", image="tiny", ttl=600, client=client)
    yield box
    try:
        box.kill()
    except paddock.NotFoundError:
        pass
