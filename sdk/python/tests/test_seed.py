"""The documented first test (paddock new --type small --ttl 3600; push;
exec npm test; stop) as an SDK program, in a debian box."""
import json
import os

import paddock


def node_project(d):
    os.makedirs(os.path.join(d, "test"))
    with open(os.path.join(d, "package.json"), "w") as f:
        json.dump({"name": "seed", "version": "1.0.0", "private": True,
                   "scripts": {"test": "node --test"}}, f)
    with open(os.path.join(d, "sum.js"), "w") as f:
        f.write("module.exports = (a, b) => a + b;\n")
    with open(os.path.join(d, "test", "sum.test.js"), "w") as f:
        f.write("const test = require('node:test');\n"
                "const assert = require('node:assert');\n"
                "const sum = require('../sum.js');\n"
                "test('adds', () => assert.strictEqual(sum(2, 3), 5));\n"
                "test('adds negatives', () => assert.strictEqual(sum(-2, -3), -5));\n")


def test_seed_first_test(tmp_path, monkeypatch):
    node_project(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    box = paddock.Box.create(type="small", ttl=3600)
    try:
        assert box.state() == "running"
        info = box.info()
        assert info.get("type") == "small"
        box.files.upload(".", "/config/project")
        seen = []
        r = box.commands.run("cd /config/project && npm test", on_stdout=seen.append)
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "pass 2" in r.stdout and "".join(seen) == r.stdout
        box.stop()
        assert box.state() == "stopped"
        # connect resumes it, the project still there
        again = paddock.Box.connect(box.name)
        assert again.state() == "running"
        assert again.files.read("/config/project/sum.js").startswith("module.exports")
    finally:
        box.kill()
