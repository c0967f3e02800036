"""Every python example of README.md runs against the server (the first
test's in a Node project)."""
import os
import re

import pytest

from test_seed import node_project

README = os.environ.get("PD_SDK_README") or os.path.join(os.path.dirname(__file__), "..",
                                                          "README.md")


def examples():
    with open(README) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_has_examples():
    assert len(examples()) >= 6


@pytest.mark.parametrize("n", range(len(examples())))
def test_readme_example(n, tmp_path, monkeypatch, capsys):
    node_project(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code = examples()[n]
    exec(compile(code, "README.md example %d" % (n + 1), "exec"), {"__name__": "__readme__"})
