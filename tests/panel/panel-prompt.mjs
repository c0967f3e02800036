// panel-prompt.mjs - the panel's prompts page (#/prompts/NAME) in headless
// Chromium (playwright-core), against a running paddockd whose agents talk
// to the fake model (tests/integration/fake-model.py): log in on the page,
// pick the agent claude from the list the page read from /v1/tree/agents/,
// send a prompt asking for hello.txt, see its events stream (the tool call
// naming hello.txt shown before the agent ended, the final answer, exit 0),
// the prompt in the past prompts with "exited 0", hello.txt in the box's
// root/, the past prompts newest first (the tree's order, whatever their
// names). Then a prompt the model never answers (PADDOCK-HANG) shows its
// start while it runs, and the Stop button kills it.
// Run by tests/integration/test-panel-prompt.sh (environment: common.mjs;
// PANEL_BOX is the box, running, of the agents image, with the agent's key
// and a policy reaching the model; PANEL_HOME the agent's working directory
// under root/; PD_MODEL_LOG the fake model's request log).
import fs from 'node:fs';
import path from 'node:path';
import {
	URL_BASE, PASSWORD, MOUNT, page, until, check, text, visible, treeFile, exists, shoot,
	login, step, run, diag, cspViolations,
} from './common.mjs';

const BOX = process.env.PANEL_BOX || 'a';
const HOME = (process.env.PANEL_HOME || 'config').split('/').filter(Boolean);
const MODEL_LOG = process.env.PD_MODEL_LOG || '';
const CONTENT = 'made in the panel ' + Math.random().toString(36).slice(2, 10);

const prompts = () => new Set(fs.readdirSync(path.join(MOUNT, 'boxes', BOX, 'prompts')));
const prompt = (p, f) => treeFile('boxes', BOX, 'prompts', p, f);
/* The prompt the page made since `before` (a Set of names). */
const madeSince = (before) => until('a new prompt in the tree', () => {
	const fresh = [...prompts()].filter((p) => !before.has(p) && p !== 'last');
	return fresh.length === 1 ? fresh[0] : null;
});
/* What the page shows of the events: [{kind, text, at}], at being when the
 * line was put on the page (Date.now(), recorded by an observer). */
const shown = () => page.evaluate(() => window.__shown || []);
const statusText = () => text('#pr-status');
/* The past prompts: { name: status text }. */
const listed = () => page.evaluate(() => {
	const out = {};
	for (const li of document.querySelectorAll('#pr-list li')) {
		const b = li.querySelector('button');
		const s = li.querySelector('span');
		if (b)
			out[b.textContent.trim()] = s ? s.textContent.trim() : '';
	}
	return out;
});
const modelLines = () => (MODEL_LOG ? fs.readFileSync(MODEL_LOG, 'utf8').split('\n').filter(Boolean).length : 0);

let first = null; /* the hello.txt prompt */
/* A prompt made (not started) in the tree before the page's: its name
 * sorts after theirs ("web-..."), its place in the list is the oldest. */
const OLD = 'zz-made-first';
const order = async () => Object.keys(await listed()).join(' ');

step('the prompts page asks for the login first', async () => {
	fs.mkdirSync(path.join(MOUNT, 'boxes', BOX, 'prompts', OLD));
	check(prompt(OLD, 'status') === 'created', `status of ${OLD}: ${prompt(OLD, 'status')}`);
	const resp = await page.goto(`${URL_BASE}/#/prompts/${BOX}`);
	check(resp && resp.ok(), `GET answered ${resp && resp.status()}`);
	await until('the login form', () => visible('#login-form'));
	check(!(await visible('#prompt-view')), 'the prompts page shows before login');
});

