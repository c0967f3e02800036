// panel.mjs - drives the web panel in headless Chromium (playwright-core)
// against a running paddockd and checks every effect through the FUSE
// mount as well: login, the box list, the exec console, a box's page
// (type, TTL, policy editor, snapshots, volumes), the volumes and tokens
// pages, the desktop page of a box without a desktop. Run by
// tests/integration/test-panel.sh (environment: common.mjs).
import fs from 'node:fs';
import path from 'node:path';
import {
	URL_BASE, PASSWORD, MOUNT, SHOTS, page, until, check, text, visible, treeFile, exists,
	shoot, open, withDialog, login, step, run, diag, cspViolations,
} from './common.mjs';

const BOX = 'panel-box';
const FORK = 'panel-fork';
/* Longer than the panel's refresh period (REFRESH_MS in app.js). */
const REFRESH_WAIT_MS = 3500;
/* An object's error file: "TIME FILE: reason (ERRNO)", the line the failed
 * request's answer carried. */
const lastError = (...p) => treeFile(...p);
/* The box page's error line, once it says something. */
const boxErr = () => until('an error on the box page', () => text('#bx-error'));

const row = (name) => `[data-testid="box-row"][data-box="${name}"]`;
const cellOf = (name, f) => `${row(name)} [data-testid="box-${f}"]`;
const rowCount = (name) => page.locator(row(name)).count();

