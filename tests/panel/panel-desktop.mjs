// panel-desktop.mjs - the live desktop in the web panel, in headless
// Chromium (playwright-core), against a running paddockd with the desktop
// image: the box's desktop/url leads to the panel's login form and then to
// the live view; noVNC (served by the daemon under /novnc/) draws the box's
// screen from the WebSocket /v1/vnc/NAME (view-only: the pointer does not
// reach the box); "Take control" reconnects with ?control=1, and text
// typed in the browser reaches a terminal in the box (a file it writes,
// the colour it paints in the next screenshot.png, seen through the box
// page's screenshot view); revoking the panel's token closes the socket.
// Run by tests/integration/test-panel-desktop.sh (environment:
// common.mjs; PANEL_BOX is the box, already created with the desktop
// image and running).
import fs from 'node:fs';
import path from 'node:path';
import {
	URL_BASE, PASSWORD, MOUNT, page, until, check, text, visible, treeFile, exists, shoot, open,
	login, step, run, diag, cspViolations,
} from './common.mjs';

const BOX = process.env.PANEL_BOX || 'desk';
const TERM_TITLE = 'panel-term';
const MARK = 'panel-typed-' + Math.random().toString(36).slice(2, 10);
const MARK_FILE = '/var/tmp/panel-typed';

const sockets = []; /* every WebSocket the page opened: { url, closed } */
page.on('websocket', (ws) => {
	const s = { url: ws.url(), closed: false };
	sockets.push(s);
	ws.on('close', () => {
		s.closed = true;
	});
});

const status = () => page.getAttribute('#dt-status', 'data-state');

/* The remote screen as the canvas shows it: size and a digest of its
 * pixels (how many differ from the first one; distinct colours seen). */
const canvasPixels = () => page.evaluate(() => {
	const c = document.querySelector('#dt-screen canvas');
	if (!c || !c.width || !c.height)
		return null;
	const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	let differ = 0;
	const colours = new Set();
	for (let i = 0; i < d.length; i += 4) {
		if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2])
			differ++;
		if (colours.size < 1000)
			colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
	}
	return { width: c.width, height: c.height, differ, colours: colours.size };
});

/* Where on the page the remote point (x, y) is (the view scales). */
const pageXY = (x, y) => page.evaluate(([rx, ry]) => {
	const c = document.querySelector('#dt-screen canvas');
	const r = c.getBoundingClientRect();
	return { x: r.left + rx * r.width / c.width, y: r.top + ry * r.height / c.height };
}, [x, y]);

const cursor = () => treeFile('boxes', BOX, 'desktop', 'cursor');

/* The box page's screenshot view: pixels of the image it shows whose
 * colour is strongly red (a terminal painted with ANSI red background). */
async function panelScreenshotRed() {
	await open(`#/box/${BOX}`, 'box-view');
	const before = await page.getAttribute('#bx-shot-img', 'src');
	await page.click('[data-testid="bx-shot"]');
	await until('a new screenshot', async () => {
		const src = await page.getAttribute('#bx-shot-img', 'src');
		return src && src !== before && (await visible('#bx-shot-img'));
	}, 20000);
	return page.evaluate(() => {
		const img = document.getElementById('bx-shot-img');
		const c = document.createElement('canvas');
		c.width = img.naturalWidth;
		c.height = img.naturalHeight;
		const g = c.getContext('2d');
		g.drawImage(img, 0, 0);
		const d = g.getImageData(0, 0, c.width, c.height).data;
		let red = 0;
		for (let i = 0; i < d.length; i += 4)
			if (d[i] > 140 && d[i + 1] < 80 && d[i + 2] < 80)
				red++;
		return { width: c.width, height: c.height, red, total: d.length / 4 };
	});
}

step('the box\'s desktop is on', async () => {
	await until('desktop/state on', () => treeFile('boxes', BOX, 'desktop', 'state') === 'on', 30000);
	/* The first frame: screenshot.png answers once the server draws. */
	await until('a screenshot', () => {
		try {
			return fs.readFileSync(path.join(MOUNT, 'boxes', BOX, 'screenshot.png')).length > 1000;
		} catch (e) {
			return false;
		}
	}, 120000);
});

step('desktop/url leads to the panel\'s login form', async () => {
	const url = treeFile('boxes', BOX, 'desktop', 'url');
	check(url === `${URL_BASE}/#/desktop/${BOX}`, `desktop/url: ${url}`);
	const resp = await page.goto(url);
	check(resp && resp.ok(), `GET answered ${resp && resp.status()}`);
	await until('the login form', () => visible('#login-form'));
	check(!(await visible('#desktop-view')), 'the desktop shows before login');
});

step('after the login the live view connects, view-only', async () => {
	await login(PASSWORD);
	await until('the desktop page', () => visible('#desktop-view'));
	check((await text('#dt-box')) === BOX, `box: ${await text('#dt-box')}`);
	await until('connected', async () => (await status()) === 'view', 60000);
	check((await text('#dt-status')) === 'connected: view only', `status: ${await text('#dt-status')}`);
	check(sockets.length >= 1, 'no WebSocket');
	const u = new URL(sockets[sockets.length - 1].url);
	check(u.pathname === `/v1/vnc/${BOX}` && u.search === '', `socket URL ${u}`);
	check((await page.getAttribute('#dt-control', 'aria-pressed')) === 'false', 'control pressed');
});

