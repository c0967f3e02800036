// paddock-sdk against a real server: PADDOCK_URL and PADDOCK_TOKEN (and
// PADDOCK_PASSWORD for the token tests) name it. Run from a project that
// installed the package (tests/integration/test-sdk-typescript.sh).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, mkdir, writeFile, readFile, readdir, rm, stat, symlink, readlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Box, AuthError, InvalidError, NotFoundError, PaddockError, Volume } from "paddock-sdk";
import { seedProject } from "./seed-project.mjs";

let box; // shared by the tests after the seed's
let tmp;

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), "paddock-sdk-test-"));
  box = await Box.create({ ttl: 3600_000 });
});

after(async () => {
  await box?.kill().catch(() => {});
  await rm(tmp, { recursive: true, force: true });
});

test("the seed's first test: create, upload, npm test, stop", async () => {
  const project = join(tmp, "project");
  await seedProject(project);
  const b = await Box.create({ type: "small", ttl: 3600_000 });
  try {
    const info = await b.info();
    assert.equal(info.state, "running");
    assert.equal(info.type, "small");
    const up = await b.files.upload(project, "/config/project");
    assert.ok(up.entries >= 4, JSON.stringify(up));
    const r = await b.commands.run("bash -lc 'cd /config/project && npm test'");
    assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /# pass 1/);
    await b.stop();
    assert.equal((await b.info()).state, "stopped");
    // connect resumes it
    const again = await Box.connect(b.name);
    assert.equal(await again.state(), "running");
  } finally {
    await b.kill();
  }
  await assert.rejects(b.info(), NotFoundError);
});

test("output streams while the job runs", async () => {
  const chunks = [];
  const t0 = Date.now();
  const r = await box.commands.run("for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.5; done", {
    onStdout: (s) => chunks.push({ t: Date.now() - t0, s }),
  });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, chunks.map((c) => c.s).join(""));
  assert.equal(r.stdout.split("\n").length, 11);
  assert.ok(chunks.length >= 5, `${chunks.length} chunks`);
  const spread = chunks[chunks.length - 1].t - chunks[0].t;
  assert.ok(spread >= 3000, `chunks arrived within ${spread} ms: ${JSON.stringify(chunks)}`);
  assert.ok(chunks[0].t < 4000, `the first chunk came after ${chunks[0].t} ms`);
});

test("stdout, stderr, exit code, env and cwd", async () => {
  const r = await box.commands.run('echo "$GREETING from $(pwd)"; echo oops >&2; exit 3', {
    env: { GREETING: "hello world" },
    cwd: "/tmp",
  });
  assert.deepEqual(r, { stdout: "hello world from /tmp\n", stderr: "oops\n", exitCode: 3 });
  const words = await box.commands.run(["printf", "%s|", "a b", "it's", "$HOME"]);
  assert.equal(words.stdout, "a b|it's|$HOME|");
  const fed = await box.commands.run("wc -c", { stdin: "12345" });
  assert.equal(fed.stdout.trim(), "5");
  const much = new Uint8Array(300_000).fill(65); // over several 64 KiB writes
  const counted = await box.commands.run("sha256sum", { stdin: much });
  assert.equal(counted.stdout.split(" ")[0], createHash("sha256").update(much).digest("hex"));
});

