// run-true.mjs BOX [N]: N round trips of commands.run("true") through the
// SDK on the existing box BOX (resumed when stopped); prints
// "median X ms, mean Y ms (N runs)". Server and token: PADDOCK_URL and
// PADDOCK_TOKEN, else the CLI's stored login.
import { Box } from "paddock-sdk";

const [name, count = "20"] = process.argv.slice(2);
if (!name) {
  console.error("usage: node run-true.mjs BOX [N]");
  process.exit(2);
}
const n = Number.parseInt(count, 10);
const box = await Box.connect(name);
await box.commands.run("true"); // warm: the box started, the connection open
const times = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const r = await box.commands.run("true");
  times.push(performance.now() - t0);
  if (r.exitCode !== 0) {
    console.error(`run-true: exit code ${r.exitCode}`);
    process.exit(1);
  }
}
times.sort((a, b) => a - b);
const mid = Math.floor(n / 2);
const median = n % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
const mean = times.reduce((a, b) => a + b, 0) / n;
console.log(`median ${median.toFixed(1)} ms, mean ${mean.toFixed(1)} ms (${n} runs)`);
