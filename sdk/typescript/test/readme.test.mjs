// Every example of the README the package ships runs against the server
// (js blocks as ES modules, cjs blocks as CommonJS, each a program of its
// own, from the current directory, where a ./project waits); ts blocks are
// type-checked with tsc against the package's declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { seedProject } from "./seed-project.mjs";

const require = createRequire(join(process.cwd(), "index.js"));
const readmePath = join(dirname(require.resolve("paddock-sdk/package.json")), "README.md");
const readme = await readFile(readmePath, "utf8");
const blocks = [...readme.matchAll(/^```(js|cjs|ts)\n([\s\S]*?)^```$/gm)].map((m, i) => ({
  n: i + 1,
  lang: m[1],
  code: m[2],
  heading: [...readme.slice(0, m.index).matchAll(/^## (.*)$/gm)].pop()?.[1] ?? "",
}));

test("the README has examples of each kind", () => {
  assert.ok(blocks.filter((b) => b.lang === "js").length >= 5);
  assert.ok(blocks.some((b) => b.lang === "cjs"));
  assert.ok(blocks.some((b) => b.lang === "ts"));
});

for (const b of blocks) {
  test(`README example ${b.n} (${b.heading}, ${b.lang})`, async () => {
    await seedProject(join(process.cwd(), "project"));
    if (b.lang === "ts") {
      // A fragment: what it uses is declared around it.
      const file = join(process.cwd(), `readme-${b.n}.ts`);
      await writeFile(file, `import { Box } from "paddock-sdk";\ndeclare const box: Box;\nexport {};\n${b.code}`);
      const r = spawnSync(
        "tsc",
        ["--noEmit", "--strict", "--target", "es2020", "--module", "es2022", "--moduleResolution", "node",
          "--lib", "es2020,dom,dom.iterable", file],
        { encoding: "utf8" },
      );
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return;
    }
    const file = join(process.cwd(), `readme-${b.n}.${b.lang === "js" ? "mjs" : "cjs"}`);
    await writeFile(file, b.code);
    const r = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 120_000 });
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ""}\n${r.stdout}\n${r.stderr}`);
    if (b.heading === "The first test") assert.match(r.stdout, /exit code 0/);
    if (b.heading === "Errors") assert.match(r.stdout, /refused: .*huge.* EINVAL/);
    if (b.heading === "CommonJS") assert.equal(r.stdout.trim(), "Linux");
    await rm(file);
  });
}
