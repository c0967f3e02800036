// panel.mjs - drives the web panel in headless Chromium (playwright-core)
// against a running paddockd and checks every effect through the FUSE
// mount as well. Run by tests/integration/test-panel.sh, which sets:
//   PANEL_URL       http://127.0.0.1:PORT
//   PANEL_PASSWORD  the owner's password
//   PANEL_MOUNT     the daemon's mount point
//   PANEL_SHOTS     directory for a screenshot on failure
//   PW_DIR          where playwright-core is installed (npm --prefix)
//   CHROMIUM        the browser binary (default /usr/bin/chromium)
// Prints "PLAN N", then "PASS name" / "FAIL name" per step and "# ..." diagnostics; stops
// at the first failure (later steps build on earlier ones). Exit 0 only
// when every step passed.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const env = (k) => {
	const v = process.env[k];
	if (!v) {
		console.log(`FAIL environment: ${k} is not set`);
		process.exit(1);
	}
	return v;
};

const URL_BASE = env('PANEL_URL');
const PASSWORD = env('PANEL_PASSWORD');
const MOUNT = env('PANEL_MOUNT');
const SHOTS = env('PANEL_SHOTS');
const require = createRequire(path.join(env('PW_DIR'), 'package.json'));
const { chromium } = require('playwright-core');

const BOX = 'panel-box';
const FORK = 'panel-fork';
const diag = (s) => String(s).split('\n').forEach((l) => console.log('# ' + l));

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	headless: true,
	args: ['--no-sandbox'],
});
const page = await browser.newPage();
const pageLog = [];
page.on('console', (m) => pageLog.push(`console.${m.type()}: ${m.text()}`));
page.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));