step('the page loads and shows the login form', async () => {
	const resp = await page.goto(URL_BASE + '/');
	check(resp && resp.ok(), `GET / answered ${resp && resp.status()}`);
	await until('the login form', () => visible('#login-form'));
	check(!(await visible('#main-view')), 'the box list shows before login');
	await shoot('01-login');
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

step('the box page shows the box', async () => {
	await page.click(`${row(BOX)} [data-testid="box-open"]`);
	await until('the box page', () => visible('#box-view'));
	check(await page.evaluate(() => location.hash) === `#/box/${BOX}`, 'the hash');
	check((await text('#bx-name')) === BOX, `name: ${await text('#bx-name')}`);
	await until('its state', async () => (await text('#bx-state')) === 'running');
	await until('its type', async () => (await page.inputValue('#bx-type')) === 'tiny');
	await until('its TTL', async () => Number(await page.inputValue('#bx-ttl')) > 0);
	check((await text('#bx-policy-current')) === 'allow-all', `policy: ${await text('#bx-policy-current')}`);
	check(!(await visible('#boxes-view')), 'the box list still shows');
	await shoot('03-box');
});

step('the type and the TTL are set from the box page', async () => {
	await page.selectOption('#bx-type', 'small');
	await page.click('[data-testid="bx-type-set"]');
	await until('type small in the tree', () => treeFile('boxes', BOX, 'type') === 'small');
	await until('the note', async () => (await text('#bx-note')) === 'type: done');
	/* A choice outlives the page's refreshes until it is written. */
	await page.selectOption('#bx-type', 'tiny');
	await page.locator('#bx-ttl').focus();
	await page.waitForTimeout(REFRESH_WAIT_MS);
	check((await page.inputValue('#bx-type')) === 'tiny',
	      `a refresh replaced the chosen type: ${await page.inputValue('#bx-type')}`);
	await page.click('[data-testid="bx-type-set"]');
	await until('type tiny in the tree', () => treeFile('boxes', BOX, 'type') === 'tiny');
	await page.fill('#bx-ttl', '900');
	await page.click('[data-testid="bx-ttl-set"]');
	await until('ttl 900 in the tree', () => {
		const t = Number(treeFile('boxes', BOX, 'ttl'));
		return t > 800 && t <= 900;
	});
	await page.fill('#bx-ttl', 'none');
	await page.click('[data-testid="bx-ttl-set"]');
	await until('ttl none in the tree', () => treeFile('boxes', BOX, 'ttl') === 'none');
	await until('expires never on the page', async () => (await text('#bx-expires')) === 'never');
	check(treeFile('boxes', BOX, 'expires') === 'never', 'expires file');
});

step('a bad TTL or type shows the server\'s reason and changes nothing', async () => {
	await page.fill('#bx-ttl', 'soon');
	await page.click('[data-testid="bx-ttl-set"]');
	const err = await boxErr();
	const recorded = lastError('boxes', BOX, 'error');
	check(err.startsWith('ttl: ') && recorded === err.slice('ttl: '.length) && /"soon"/.test(err),
	      `page: ${err}; error file: ${recorded}`);
	check(treeFile('boxes', BOX, 'ttl') === 'none', `ttl file: ${treeFile('boxes', BOX, 'ttl')}`);
	/* A type the select does not offer: the server judges it. */
	await page.evaluate(() => {
		const o = document.createElement('option');
		o.value = o.textContent = 'no-such-type';
		document.getElementById('bx-type').appendChild(o);
		document.getElementById('bx-type').value = 'no-such-type';
		document.getElementById('bx-type-form').requestSubmit();
	});
	await until('the type error', async () => (await text('#bx-error')).startsWith('type: '));
	const terr = await text('#bx-error');
	check(lastError('boxes', BOX, 'error') === terr.slice('type: '.length) && terr.includes('no-such-type'),
	      `page: ${terr}; error file: ${treeFile('boxes', BOX, 'error')}`);
	check(treeFile('boxes', BOX, 'type') === 'tiny', 'type changed');
});

step('the policy editor writes an allowlist, deny-all and allow-all', async () => {
	await page.selectOption('#bx-policy-mode', 'allowlist');
	check(!(await page.locator('#bx-policy-entries').isDisabled()), 'entries disabled for allowlist');
	await page.fill('#bx-policy-entries', 'example.com\n  *.github.com \n\n10.20.0.0/16');
	await page.click('[data-testid="bx-policy-save"]');
	await until('the allowlist in the tree', () =>
		treeFile('boxes', BOX, 'policy') === 'allowlist\nexample.com\n*.github.com\n10.20.0.0/16');
	await until('the policy in force', async () =>
		(await text('#bx-policy-current')) === 'allowlist: example.com, *.github.com, 10.20.0.0/16');
	await page.selectOption('#bx-policy-mode', 'deny-all');
	check(await page.locator('#bx-policy-entries').isDisabled(), 'entries enabled for deny-all');
	await page.click('[data-testid="bx-policy-save"]');
	await until('deny-all in the tree', () => treeFile('boxes', BOX, 'policy') === 'deny-all');
});

step('a bad policy entry shows the server\'s reason and keeps the policy', async () => {
	await page.selectOption('#bx-policy-mode', 'allowlist');
	await page.fill('#bx-policy-entries', 'example.com\nbad..entry!');
	await page.click('[data-testid="bx-policy-save"]');
	const err = await boxErr();
	const recorded = lastError('boxes', BOX, 'error');
	check(err.startsWith('policy: ') && err.includes('bad..entry!') &&
	      recorded === err.slice('policy: '.length), `page: ${err}; error file: ${recorded}`);
	check(treeFile('boxes', BOX, 'policy') === 'deny-all', `policy: ${treeFile('boxes', BOX, 'policy')}`);
	await shoot('04-box-policy-error');
	await page.selectOption('#bx-policy-mode', 'allow-all');
	await page.click('[data-testid="bx-policy-save"]');
	await until('allow-all in the tree', () => treeFile('boxes', BOX, 'policy') === 'allow-all');
	check((await text('#bx-error')) === '', 'the error stays after a success');
});

/* Snapshot rows of the box page. */
const snapRow = (id) => `[data-testid="snap-row"][data-snap="${id}"]`;
const snapIds = () => fs.readdirSync(path.join(MOUNT, 'boxes', BOX, 'snapshots')).filter((s) => s !== 'last');
let snapA = null;

step('a snapshot taken on the box page is listed with its label', async () => {
	fs.writeFileSync(path.join(MOUNT, 'boxes', BOX, 'root', 'panel-mark'), 'before\n');
	const before = new Set(snapIds());
	await page.fill('#bx-snap-label', 'panel-a');
	await page.click('[data-testid="bx-snap-take"]');
	snapA = await until('a new snapshot in the tree', () => snapIds().find((s) => !before.has(s)));
	check(treeFile('snapshots', snapA, 'label') === 'panel-a', `label: ${treeFile('snapshots', snapA, 'label')}`);
	await until('its row', () => page.locator(snapRow(snapA)).count());
	check((await page.inputValue(`${snapRow(snapA)} [data-testid="snap-label-input"]`)) === 'panel-a', 'label shown');
	check((await text(`${snapRow(snapA)} [data-testid="snap-created"]`)) === treeFile('snapshots', snapA, 'created'),
	      'created shown');
	check(/B$/.test(await text(`${snapRow(snapA)} [data-testid="snap-size"]`)), 'size shown');
	check((await text('#bx-note')) === `snapshot ${snapA} taken`, `note: ${await text('#bx-note')}`);
});

step('a snapshot\'s label is edited in place', async () => {
	await page.fill(`${snapRow(snapA)} [data-testid="snap-label-input"]`, 'panel-a renamed');
	await page.click(`${snapRow(snapA)} [data-testid="snap-label-save"]`);
	await until('the new label in the tree', () => treeFile('snapshots', snapA, 'label') === 'panel-a renamed');
});

step('restore puts the snapshot\'s files back into the running box', async () => {
	fs.writeFileSync(path.join(MOUNT, 'boxes', BOX, 'root', 'panel-mark'), 'after\n');
	const asked = await withDialog(`${snapRow(snapA)} [data-testid="snap-restore"]`, (d) => d.accept());
	check(asked.startsWith('confirm: ') && asked.includes(snapA), `dialog: ${asked}`);
	await until('the restore note', async () => (await text('#bx-note')).startsWith(`restored snapshot ${snapA}`), 60000);
	check(/restarted/.test(await text('#bx-note')), `note: ${await text('#bx-note')}`);
	check(treeFile('boxes', BOX, 'root', 'panel-mark') === 'before', `file: ${treeFile('boxes', BOX, 'root', 'panel-mark')}`);
	await until('running again', () => treeFile('boxes', BOX, 'state') === 'running', 30000);
	await shoot('05-box-snapshots');
});

step('deleting a snapshot the box stands on shows why not; another is deleted', async () => {
	await withDialog(`${snapRow(snapA)} [data-testid="snap-delete"]`, (d) => d.accept());
	const err = await boxErr();
	check(err.startsWith(`delete ${snapA}: `) && err.length > 30, `error: ${err}`);
	check(exists('snapshots', snapA), 'the snapshot went');
	const before = new Set(snapIds());
	await page.fill('#bx-snap-label', 'panel-b');
	await page.click('[data-testid="bx-snap-take"]');
	const b = await until('snapshot b', () => snapIds().find((s) => !before.has(s)));
	/* The box stands on b now; restoring a frees b (a new snapshot of
	 * the files replaced is taken). */
	await until('its row', () => page.locator(snapRow(b)).count());
	await withDialog(`${snapRow(snapA)} [data-testid="snap-restore"]`, (d) => d.accept());
	await until('restored', async () => (await text('#bx-note')).startsWith(`restored snapshot ${snapA}`), 60000);
	await withDialog(`${snapRow(b)} [data-testid="snap-delete"]`, (d) => d.accept());
	await until('b gone from the tree', () => !exists('snapshots', b), 30000);
	await until('b gone from the page', async () => (await page.locator(snapRow(b)).count()) === 0);
});

const VOL = 'panel-vol';
const volRow = `[data-testid="vol-row"][data-volume="${VOL}"]`;

step('a volume is created on the volumes page', async () => {
	await open('#/volumes', 'volumes-view');
	await page.fill('#vol-name', VOL);
	await page.click('[data-testid="vol-create"]');
	await until('the volume in the tree', () => exists('volumes', VOL));
	await until('its row', () => page.locator(volRow).count());
	fs.writeFileSync(path.join(MOUNT, 'volumes', VOL, 'data', 'hello.txt'), 'hello from the panel test\n');
	await page.fill('#vol-name', 'Bad Name');
	await page.click('[data-testid="vol-create"]');
	const err = await until('an error', () => text('#panel-error'));
	check(err.startsWith('create volume Bad Name: ') && err.length > 'create volume Bad Name: '.length, `error: ${err}`);
	await page.fill('#vol-name', '');
});

step('a volume exports as a download (zstd tar)', async () => {
	const [dl] = await Promise.all([
		page.waitForEvent('download', { timeout: 30000 }),
		page.click(`${volRow} [data-testid="vol-export"]`),
	]);
	check(dl.suggestedFilename() === `${VOL}.tar.zst`, `file name ${dl.suggestedFilename()}`);
	const file = path.join(SHOTS, `${VOL}.tar.zst`);
	await dl.saveAs(file);
	const head = fs.readFileSync(file).subarray(0, 4).toString('hex');
	check(head === '28b52ffd', `not zstd: ${head}`);
	const { execFileSync } = await import('node:child_process');
	const names = execFileSync('tar', ['--zstd', '-tf', file], { encoding: 'utf8' });
	check(/(^|\/)hello\.txt$/m.test(names), `entries: ${names}`);
	fs.unlinkSync(file);
	await until('the note', async () => /exported/.test(await text('#vol-note')));
	await shoot('06-volumes');
});

step('the box page attaches and detaches the volume', async () => {
	await open(`#/box/${BOX}`, 'box-view');
	await until('the volume offered', async () =>
		(await page.locator('#bx-vol-select option').allTextContents()).includes(VOL));
	await page.selectOption('#bx-vol-select', VOL);
	await page.click('[data-testid="bx-vol-attach"]');
	await until('attached in the tree', () => treeFile('boxes', BOX, 'volumes') === VOL, 30000);
	await until('listed', () => page.locator(`[data-testid="bx-vol"][data-volume="${VOL}"]`).count());
	check(treeFile('volumes', VOL, 'boxes') === BOX, `volume's boxes: ${treeFile('volumes', VOL, 'boxes')}`);
	await shoot('07-box-volume');
	/* Deleting it while attached: the server's reason, nothing changes. */
	await open('#/volumes', 'volumes-view');
	await until('attached shown', async () => (await text(`${volRow} [data-testid="vol-boxes"]`)) === BOX);
	await withDialog(`${volRow} [data-testid="vol-delete"]`, (d) => d.accept());
	const err = await until('an error', () => text('#panel-error'));
	check(err.startsWith(`delete ${VOL}: `) && err.includes(BOX), `error: ${err}`);
	check(exists('volumes', VOL), 'the volume went');
	await open(`#/box/${BOX}`, 'box-view');
	await until('listed', () => page.locator(`[data-testid="bx-vol"][data-volume="${VOL}"]`).count());
	await page.click(`[data-testid="bx-vol"][data-volume="${VOL}"] [data-testid="bx-vol-detach"]`);
	await until('detached in the tree', () => treeFile('boxes', BOX, 'volumes') === '', 30000);
	await until('the note', async () => (await text('#bx-no-vols')) !== '' && visible('#bx-no-vols'));
});

step('the volume is deleted once detached', async () => {
	await open('#/volumes', 'volumes-view');
	await withDialog(`${volRow} [data-testid="vol-delete"]`, (d) => d.accept());
	await until('the volume gone', () => !exists('volumes', VOL), 30000);
	await until('its row gone', async () => (await page.locator(volRow).count()) === 0);
});

step('the tokens page lists the tokens and revokes another', async () => {
	const resp = await fetch(URL_BASE + '/v1/login', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ password: PASSWORD, label: 'panel-test-other' }),
	});
	check(resp.ok, `login: ${resp.status}`);
	const other = await resp.json();
	const mine = await page.evaluate(() => localStorage.getItem('paddock.token_id'));
	await open('#/tokens', 'tokens-view');
	const tokRow = (id) => `[data-testid="token-row"][data-token="${id}"]`;
	await until('both tokens', async () =>
		(await page.locator(tokRow(other.id)).count()) && (await page.locator(tokRow(mine)).count()));
	check((await text(`${tokRow(other.id)} [data-testid="token-label"]`)) === 'panel-test-other', 'other label');
	check((await text(`${tokRow(mine)} [data-testid="token-label"]`)) === 'web panel (this panel)', 'own label');
	check((await text(`${tokRow(mine)} [data-testid="token-last-used"]`)) !== 'never', 'own last used');
	await shoot('08-tokens');
	const asked = await withDialog(`${tokRow(other.id)} [data-testid="token-revoke"]`, (d) => d.accept());
	check(asked.includes(other.id), `dialog: ${asked}`);
	await until('revoked in the tree', () => !exists('tokens', other.id));
	await until('its row gone', async () => (await page.locator(tokRow(other.id)).count()) === 0);
	const after = await fetch(URL_BASE + '/v1/tree/boxes/', { headers: { Authorization: 'Bearer ' + other.token } });
	check(after.status === 401, `the revoked token got ${after.status}`);
	check(await visible('#main-view'), 'the panel logged out');
});

step('the desktop page of a box without a desktop says why', async () => {
	await open(`#/box/${BOX}`, 'box-view');
	const href = await page.getAttribute('#bx-desktop-live', 'href');
	check(href === `#/desktop/${BOX}`, `live view link ${href}`);
	await page.click('#bx-desktop-live');
	await until('the desktop page', () => visible('#desktop-view'));
	await until('a closed connection', async () =>
		(await page.getAttribute('#dt-status', 'data-state')) === 'closed', 20000);
	const err = await until('the reason', () => text('#dt-error'));
	check(!/noVNC could not be loaded/.test(err), `noVNC: ${err}`);
	check(await page.evaluate(() => !!document.querySelector('#dt-screen')), 'no screen element');
	await shoot('09-desktop-off');
	await open('#/', 'boxes-view');
	await shoot('02-boxes');
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

step('nothing the panel did broke its Content-Security-Policy', async () => {
	const v = cspViolations();
	check(v.length === 0, v.join('\n'));
});

await run();
