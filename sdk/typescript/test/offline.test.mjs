// What needs no real server: the stored login, error mapping and a
// prompt's event stream, against a small fake of the HTTP API.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Box, Connection, ConflictError, PaddockError, configPath } from "paddock-sdk";

let server, url, tmp;
const seen = []; // "METHOD PATH AUTH BODY"

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), "paddock-sdk-offline-"));
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", async () => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"} ${body}`);
      const path = req.url.split("?")[0];
      if (path.endsWith("/events")) {
        res.writeHead(200, { "Content-Type": "text/plain" });
        // pieces cut anywhere, a line that is not JSON, a multi-byte
        // character split, and a line after the end that must not show
        const text = Buffer.from(
          '{"type":"start","agent":"fake"}\nnot json\n{"type":"message","text":"h\u00e9llo"}\n' +
            '{"type":"end","exit":0}\n{"type":"message","text":"after the end"}\n',
        );
        for (const cut of [5, 40, 63, 64, 90, text.length]) {
          res.write(text.subarray(res.sent ?? 0, cut));
          res.sent = cut;
          await new Promise((r) => setTimeout(r, 20));
        }
        res.end();
      } else if (path.includes("/busy")) {
        res.writeHead(409, { "Content-Type": "application/json" });
        res.end('{"error":"box b is running","errno":"EBUSY"}');
      } else if (path.includes("/broken")) {
        res.writeHead(500, { "Content-Type": "text/plain" });
        res.end("something broke\nsecond line\n");
      } else if (req.method === "PUT" && path.endsWith("/")) {
        res.writeHead(201).end();
      } else {
        res.writeHead(204).end();
      }
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});

after(async () => {
  server.close();
  await rm(tmp, { recursive: true, force: true });
});

test("prompt: events parsed across pieces, ended by the end event", async () => {
  const box = new Box(new Connection(url, "tok-1"), "b");
  seen.length = 0;
  const run = await box.prompt("do it", { agent: "fake", model: "m1" });
  assert.match(run.name, /^sdk-[a-z0-9]{8}$/);
  const events = [];
  for await (const ev of run) events.push(ev);
  assert.deepEqual(events, [
    { type: "start", agent: "fake" },
    { type: "message", text: "h\u00e9llo" },
    { type: "end", exit: 0 },
  ]);
  const p = `/v1/tree/boxes/b/prompts/${run.name}/`;
  assert.deepEqual(seen.slice(0, 5), [
    `PUT ${p} Bearer tok-1 `,
    `PUT ${p}agent Bearer tok-1 fake\n`,
    `PUT ${p}model Bearer tok-1 m1\n`,
    `PUT ${p}text Bearer tok-1 do it`,
    `GET ${p}events Bearer tok-1 `,
  ]);
});

test("errors: the server's JSON text, else its first line", async () => {
  const conn = new Connection(url, "t");
  await assert.rejects(conn.put("boxes/busy/state", "stopped"), (e) => {
    assert.ok(e instanceof ConflictError);
    assert.equal(e.message, "box b is running");
    assert.equal(e.errno, "EBUSY");
    return true;
  });
  await assert.rejects(conn.get("broken"), (e) => {
    assert.ok(e instanceof PaddockError && e.constructor === PaddockError);
    assert.equal(e.status, 500);
    assert.equal(e.message, "something broke");
    return true;
  });
  await assert.rejects(Connection.resolve({ url: "ftp://x", token: "t" }), /unsupported URL/);
  await assert.rejects(new Box(conn, "b").files.read("/etc/../x"), /not allowed/);
});

test("the CLI's stored login: its token only for its own URL", async () => {
  const saved = { ...process.env };
  try {
    const config = join(tmp, "config.ini");
    await writeFile(config, `; written by paddock login\n[server]\nurl = ${url}\ntoken = tok-stored\n[state]\ncurrent = b\n`);
    process.env.PADDOCK_CONFIG = config;
    delete process.env.PADDOCK_URL;
    delete process.env.PADDOCK_TOKEN;
    assert.equal(configPath(), config);
    seen.length = 0;
    await (await Connection.resolve()).put("boxes/b/ttl", "60");
    assert.equal(seen[0], "PUT /v1/tree/boxes/b/ttl Bearer tok-stored 60\n");

    // another server named: the stored token is not sent to it
    process.env.PADDOCK_URL = url + "/";
    seen.length = 0;
    await (await Connection.resolve()).put("boxes/b/ttl", "60");
    assert.equal(seen[0], "PUT /v1/tree/boxes/b/ttl Bearer tok-stored 60\n"); // the same URL, slash aside
    process.env.PADDOCK_URL = url.replace("127.0.0.1", "localhost");
    seen.length = 0;
    await (await Connection.resolve()).put("boxes/b/ttl", "60");
    assert.equal(seen[0], "PUT /v1/tree/boxes/b/ttl - 60\n");

    // options first, then the environment
    process.env.PADDOCK_TOKEN = "tok-env";
    seen.length = 0;
    await (await Connection.resolve({ url })).put("boxes/b/ttl", "1");
    await (await Connection.resolve({ url, token: "tok-opt" })).put("boxes/b/ttl", "2");
    assert.deepEqual(seen, ["PUT /v1/tree/boxes/b/ttl Bearer tok-env 1\n", "PUT /v1/tree/boxes/b/ttl Bearer tok-opt 2\n"]);

    process.env.PADDOCK_CONFIG = join(tmp, "missing.ini");
    delete process.env.PADDOCK_URL;
    await assert.rejects(Connection.resolve(), /no server/);
  } finally {
    for (const k of ["PADDOCK_CONFIG", "PADDOCK_URL", "PADDOCK_TOKEN"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
});