step('after the login the box\'s prompts page shows, its one prompt not started', async () => {
	await login(PASSWORD);
	await until('the prompts page', () => visible('#prompt-view'));
	check((await text('#pr-box')) === BOX, `box: ${await text('#pr-box')}`);
	await until(`${OLD} listed as created`, async () => (await listed())[OLD] === 'created');
	check((await order()) === OLD, `listed: ${await order()}`);
	check(!(await visible('#pr-none')), 'the empty note shows');
	/* Every event line the page adds, with the time it was added. */
	await page.evaluate(() => {
		window.__shown = [];
		new MutationObserver((muts) => {
			for (const m of muts)
				for (const n of m.addedNodes)
					if (n.nodeType === 1 && n.dataset && n.dataset.kind)
						window.__shown.push({ kind: n.dataset.kind, text: n.textContent, at: Date.now() });
		}).observe(document.getElementById('pr-events'), { childList: true });
	});
});

step('the agent list is the tree\'s agents/, claude among them', async () => {
	const tree = fs.readdirSync(path.join(MOUNT, 'agents')).sort();
	diag(`agents/: ${tree.join(' ')}`);
	check(tree.includes('claude'), `agents/: ${tree.join(' ')}`);
	const options = await until('the agent options', async () => {
		const o = await page.locator('#pr-agent option').evaluateAll(
			(els) => els.map((e) => e.value));
		return o.length > 1 ? o : null;
	});
	check(options[0] === '', `the first option is not the default: ${options}`);
	check(options.slice(1).sort().join(' ') === tree.join(' '),
	      `options ${options.slice(1).join(' ')}, agents/ ${tree.join(' ')}`);
	await page.selectOption('#pr-agent', 'claude');
});

step('a prompt to claude: its events stream, the tool call naming hello.txt, the answer', async () => {
	const before = prompts();
	check((await page.locator('#pr-stop').isDisabled()), 'Stop enabled with no prompt running');
	await page.fill('#pr-text', `Write hello.txt with content: ${CONTENT}`);
	await page.click('#pr-send');
	first = await madeSince(before);
	diag(`the page made prompt ${first}`);
	check(prompt(first, 'agent') === 'claude', `agent: ${prompt(first, 'agent')}`);
	await until('the tool call line naming hello.txt', async () =>
		(await shown()).some((l) => l.kind === 'tool' && l.text.includes('hello.txt')), 180000);
	await until('the final answer', async () =>
		(await shown()).some((l) => l.kind === 'message' && l.text === 'Wrote hello.txt'), 60000);
	await until('exit 0 on the page', async () => (await statusText()) === `${first}: exit 0`, 60000);
	check((await page.inputValue('#pr-text')) === '', 'the text was not cleared');
});

step('the page showed every event in order, the tool call before the agent ended', async () => {
	const lines = await shown();
	diag(lines.map((l) => `${l.kind}: ${l.text}`).join('\n'));
	const kinds = lines.map((l) => l.kind);
	check(kinds[0] === 'start' && lines[0].text.startsWith('claude'), `first line: ${kinds[0]} ${lines[0] && lines[0].text}`);
	const tool = kinds.indexOf('tool');
	const result = kinds.indexOf('result');
	const message = kinds.lastIndexOf('message');
	check(tool > 0 && result > tool && message > result, `order: ${kinds.join(' ')}`);
	check(lines[tool].text.startsWith('→ ') && lines[tool].text.includes('hello.txt'), `tool line: ${lines[tool].text}`);
	check(kinds.includes('usage'), `no usage line: ${kinds.join(' ')}`);
	check(kinds[kinds.length - 1] === 'end' && lines[lines.length - 1].text === 'exit 0',
	      `last line: ${kinds[kinds.length - 1]} ${lines[lines.length - 1].text}`);
	check(!kinds.includes('error') && !kinds.includes('tool-error'), `an error: ${kinds.join(' ')}`);
	/* Streamed, not read after the end: the tool call was on the page
	 * before the end event was written. */
	const ev = prompt(first, 'events').split('\n').map((l) => JSON.parse(l));
	const end = Date.parse(ev[ev.length - 1].time);
	check(ev[ev.length - 1].type === 'end', 'events: no end last');
	diag(`tool call shown ${end - lines[tool].at} ms before the end event`);
	check(lines[tool].at < end, `the tool call was shown ${lines[tool].at - end} ms after the end`);
});