/* Polls fn until it returns a truthy value; throws with what it last saw. */
async function until(what, fn, timeoutMs = 20000) {
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

const text = async (sel) => ((await page.locator(sel).first().textContent()) ?? '').trim();
const visible = (sel) => page.locator(sel).first().isVisible();
const row = (name) => `[data-testid="box-row"][data-box="${name}"]`;
const cellOf = (name, f) => `${row(name)} [data-testid="box-${f}"]`;
const rowCount = (name) => page.locator(row(name)).count();
const treeFile = (...p) => {
	try {
		return fs.readFileSync(path.join(MOUNT, ...p), 'utf8').trim();
	} catch (e) {
		return `(${e.code})`;
	}
};
const exists = (...p) => fs.existsSync(path.join(MOUNT, ...p));
function check(cond, message) {
	if (!cond)
		throw new Error(message);
}

/* Clicks selector; the dialog it must open is answered by answer(dialog). */
async function withDialog(selector, answer) {
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

async function login(password) {
	await page.fill('#login-password', password);
	await page.click('#login-submit');
}

const steps = [];
const step = (name, fn) => steps.push({ name, fn });

step('the page loads and shows the login form', async () => {
	const resp = await page.goto(URL_BASE + '/');
	check(resp && resp.ok(), `GET / answered ${resp && resp.status()}`);
	await until('the login form', () => visible('#login-form'));
	check(!(await visible('#main-view')), 'the box list shows before login');
});

step('logging in shows the box list and keeps the token', async () => {
	await login(PASSWORD);
	await until('the box list', () => visible('#main-view'));
	const token = await page.evaluate(() => localStorage.getItem('paddock.token'));
	check(/^pd_[a-z0-9]{12}_/.test(token || ''), `stored token ${token}`);
	await until('the empty list note', () => visible('#no-boxes'));
});

step('the type select lists the configured types', async () => {
	await until('type options', async () =>
		(await page.locator('#create-type option').allTextContents()).includes('tiny'));
});

step('creating a box starts it with the chosen type and TTL', async () => {
	await page.fill('#create-name', BOX);
	await page.selectOption('#create-type', 'tiny');
	await page.fill('#create-ttl', '600');
	await page.click('#create-submit');
	await until('the box to run', async () => (await text(cellOf(BOX, 'state'))) === 'running', 30000);
	check(treeFile('boxes', BOX, 'state') === 'running', `state file: ${treeFile('boxes', BOX, 'state')}`);
	check(treeFile('boxes', BOX, 'type') === 'tiny', `type file: ${treeFile('boxes', BOX, 'type')}`);
	const ttl = Number(treeFile('boxes', BOX, 'ttl'));
	check(ttl > 500 && ttl <= 600, `ttl file: ${ttl}`);
	check((await text(cellOf(BOX, 'type'))) === 'tiny', 'type cell');
	check(/m/.test(await text(cellOf(BOX, 'ttl'))), `ttl cell: ${await text(cellOf(BOX, 'ttl'))}`);
	check((await text(cellOf(BOX, 'expires'))) !== 'never', 'expires cell says never');
	check((await page.inputValue('#create-name')) === '', 'the name field was not cleared');
});

step('creating a box with a taken name shows the server error', async () => {
	await page.fill('#create-name', BOX);
	await page.click('#create-submit');
	const err = await until('an error', () => text('#panel-error'));
	check(err.startsWith(`create ${BOX}: `) && /exist/i.test(err), `error: ${err}`);
	check((await rowCount(BOX)) === 1, 'a second row appeared');
	check(treeFile('boxes', BOX, 'state') === 'running', 'the existing box changed');
	await page.fill('#create-name', '');
});

step('a bad TTL is refused before anything is created', async () => {
	const before = fs.readdirSync(path.join(MOUNT, 'boxes')).sort().join(' ');
	await page.fill('#create-name', 'panel-bad-ttl');
	await page.fill('#create-ttl', '-5');
	await page.click('#create-submit');
	await until('an error', async () => /TTL/.test(await text('#panel-error')));
	check(fs.readdirSync(path.join(MOUNT, 'boxes')).sort().join(' ') === before, 'boxes changed');
	await page.fill('#create-name', '');
	await page.fill('#create-ttl', '');
});

step('the exec console shows the output and the exit code', async () => {
	await page.click(`${row(BOX)} [data-testid="box-exec"]`);
	await until('the console', () => visible('#console'));
	check((await text('#console-box')) === BOX, 'console names another box');
	await page.fill('#exec-cmd', 'echo hello-from-panel; echo err >&2; exit 3');
	await page.click('#exec-run');
	await until('exit 3', async () => (await text('#exec-exit')) === 'exit 3', 30000);
	const out = await text('#exec-output');
	check(out.includes('hello-from-panel') && out.includes('err'), `output: ${out}`);
	const jobs = fs.readdirSync(path.join(MOUNT, 'boxes', BOX, 'exec')).filter((j) => j.startsWith('web-'));
	check(jobs.length === 1, `jobs: ${jobs}`);
	check(treeFile('boxes', BOX, 'exec', jobs[0], 'status') === 'exited 3', 'job status');
	check(treeFile('boxes', BOX, 'exec', jobs[0], 'cmd').includes('hello-from-panel'), 'job cmd');
});

step('exec output streams live and is shown as text, never as HTML', async () => {
	await page.fill('#exec-cmd', "echo '<img id=injected src=x>'; sleep 3; echo second");
	await page.click('#exec-run');
	await until('the first line while the job runs', async () =>
		(await text('#exec-output')).includes('<img id=injected src=x>'), 10000);
	check((await text('#exec-exit')) === 'running…', `exit line: ${await text('#exec-exit')}`);
	check(!(await text('#exec-output')).includes('second'), 'the second line came too early');
	await until('exit 0', async () => (await text('#exec-exit')) === 'exit 0', 20000);
	check((await text('#exec-output')).includes('second'), 'the second line is missing');
	check((await page.locator('#injected').count()) === 0, 'output became HTML');
});

step('fork makes a box or shows why it cannot', async () => {
	const asked = await withDialog(`${row(BOX)} [data-testid="box-fork"]`, (d) => d.accept(FORK));
	check(asked.startsWith('prompt: '), `dialog: ${asked}`);
	const got = await until('a fork or an error', async () =>
		(await rowCount(FORK)) ? 'row' : (await text('#panel-error')) ? 'error' : '', 30000);
	if (got === 'row') {
		check(exists('boxes', FORK), 'the fork is not in the tree');
	} else {
		const err = await text('#panel-error');
		diag(`fork refused: ${err}`);
		check(err.startsWith(`fork ${BOX}: `) && err.length > `fork ${BOX}: `.length, `error: ${err}`);
		check(!exists('boxes', FORK), 'a refused fork left a box');
	}
});

step('stop stops the box', async () => {
	await page.click(`${row(BOX)} [data-testid="box-stop"]`);
	await until('stopped', async () => (await text(cellOf(BOX, 'state'))) === 'stopped', 30000);
	check(treeFile('boxes', BOX, 'state') === 'stopped', 'state file');
	check(await page.locator(`${row(BOX)} [data-testid="box-stop"]`).isDisabled(), 'stop still enabled');
});

step('resume starts it again', async () => {
	await page.click(`${row(BOX)} [data-testid="box-resume"]`);
	await until('running', async () => (await text(cellOf(BOX, 'state'))) === 'running', 30000);
	check(treeFile('boxes', BOX, 'state') === 'running', 'state file');
	await page.click(`${row(BOX)} [data-testid="box-stop"]`);
	await until('stopped', async () => (await text(cellOf(BOX, 'state'))) === 'stopped', 30000);
});

step('delete asks first; declining keeps the box', async () => {
	const asked = await withDialog(`${row(BOX)} [data-testid="box-delete"]`, (d) => d.dismiss());
	check(asked.startsWith('confirm: ') && asked.includes(BOX), `dialog: ${asked}`);
	await page.waitForTimeout(500);
	check(exists('boxes', BOX), 'the box is gone');
	check((await rowCount(BOX)) === 1, 'the row is gone');
});

step('delete removes the box', async () => {
	for (const name of [BOX, FORK]) {
		if (!(await rowCount(name)))
			continue;
		await withDialog(`${row(name)} [data-testid="box-delete"]`, (d) => d.accept());
		await until(`${name}'s row to go`, async () => (await rowCount(name)) === 0, 30000);
		check(!exists('boxes', name), `${name} is still in the tree`);
	}
	await until('the empty list note', () => visible('#no-boxes'));
});

step('a rejected token returns to the login form', async () => {
	await page.evaluate(() => localStorage.setItem('paddock.token', 'pd_aaaaaaaaaaaa_bogus'));
	await until('the login form', () => visible('#login-form'), 10000);
	check(!(await visible('#main-view')), 'the box list still shows');
	check(/log in again/.test(await text('#login-error')), `login error: ${await text('#login-error')}`);
});

step('logout forgets the token', async () => {
	await login(PASSWORD);
	await until('the box list', () => visible('#main-view'));
	await page.click('#logout');
	await until('the login form', () => visible('#login-form'));
	const token = await page.evaluate(() => localStorage.getItem('paddock.token'));
	check(token === null, `token kept: ${token}`);
	await page.reload();
	await until('the login form after reload', () => visible('#login-form'));
	check(!(await visible('#main-view')), 'the box list shows after reload');
});

step('a wrong password shows the error and keeps the form', async () => {
	await login('not-the-password');
	const err = await until('an error', () => text('#login-error'));
	check(/wrong password/i.test(err), `error: ${err}`);
	check(!(await visible('#main-view')), 'the box list shows');
	check(await page.evaluate(() => localStorage.getItem('paddock.token')) === null, 'a token was stored');
});

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
		const shot = path.join(SHOTS, 'panel-failure.png');
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