test("a background job: stdin, then kill", async () => {
  const seen = [];
  const h = await box.commands.run("while read l; do echo got $l; done; echo eof", {
    background: true,
    onStdout: (s) => seen.push(s),
  });
  assert.match(h.name, /^sdk-/);
  await h.sendStdin("one\n");
  await h.sendStdin(new TextEncoder().encode("two\n"));
  for (let i = 0; i < 100 && !seen.join("").includes("got two"); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(seen.join(""), "got one\ngot two\n");
  await h.closeStdin();
  const r = await h.wait();
  assert.deepEqual(r, { stdout: "got one\ngot two\neof\n", stderr: "", exitCode: 0 });

  const sleeper = await box.commands.run("sleep 600", { background: true });
  const t0 = Date.now();
  await sleeper.kill();
  const k = await sleeper.wait();
  assert.equal(k.exitCode, 137);
  assert.ok(Date.now() - t0 < 10_000);
});

test("timeoutMs kills the job", async () => {
  await assert.rejects(box.commands.run("echo before; sleep 60", { timeoutMs: 1000 }), (e) => {
    assert.equal(e.name, "TimeoutError");
    assert.equal(e.stdout, "before\n");
    return true;
  });
});

test("files: text, all 256 byte values, list, remove", async () => {
  await box.files.write("/tmp/sdk/a/hello.txt", "héllo\n"); // parents made
  assert.equal(await box.files.read("/tmp/sdk/a/hello.txt"), "héllo\n");
  const bytes = new Uint8Array(256 * 4);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
  await box.files.write("/tmp/sdk/bytes.bin", bytes);
  const back = await box.files.read("/tmp/sdk/bytes.bin", { format: "bytes" });
  assert.ok(back instanceof Uint8Array);
  assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
  const sum = await box.commands.run("sha256sum < /tmp/sdk/bytes.bin");
  assert.equal(sum.stdout.split(" ")[0], createHash("sha256").update(bytes).digest("hex"));
  const names = (await box.files.list("/tmp/sdk")).map((e) => `${e.type} ${e.name}`).sort();
  assert.deepEqual(names, ["dir a", "file bytes.bin"]);
  assert.equal(await box.files.exists("/tmp/sdk/a/hello.txt"), true);
  await box.files.remove("/tmp/sdk");
  assert.equal(await box.files.exists("/tmp/sdk"), false);
  await assert.rejects(box.files.read("/tmp/sdk/a/hello.txt"), NotFoundError);
});

test("files: a 100 MB file both ways", async () => {
  const big = new Uint8Array(100 << 20);
  for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 0xff;
  big.fill(7, 5, 1000);
  const want = createHash("sha256").update(big).digest("hex");
  await box.files.write("/tmp/big.bin", big);
  const inBox = await box.commands.run("sha256sum /tmp/big.bin");
  assert.equal(inBox.stdout.split(" ")[0], want);
  const back = await box.files.read("/tmp/big.bin", { format: "bytes" });
  assert.equal(back.length, big.length);
  assert.equal(createHash("sha256").update(back).digest("hex"), want);
  await box.files.remove("/tmp/big.bin");
});

test("upload and download a tree", async () => {
  const src = join(tmp, "tree");
  await mkdir(join(src, "sub", "deeper"), { recursive: true });
  await writeFile(join(src, "a.txt"), "alpha\n");
  await writeFile(join(src, "sub", "b.bin"), Buffer.from([0, 1, 2, 255]));
  await writeFile(join(src, "sub", "deeper", "c.txt"), "x".repeat(100000));
  await symlink("a.txt", join(src, "link"));
  await writeFile(join(src, "-dash"), "an option's look\n");
  await box.files.upload(src, "/home/tree");
  assert.equal(await box.files.read("/home/tree/sub/deeper/c.txt"), "x".repeat(100000));
  const dst = join(tmp, "back");
  await box.files.download("/home/tree", dst);
  assert.equal(await readFile(join(dst, "a.txt"), "utf8"), "alpha\n");
  assert.deepEqual(await readFile(join(dst, "sub", "b.bin")), Buffer.from([0, 1, 2, 255]));
  assert.equal((await readFile(join(dst, "sub", "deeper", "c.txt"))).length, 100000);
  assert.equal(await readlink(join(dst, "link")), "a.txt");
  assert.deepEqual((await readdir(dst)).sort(), ["-dash", "a.txt", "link", "sub"]);
  // setuid in the box stays in the box
  const chmod = await box.commands.run("chmod 4755 /home/tree/a.txt && stat -c %a /home/tree/a.txt");
  assert.deepEqual([chmod.exitCode, chmod.stdout], [0, "4755\n"], chmod.stderr);
  await box.files.download("/home/tree", join(tmp, "again"));
  assert.equal((await stat(join(tmp, "again", "a.txt"))).mode & 0o7000, 0);
  // an empty directory
  await mkdir(join(tmp, "empty"));
  await box.files.upload(join(tmp, "empty"), "/home/empty");
  assert.deepEqual(await box.files.list("/home/empty"), []);
});

test("typed errors carry the server's text", async () => {
  const before = (await Box.list()).length;
  await assert.rejects(Box.create({ type: "no-such-type" }), (e) => {
    assert.ok(e instanceof InvalidError, String(e));
    assert.ok(e instanceof PaddockError);
    assert.equal(e.status, 400);
    assert.equal(e.errno, "EINVAL");
    assert.match(e.message, /no-such-type/);
    return true;
  });
  // the failed box was deleted again
  assert.equal((await Box.list()).length, before);
  await assert.rejects(Box.connect("no-such-box"), (e) => {
    assert.ok(e instanceof NotFoundError, String(e));
    assert.equal(e.status, 404);
    assert.match(e.message, /no-such-box/);
    return true;
  });
  await assert.rejects(box.setTtl(-5), PaddockError);
  await assert.rejects(box.policy.set({ allow: ["not a domain!"] }), InvalidError);
});

test("settings: ttl, policy, info, list", async () => {
  await box.setTtl(120_000);
  const info = await box.info();
  assert.ok(info.ttlMs > 100_000 && info.ttlMs <= 120_000, `ttl ${info.ttlMs}`);
  assert.ok(Date.parse(info.expires) > Date.now(), info.expires);
  await box.setTtl(null);
  assert.equal((await box.info()).ttlMs, null);
  await box.setTtl(3600_000);
  await box.policy.set({ allow: ["example.com", "*.example.org"] });
  assert.deepEqual(await box.policy.get(), { allow: ["example.com", "*.example.org"] });
  await box.policy.set("deny-all");
  assert.equal(await box.policy.get(), "deny-all");
  await box.policy.set("allow-all");
  assert.ok((await Box.list()).some((i) => i.name === box.name && i.state === "running"));
});

test("snapshot, restore by label, fork", async () => {
  await box.files.write("/home/state.txt", "one\n");
  const id = await box.snapshot("sdk-one");
  assert.match(id, /^[a-z0-9._-]+$/);
  assert.ok((await box.snapshots()).includes(id));
  await box.files.write("/home/state.txt", "two\n");
  const r = await box.restore("sdk-one");
  assert.equal(r.snapshot, id);
  assert.equal(await box.files.read("/home/state.txt"), "one\n");
  const fork = await box.fork();
  try {
    assert.match(fork.name, /^box-[a-z0-9]{6}$/);
    assert.equal(await fork.files.read("/home/state.txt"), "one\n");
  } finally {
    await fork.kill();
  }
});

test("volumes: create, attach, detach, remove", async () => {
  const name = "sdkvol" + Date.now();
  await Volume.create(name);
  assert.ok((await Volume.list()).some((v) => v.name === name));
  await box.volumes.attach(name);
  assert.deepEqual(await box.volumes.list(), [name]);
  await assert.rejects(Volume.remove(name), (e) => e.status === 409);
  await box.volumes.detach(name);
  assert.deepEqual(await box.volumes.list(), []);
  await Volume.remove(name);
  assert.ok(!(await Volume.list()).some((v) => v.name === name));
});

// Tokens: a second one from a login, revoked; with a "ttl" the server
// supports (tokens that expire), one that expired as well.
async function login(body) {
  const res = await fetch(process.env.PADDOCK_URL + "/v1/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ password: process.env.PADDOCK_PASSWORD, label: "sdk-test", ...body }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

test("a revoked token: AuthError", { skip: !process.env.PADDOCK_PASSWORD && "needs PADDOCK_PASSWORD" }, async () => {
  const { token, id } = await login({});
  const opts = { url: process.env.PADDOCK_URL, token };
  assert.ok(Array.isArray(await Box.list(opts)));
  // a job followed with it: its streams are cut at the revocation
  const mine = await Box.connect(box.name, opts);
  const job = await mine.commands.run("echo started; sleep 30", { background: true, onStdout: () => {} });
  const cut = job.wait();
  cut.catch(() => {});
  await new Promise((r) => setTimeout(r, 300));
  await box.conn.tree("DELETE", `tokens/${id}/`);
  await assert.rejects(cut, (e) => {
    assert.ok(e instanceof PaddockError, String(e));
    return true;
  });
  await box.commands.connect(job.name).kill();
  await assert.rejects(Box.list(opts), (e) => {
    assert.ok(e instanceof AuthError, String(e));
    assert.equal(e.status, 401);
    assert.ok(e.message.length > 0);
    return true;
  });
  await assert.rejects(Box.connect(box.name, opts), AuthError);
});

test("an expired token: AuthError", { skip: !process.env.PADDOCK_PASSWORD && "needs PADDOCK_PASSWORD" }, async (t) => {
  await new Promise((r) => setTimeout(r, 1100)); // the login rate limit
  const answer = await login({ ttl: 1 });
  if (!answer.expires) {
    t.skip("this server's tokens do not expire");
    return;
  }
  await new Promise((r) => setTimeout(r, Date.parse(answer.expires) - Date.now() + 1100));
  await assert.rejects(Box.list({ url: process.env.PADDOCK_URL, token: answer.token }), (e) => {
    assert.ok(e instanceof AuthError, String(e));
    assert.match(e.message, /expired/);
    return true;
  });
});

// The desktop: PADDOCK_TEST_DESKTOP_IMAGE names an image that has one.
const desktopImage = process.env.PADDOCK_TEST_DESKTOP_IMAGE;
test("desktop: screenshot, click, type, key", { skip: !desktopImage && "no desktop image (PADDOCK_TEST_DESKTOP_IMAGE)" }, async () => {
  const d = await Box.create({ image: desktopImage, ttl: 600_000 });
  try {
    await d.desktop.start();
    assert.equal(await d.desktop.state(), "on");
    const png = await d.desktop.screenshot();
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.length > 1000, `${png.length} bytes`);
    await d.desktop.move(100, 120);
    assert.deepEqual(await d.desktop.cursor(), { x: 100, y: 120 });
    await d.desktop.click(200, 150);
    await d.desktop.type("hello\nworld");
    await d.desktop.key("ctrl+a");
    await assert.rejects(d.desktop.input("fly 1 2"), InvalidError);
    await d.desktop.stop();
  } finally {
    await d.kill();
  }
});

// A prompt's events need an image with agents and a model to talk to
// (test-cli-prompt.sh has both); here: its refusal comes back typed, and
// the prompt made for it is gone again.
test("prompt: an image without agents is refused with the server's text", async () => {
  await assert.rejects(box.prompt("say hi"), (e) => {
    assert.ok(e instanceof NotFoundError, String(e));
    assert.match(e.message, /has no agents/);
    return true;
  });
  assert.deepEqual(await box.conn.list(`boxes/${box.name}/prompts/`).then((l) => l.filter((x) => x.name.startsWith("sdk-"))), []);
});

// A prompt's run: PADDOCK_TEST_AGENT_BOX names a box of an image with the
// claude agent, whose model the test's fake answers.
const agentBox = process.env.PADDOCK_TEST_AGENT_BOX;
test("prompt: the agent's events, its result, its work in the box", { skip: !agentBox && "no agents box (PADDOCK_TEST_AGENT_BOX)" }, async () => {
  const b = await Box.connect(agentBox);
  const run = await b.prompt("Create the file hello.txt with content: hi from the fake model", { agent: "claude" });
  const events = [];
  for await (const ev of run) events.push(ev);
  const types = events.map((e) => e.type);
  assert.equal(types[0], "start", JSON.stringify(events));
  assert.equal(types.at(-1), "end");
  assert.equal(events.at(-1).exit, 0, JSON.stringify(events.at(-1)));
  assert.ok(types.includes("tool_call"), types.join(" "));
  assert.ok(events.every((e) => typeof e.time === "string"));
  assert.equal(await run.exit(), 0);
  assert.ok((await run.result()).length > 0);
  assert.match(await b.files.read("/config/hello.txt"), /hi from the fake model/);
});