step('the tree agrees: exited 0, the result, hello.txt in the box\'s root/', async () => {
	check(prompt(first, 'status') === 'exited 0', `status: ${prompt(first, 'status')}`);
	check(prompt(first, 'exit') === '0', `exit: ${prompt(first, 'exit')}`);
	check(prompt(first, 'result') === 'Wrote hello.txt', `result: ${prompt(first, 'result')}`);
	const hello = treeFile('boxes', BOX, 'root', ...HOME, 'hello.txt');
	check(hello === CONTENT, `root/${HOME.join('/')}/hello.txt: ${hello}`);
});

step('the prompt is listed, newest first, with its status exited 0; Stop is disabled', async () => {
	await until('the prompt listed as exited 0', async () => (await listed())[first] === 'exited 0');
	check((await order()) === `${first} ${OLD}`, `listed: ${await order()}`);
	check(await page.locator('#pr-stop').isDisabled(), 'Stop enabled after the end');
	await shoot('20-prompt-done');
});

step('a listed prompt opens again with its events', async () => {
	await page.evaluate(() => {
		window.__shown = [];
	});
	await page.locator('#pr-list button', { hasText: first }).click();
	await until('its events again', async () => (await statusText()) === `${first}: exit 0`, 20000);
	const kinds = (await shown()).map((l) => l.kind);
	check(kinds.includes('tool') && kinds.includes('message') && kinds[kinds.length - 1] === 'end',
	      `lines: ${kinds.join(' ')}`);
});

step('a prompt the model holds: its start shows while it runs, Stop kills it', async () => {
	const before = prompts();
	const since = modelLines();
	await page.evaluate(() => {
		window.__shown = [];
	});
	await page.selectOption('#pr-agent', 'claude');
	await page.fill('#pr-text', 'PADDOCK-HANG write hello.txt with content: never');
	await page.click('#pr-send');
	const p = await madeSince(before);
	diag(`the page made prompt ${p}`);
	if (MODEL_LOG)
		await until('its request at the model', () => modelLines() > since, 120000);
	await until('its start line', async () => (await shown()).some((l) => l.kind === 'start'), 60000);
	check(prompt(p, 'status') === 'running', `status: ${prompt(p, 'status')}`);
	check((await statusText()) === `${p}: running…`, `page status: ${await statusText()}`);
	check(!(await page.locator('#pr-stop').isDisabled()), 'Stop disabled while it runs');
	await shoot('21-prompt-running');
	await page.click('#pr-stop');
	await until('the prompt killed', () => prompt(p, 'status').startsWith('killed'), 30000);
	const code = prompt(p, 'exit');
	diag(`status ${prompt(p, 'status')}, exit ${code}`);
	check(/^\d+$/.test(code) && code !== '0', `exit: ${code}`);
	await until('the page shows its exit', async () => (await statusText()) === `${p}: exit ${code}`, 20000);
	check(await page.locator('#pr-stop').isDisabled(), 'Stop still enabled');
	await until('the prompt listed as killed', async () => /^killed/.test((await listed())[p] || ''));
	check((await order()) === `${p} ${first} ${OLD}`, `listed: ${await order()}`);
	check((await text('#pr-error')) === '', `error: ${await text('#pr-error')}`);
	check(treeFile('boxes', BOX, 'root', ...HOME, 'hello.txt') === CONTENT, 'hello.txt changed');
	await shoot('22-prompt-stopped');
});

step('the page broke no rule of the Content-Security-Policy', async () => {
	const v = cspViolations();
	check(v.length === 0, v.join('\n'));
	check(exists('boxes', BOX, 'prompts', first), 'the first prompt is gone');
	check(prompt(OLD, 'status') === 'created', `${OLD} changed: ${prompt(OLD, 'status')}`);
});

await run();