step('the noVNC canvas draws the box\'s screen', async () => {
	const geometry = treeFile('boxes', BOX, 'desktop', 'geometry');
	const px = await until('non-blank pixels', async () => {
		const p = await canvasPixels();
		return p && p.differ > p.width * p.height / 100 && p.colours > 8 ? p : null;
	}, 60000);
	diag(`canvas ${px.width}x${px.height}: ${px.differ} pixels differ from the first, ${px.colours} colours`);
	check(`${px.width}x${px.height}` === geometry, `canvas ${px.width}x${px.height}, geometry ${geometry}`);
	await shoot('10-desktop-view-only');
});

step('view-only: the pointer does not reach the box', async () => {
	const before = cursor();
	check(/^\d+ \d+$/.test(before), `cursor: ${before}`);
	const [x, y] = before.split(' ').map(Number);
	const to = { x: x > 600 ? 200 : 900, y: y > 400 ? 150 : 600 };
	const p = await pageXY(to.x, to.y);
	await page.mouse.move(p.x, p.y, { steps: 5 });
	await page.mouse.click(p.x, p.y);
	await page.waitForTimeout(1500);
	check(cursor() === before, `the cursor moved: ${before} -> ${cursor()}`);
});

step('a terminal opens on the desktop (exec with desktop 1)', async () => {
	const job = path.join(MOUNT, 'boxes', BOX, 'exec', 'panel-term');
	fs.mkdirSync(job);
	fs.writeFileSync(path.join(job, 'desktop'), '1');
	fs.writeFileSync(path.join(job, 'cmd'),
		`exec xfce4-terminal --disable-server --maximize --hide-menubar --title=${TERM_TITLE}`);
	await until('its window', () => treeFile('boxes', BOX, 'desktop', 'windows').includes(TERM_TITLE), 60000);
	check(treeFile('boxes', BOX, 'exec', 'panel-term', 'status') === 'running',
	      `status: ${treeFile('boxes', BOX, 'exec', 'panel-term', 'status')}`);
});

step('Take control reconnects with control=1 and moves the box\'s pointer', async () => {
	const n = sockets.length;
	await page.click('#dt-control');
	await until('in control', async () => (await status()) === 'control', 30000);
	check((await page.getAttribute('#dt-control', 'aria-pressed')) === 'true', 'control not pressed');
	check(sockets.length > n, 'no new WebSocket');
	const u = new URL(sockets[sockets.length - 1].url);
	check(u.pathname === `/v1/vnc/${BOX}` && u.search === '?control=1', `socket URL ${u}`);
	await until('the view-only socket closed', () => sockets.slice(0, -1).every((s) => s.closed), 10000);
	const p = await pageXY(640, 420);
	await page.mouse.move(p.x, p.y, { steps: 5 });
	await until('the box\'s cursor near 640 420', () => {
		const [x, y] = cursor().split(' ').map(Number);
		return Math.abs(x - 640) <= 4 && Math.abs(y - 420) <= 4;
	}, 10000);
});

step('text typed in the browser reaches the terminal', async () => {
	const p = await pageXY(640, 420);
	await page.mouse.click(p.x, p.y); /* focus: the terminal fills the screen */
	await page.waitForTimeout(500);
	await page.keyboard.type(`echo ${MARK} > ${MARK_FILE}`, { delay: 20 });
	await page.keyboard.press('Enter');
	await until('the file the typed command wrote', () =>
		treeFile('boxes', BOX, 'root', ...MARK_FILE.split('/').filter(Boolean)) === MARK, 20000);
	await shoot('11-desktop-control');
	/* Paint the terminal red (ANSI background 41, then clear). */
	await page.keyboard.type("printf '\\033[41m\\033[2J'", { delay: 20 });
	await page.keyboard.press('Enter');
	await page.waitForTimeout(1000);
});

step('the next screenshot shows what was typed', async () => {
	const shot = await panelScreenshotRed();
	diag(`screenshot ${shot.width}x${shot.height}: ${shot.red} red pixels of ${shot.total}`);
	check(`${shot.width}x${shot.height}` === treeFile('boxes', BOX, 'desktop', 'geometry'), 'size');
	check(shot.red > shot.total / 4, `only ${shot.red} red pixels of ${shot.total}`);
	await shoot('12-box-screenshot');
});

step('releasing control reconnects view-only', async () => {
	await open(`#/desktop/${BOX}`, 'desktop-view');
	await until('connected view-only', async () => (await status()) === 'view', 30000);
	await page.click('#dt-control');
	await until('in control', async () => (await status()) === 'control', 30000);
	await page.click('#dt-control');
	await until('view-only again', async () => (await status()) === 'view', 30000);
	check(new URL(sockets[sockets.length - 1].url).search === '', 'the last socket asks for control');
});

step('noVNC broke no rule of the Content-Security-Policy', async () => {
	const v = cspViolations();
	check(v.length === 0, v.join('\n'));
});

step('revoking the panel\'s token closes the live view', async () => {
	const id = await page.evaluate(() => localStorage.getItem('paddock.token_id'));
	check(exists('tokens', id), `token ${id} not in the tree`);
	const live = sockets[sockets.length - 1];
	fs.rmdirSync(path.join(MOUNT, 'tokens', id));
	await until('the socket closed', () => live.closed, 10000);
	await until('the login form', () => visible('#login-form'), 15000);
});

await run();
