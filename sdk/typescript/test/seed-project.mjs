// The project of the seed's first test, shared by sdk.test.mjs and
// readme.test.mjs: a Node package whose `npm test` runs one passing test.
// (node --test runs this file too: it defines no test.)
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export async function seedProject(dir) {
  await mkdir(join(dir, "test"), { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    '{ "name": "seed", "version": "1.0.0", "private": true, "scripts": { "test": "node --test" } }\n',
  );
  await writeFile(join(dir, "sum.js"), "module.exports = (a, b) => a + b;\n");
  await writeFile(
    join(dir, "test", "sum.test.js"),
    "const test = require('node:test');\nconst assert = require('node:assert');\n" +
      "const sum = require('../sum.js');\ntest('adds', () => assert.strictEqual(sum(2, 3), 5));\n",
  );
}
