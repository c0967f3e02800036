// common.mjs - what the panel's browser tests share: the environment,
// headless Chromium (playwright-core) on one page, polling, reads through
// the FUSE mount, page screenshots (the tests' artifacts) and the step
// runner. The scripts run from tests/integration/test-panel*.sh, which set:
//   PANEL_URL       http://127.0.0.1:PORT
//   PANEL_PASSWORD  the owner's password
//   PANEL_MOUNT     the daemon's mount point
//   PANEL_SHOTS     directory for the screenshots: one of every page of the
//                   panel, and one on failure
//   PW_DIR          where playwright-core is installed (npm --prefix)
//   CHROMIUM        the browser binary (default /usr/bin/chromium)
// A script declares its steps with step(name, fn) and ends with run(): it
// prints "PLAN N", then "PASS name" / "FAIL name" per step and "# ..."
// diagnostics, stops at the first failure (later steps build on earlier
// ones) and exits 0 only when every step passed.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

function env(k) {
	const v = process.env[k];
	if (!v) {
		console.log(`FAIL environment: ${k} is not set`);
		process.exit(1);
	}
	return v;
}

export const URL_BASE = env('PANEL_URL');
export const PASSWORD = env('PANEL_PASSWORD');
export const MOUNT = env('PANEL_MOUNT');
export const SHOTS = env('PANEL_SHOTS');
const require = createRequire(path.join(env('PW_DIR'), 'package.json'));
const { chromium } = require('playwright-core');

export const diag = (s) => String(s).split('\n').forEach((l) => console.log('# ' + l));

export const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	headless: true,
	args: ['--no-sandbox'],
});
export const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const pageLog = [];
page.on('console', (m) => pageLog.push(`console.${m.type()}: ${m.text()}`));
page.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));

/* Polls fn until it returns a truthy value; throws with what it last saw. */
export async function until(what, fn, timeoutMs = 20000) {
	const end = Date.now() + timeoutMs;
	let last;
	for (;;) {
		try {
			last = await fn();
			if (last)
				return last;
		} catch (e) {
			last = e.message;
		}
		if (Date.now() > end)
			throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
		await new Promise((r) => setTimeout(r, 100));
	}
}

export function check(cond, message) {
	if (!cond)
		throw new Error(message);
}

export const text = async (sel) => ((await page.locator(sel).first().textContent()) ?? '').trim();
export const visible = (sel) => page.locator(sel).first().isVisible();

/* A file of the tree, trimmed, or "(ECODE)" when it cannot be read. */
export function treeFile(...p) {
	try {
		return fs.readFileSync(path.join(MOUNT, ...p), 'utf8').trim();
	} catch (e) {
		return `(${e.code})`;
	}
}
export const exists = (...p) => fs.existsSync(path.join(MOUNT, ...p));

/* A screenshot of the whole page, kept as an artifact. */
export async function shoot(name) {
	const file = path.join(SHOTS, `${name}.png`);
	await page.screenshot({ path: file, fullPage: true });
	diag(`page screenshot: ${file}`);
}

/* Goes to a page of the panel by its hash and waits for its section. */
export async function open(hash, section) {
	await page.evaluate((h) => {
		location.hash = h;
	}, hash);
	await until(`${section} to show`, () => visible('#' + section));
}

/* Clicks selector; the dialog it must open is answered by answer(dialog). */
export async function withDialog(selector, answer) {
	let seen = null;
	const handler = async (d) => {
		seen = `${d.type()}: ${d.message()}`;
		await answer(d);
	};
	page.once('dialog', handler);
	try {
		await page.click(selector);
		await until('a dialog', () => seen, 5000);
	} finally {
		page.off('dialog', handler);
	}
	return seen;
}

export async function login(password) {
	await page.fill('#login-password', password);
	await page.click('#login-submit');
}

/* What the page's console said about a Content-Security-Policy it broke. */
export const cspViolations = () => pageLog.filter((l) => /Content Security Policy/i.test(l));

const steps = [];
export const step = (name, fn) => steps.push({ name, fn });

export async function run() {
	console.log(`PLAN ${steps.length}`);
	let failed = false;
	for (const { name, fn } of steps) {
		try {
			await fn();
			console.log(`PASS ${name}`);
		} catch (e) {
			failed = true;
			console.log(`FAIL ${name}`);
			diag(e.stack || e.message);
			const shot = path.join(SHOTS, 'failure.png');
			try {
				await page.screenshot({ path: shot, fullPage: true });
				diag(`screenshot: ${shot}`);
			} catch (se) {
				diag(`screenshot failed: ${se.message}`);
			}
			if (pageLog.length)
				diag('page log:\n' + pageLog.join('\n'));
			break;
		}
	}
	await browser.close();
	process.exit(failed ? 1 : 0);
}
