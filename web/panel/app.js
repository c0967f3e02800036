/* Paddock web panel: plain DOM, no framework, no build step.
 *
 * Talks to the daemon's HTTP mirror of the tree (web/README.md): POST
 * /v1/login for a token (kept in localStorage), then /v1/tree/... with
 * "Authorization: Bearer TOKEN". Any 401 forgets the token and shows the
 * login form again. Server data reaches the page only through textContent.
 *
 * Pages (the location's hash): #/ the boxes, #/box/NAME one box (settings,
 * policy, desktop, snapshots, volumes), #/prompts/NAME a coding agent's
 * prompts in the box (events rendered by prompt-render.js), #/volumes,
 * #/tokens, and
 * #/desktop/NAME the box's desktop live (noVNC's RFB, loaded from the
 * daemon's /novnc/, over the WebSocket /v1/vnc/NAME). */
'use strict';

(function () {
	const TREE = '/v1/tree/';
	const TOKEN_KEY = 'paddock.token';
	const TOKEN_ID_KEY = 'paddock.token_id';
	const REFRESH_MS = 3000;
	const OUTPUT_MAX = 1 << 20; /* characters of exec output kept on screen */

	const $ = (id) => document.getElementById(id);

	class ApiError extends Error {
		constructor(status, message) {
			super(message);
			this.status = status;
		}
	}

	let refreshTimer = null;
	let refreshing = false;
	let refreshAgain = false;
	let consoleBox = null;
	let execAbort = null;
	const rows = new Map(); /* box name -> its <tr> */

	function token() {
		return localStorage.getItem(TOKEN_KEY);
	}

	/* "boxes", "NAME", "state" -> /v1/tree/boxes/NAME/state */
	function tree(...segments) {
		return TREE + segments.map(encodeURIComponent).join('/');
	}

	function randomName(prefix, n) {
		const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
		const bytes = new Uint8Array(n);
		crypto.getRandomValues(bytes);
		let s = prefix;
		for (const b of bytes)
			s += alphabet[b % alphabet.length];
		return s;
	}

	/* The reason a failed response gives: the JSON body's "error", else its
	 * text, else the status line. */
	async function errorText(resp) {
		let text = '';
		try {
			text = await resp.text();
		} catch (e) {
			/* the body could not be read: fall back to the status */
		}
		try {
			const j = JSON.parse(text);
			if (j && typeof j.error === 'string' && j.error !== '')
				return j.error;
		} catch (e) {
			/* not JSON */
		}
		text = text.trim();
		return text !== '' ? text : `${resp.status} ${resp.statusText}`.trim();
	}

	/* One authenticated request. Resolves to the Response when it is 2xx;
	 * rejects with an ApiError carrying the server's reason otherwise. A 401
	 * ends the session. */
	async function request(method, url, body, signal) {
		const headers = {};
		const t = token();
		if (t)
			headers.Authorization = 'Bearer ' + t;
		if (body !== undefined)
			headers['Content-Type'] = 'text/plain; charset=utf-8';
		const resp = await fetch(url, { method, headers, body, signal, cache: 'no-store' });
		if (resp.status === 401) {
			const reason = await errorText(resp);
			showLogin('Please log in again (' + reason + ').');
			throw new ApiError(401, reason);
		}
		if (!resp.ok)
			throw new ApiError(resp.status, await errorText(resp));
		return resp;
	}

	async function getText(url) {
		return (await (await request('GET', url)).text()).trim();
	}

	function setText(el, text) {
		el.textContent = text;
	}

	function panelError(text) {
		setText($('panel-error'), text || '');
	}

	/* ---- login / logout ---- */

	function showLogin(message) {
		localStorage.removeItem(TOKEN_KEY);
		localStorage.removeItem(TOKEN_ID_KEY);
		stopRefresh();
		closeConsole();
		leaveView();
		for (const tr of rows.values())
			tr.remove();
		rows.clear();
		$('main-view').hidden = true;
		$('logout').hidden = true;
		$('nav').hidden = true;
		$('login-view').hidden = false;
		setText($('login-error'), message || '');
		$('login-password').value = '';
		$('login-password').focus();
	}

	/* The page the hash names opens once logged in (desktop/url leads to
	 * #/desktop/NAME: after the login form, that page). */
	function showMain() {
		$('login-view').hidden = true;
		$('main-view').hidden = false;
		$('logout').hidden = false;
		$('nav').hidden = false;
		panelError('');
		loadTypes();
		route();
		startRefresh();
	}

	async function login(ev) {
		ev.preventDefault();
		const button = $('login-submit');
		setText($('login-error'), '');
		button.disabled = true;
		try {
			const resp = await fetch('/v1/login', {
				method: 'POST',
				headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
				body: JSON.stringify({ password: $('login-password').value, label: 'web panel' }),
				cache: 'no-store',
			});
			if (!resp.ok) {
				setText($('login-error'), await errorText(resp));
				return;
			}
			const j = await resp.json();
			if (!j || typeof j.token !== 'string')
				throw new Error('the server sent no token');
			localStorage.setItem(TOKEN_KEY, j.token);
			if (typeof j.id === 'string')
				localStorage.setItem(TOKEN_ID_KEY, j.id);
			$('login-password').value = '';
			showMain();
		} catch (e) {
			setText($('login-error'), 'Login failed: ' + e.message);
		} finally {
			button.disabled = false;
		}
	}

	/* Revokes the token on the server (best effort), then forgets it. */
	async function logout() {
		const id = localStorage.getItem(TOKEN_ID_KEY);
		const t = token();
		if (id && t) {
			try {
				await fetch(tree('tokens', id), {
					method: 'DELETE',
					headers: { Authorization: 'Bearer ' + t },
				});
			} catch (e) {
				/* the token is forgotten locally all the same */
			}
		}
		showLogin('');
	}

	/* ---- box list ---- */

	function startRefresh() {
		stopRefresh();
		refreshTimer = setInterval(() => {
			if (!document.hidden)
				refreshView();
		}, REFRESH_MS);
	}

	function stopRefresh() {
		if (refreshTimer !== null)
			clearInterval(refreshTimer);
		refreshTimer = null;
	}

	let typeNames = [];

	async function loadTypes() {
		const select = $('create-type');
		try {
			const j = await (await request('GET', tree('types') + '/')).json();
			while (select.options.length > 1)
				select.remove(1);
			/* types/NAME are files ("cpus 1\nmemory 2G\n..."). */
			typeNames = (j.entries || []).filter((e) => e.type === 'file').map((e) => e.name);
			for (const name of typeNames)
				select.appendChild(option(name, name));
			if (currentBox)
				fillTypes(currentBoxType);
		} catch (e) {
			if (e.status !== 401)
				panelError('Box types: ' + e.message);
		}
	}

	/* A box's info, with ttl/expires read from their files when the info
	 * object does not carry them. null when the box vanished meanwhile. */
	async function loadBox(name) {
		let info;
		try {
			info = JSON.parse(await getText(tree('boxes', name, 'info')));
		} catch (e) {
			if (e.status === 404)
				return null;
			throw e;
		}
		if (info.name === undefined)
			info.name = name;
		try {
			if (info.ttl === undefined)
				info.ttl = await getText(tree('boxes', name, 'ttl'));
			if (info.expires === undefined)
				info.expires = await getText(tree('boxes', name, 'expires'));
		} catch (e) {
			if (e.status === 401)
				throw e;
		}
		return info;
	}

	let listErrorShown = false;

	async function refresh() {
		if (!token())
			return;
		if (refreshing) {
			refreshAgain = true;
			return;
		}
		refreshing = true;
		try {
			const j = await (await request('GET', tree('boxes') + '/')).json();
			const names = (j.entries || [])
				.filter((e) => e.type === 'dir')
				.map((e) => e.name)
				.sort();
			const infos = await Promise.all(names.map(loadBox));
			render(infos.filter((i) => i !== null));
			/* Clear only a listing error: an action's error stays until
			 * the next action. */
			if (listErrorShown)
				panelError('');
			listErrorShown = false;
		} catch (e) {
			if (e.status !== 401) {
				panelError(e.message);
				listErrorShown = true;
			}
		} finally {
			refreshing = false;
			if (refreshAgain) {
				refreshAgain = false;
				refresh();
			}
		}
	}

	function formatTtl(ttl) {
		const s = String(ttl ?? '').trim();
		if (!/^[0-9]+$/.test(s))
			return s === '' ? '—' : s;
		let n = Number(s);
		const h = Math.floor(n / 3600);
		n -= h * 3600;
		const m = Math.floor(n / 60);
		const sec = n - m * 60;
		if (h)
			return `${h}h ${m}m`;
		if (m)
			return `${m}m ${sec}s`;
		return `${sec}s`;
	}

	function formatPolicy(p) {
		if (p === undefined || p === null)
			return '—';
		if (typeof p !== 'string')
			p = JSON.stringify(p);
		const lines = p.trim().split('\n');
		return lines.length > 1 ? `${lines[0]} (+${lines.length - 1})` : lines[0];
	}

	function cell(tr, testid) {
		const td = document.createElement('td');
		td.dataset.testid = testid;
		tr.appendChild(td);
		return td;
	}

	function button(label, testid, onClick) {
		const b = document.createElement('button');
		b.type = 'button';
		b.textContent = label;
		b.dataset.testid = testid;
		b.addEventListener('click', onClick);
		return b;
	}

	function newRow(name) {
		const tr = document.createElement('tr');
		tr.dataset.testid = 'box-row';
		tr.dataset.box = name;
		for (const f of ['name', 'state', 'type', 'image', 'ttl', 'expires', 'policy'])
			cell(tr, 'box-' + f);
		const actions = cell(tr, 'box-actions');
		actions.append(
			button('Open', 'box-open', () => {
				location.hash = '#/box/' + encodeURIComponent(name);
			}),
			button('Stop', 'box-stop', () => act(name, 'stop')),
			button('Resume', 'box-resume', () => act(name, 'resume')),
			button('Exec', 'box-exec', () => openConsole(name)),
			button('Fork', 'box-fork', () => act(name, 'fork')),
			button('Delete', 'box-delete', () => act(name, 'delete'))
		);
		return tr;
	}

	function field(tr, f) {
		return tr.querySelector(`[data-testid="box-${f}"]`);
	}

	/* Updates rows in place (so nothing a person is clicking is replaced),
	 * adds new boxes, removes gone ones. */
	function render(infos) {
		const tbody = $('box-rows');
		const seen = new Set();
		for (const info of infos) {
			const name = String(info.name);
			seen.add(name);
			let tr = rows.get(name);
			if (!tr) {
				tr = newRow(name);
				rows.set(name, tr);
			}
			tbody.appendChild(tr); /* keeps the sorted order */
			const state = String(info.state ?? '');
			tr.dataset.state = state;
			setText(field(tr, 'name'), name);
			setText(field(tr, 'state'), state);
			field(tr, 'state').title = info.error ? String(info.error) : '';
			setText(field(tr, 'type'), String(info.type ?? ''));
			setText(field(tr, 'image'), String(info.image ?? ''));
			setText(field(tr, 'ttl'), formatTtl(info.ttl));
			setText(field(tr, 'expires'), String(info.expires ?? '—'));
			setText(field(tr, 'policy'), formatPolicy(info.policy));
			tr.querySelector('[data-testid="box-stop"]').disabled = state !== 'running';
			tr.querySelector('[data-testid="box-resume"]').disabled =
				state !== 'stopped' && state !== 'created';
		}
		for (const [name, tr] of rows) {
			if (!seen.has(name)) {
				tr.remove();
				rows.delete(name);
				if (consoleBox === name)
					closeConsole();
			}
		}
		$('no-boxes').hidden = rows.size !== 0;
	}

	/* ---- actions ---- */

	async function act(name, what) {
		panelError('');
		try {
			switch (what) {
			case 'stop':
				await request('PUT', tree('boxes', name, 'state'), 'stopped');
				break;
			case 'resume':
				await request('PUT', tree('boxes', name, 'state'), 'running');
				break;
			case 'delete':
				if (!confirm(`Delete box ${name} and everything in it?`))
					return;
				await request('DELETE', tree('boxes', name) + '/');
				break;
			case 'fork': {
				const target = prompt(`Name of the new box forked from ${name}:`,
						      randomName(name.slice(0, 50) + '-', 4));
				if (target === null || target.trim() === '')
					return;
				await request('PUT', tree('boxes', name, 'fork'), target.trim());
				break;
			}
			}
		} catch (e) {
			if (e.status !== 401)
				panelError(`${what} ${name}: ${e.message}`);
		} finally {
			refresh();
		}
	}

	async function create(ev) {
		ev.preventDefault();
		panelError('');
		const name = $('create-name').value.trim() || randomName('box-', 6);
		const type = $('create-type').value;
		const ttl = $('create-ttl').value.trim();
		if (!/^[a-z0-9][a-z0-9._-]{0,62}$/.test(name)) {
			panelError('Names are 1 to 63 of a-z 0-9 . _ - and start with a letter or digit.');
			return;
		}
		if (ttl !== '' && !/^[1-9][0-9]*$/.test(ttl)) {
			panelError('TTL is a whole number of seconds.');
			return;
		}
		const submit = $('create-submit');
		submit.disabled = true;
		let made = false;
		try {
			await request('PUT', tree('boxes', name) + '/');
			made = true;
			if (type !== '')
				await request('PUT', tree('boxes', name, 'type'), type);
			if (ttl !== '')
				await request('PUT', tree('boxes', name, 'ttl'), ttl);
			made = false; /* settings accepted: a failed start keeps the box */
			await request('PUT', tree('boxes', name, 'state'), 'running');
			$('create-name').value = '';
		} catch (e) {
			if (e.status !== 401) {
				panelError(`create ${name}: ${e.message}`);
				if (made) /* settings refused: leave nothing behind */
					await request('DELETE', tree('boxes', name) + '/').catch(() => {});
			}
		} finally {
			submit.disabled = false;
			refresh();
		}
	}

	/* ---- exec console ---- */

	function openConsole(name) {
		if (consoleBox !== name)
			closeConsole();
		consoleBox = name;
		setText($('console-box'), name);
		$('console').hidden = false;
		$('exec-cmd').focus();
	}

	function closeConsole() {
		if (execAbort)
			execAbort.abort();
		execAbort = null;
		consoleBox = null;
		$('console').hidden = true;
		setText($('exec-output'), '');
		setText($('exec-exit'), '');
		setText($('exec-error'), '');
	}

	function appendOutput(pre, text) {
		if (text === '')
			return;
		pre.appendChild(document.createTextNode(text));
		if (pre.textContent.length > OUTPUT_MAX)
			pre.textContent = pre.textContent.slice(-OUTPUT_MAX / 2);
	}

	async function runCommand(ev) {
		ev.preventDefault();
		const name = consoleBox;
		const cmd = $('exec-cmd').value;
		if (!name || cmd.trim() === '')
			return;
		if (execAbort)
			execAbort.abort();
		const abort = new AbortController();
		execAbort = abort;
		const pre = $('exec-output');
		const exitLine = $('exec-exit');
		setText(pre, '');
		setText($('exec-error'), '');
		setText(exitLine, 'starting…');
		const job = randomName('web-', 8);
		try {
			await request('PUT', tree('boxes', name, 'exec', job) + '/', undefined, abort.signal);
			await request('PUT', tree('boxes', name, 'exec', job, 'cmd'), cmd, abort.signal);
			setText(exitLine, 'running…');
			const resp = await request('GET', tree('boxes', name, 'exec', job, 'output'),
						   undefined, abort.signal);
			const reader = resp.body.getReader();
			const decoder = new TextDecoder();
			for (;;) {
				const { done, value } = await reader.read();
				if (done)
					break;
				appendOutput(pre, decoder.decode(value, { stream: true }));
			}
			appendOutput(pre, decoder.decode());
			const code = (await (await request('GET', tree('boxes', name, 'exec', job, 'exit'),
							   undefined, abort.signal)).text()).trim();
			setText(exitLine, 'exit ' + code);
		} catch (e) {
			if (abort.signal.aborted)
				return;
			setText(exitLine, '');
			if (e.status !== 401)
				setText($('exec-error'), e.message);
		} finally {
			if (execAbort === abort)
				execAbort = null;
			if (!abort.signal.aborted)
				refresh();
		}
	}

	/* ---- helpers for the pages below ---- */

	function option(value, label) {
		const opt = document.createElement('option');
		opt.value = value;
		opt.textContent = label;
		return opt;
	}

	function clear(el) {
		while (el.firstChild)
			el.firstChild.remove();
	}

	/* 1234567 -> "1.2 MiB" (the exact count in the title). */
	function formatBytes(v) {
		const s = String(v ?? '').trim();
		if (!/^[0-9]+$/.test(s))
			return s === '' ? '—' : s;
		let n = Number(s);
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let u = 0;
		while (n >= 1024 && u < units.length - 1) {
			n /= 1024;
			u++;
		}
		return u === 0 ? `${n} B` : `${n.toFixed(1)} ${units[u]}`;
	}

	/* The body of a directory listing's entries of one type, sorted
	 * unless asOrdered (then in the tree's order). */
	async function listNames(url, type, asOrdered) {
		const j = await (await request('GET', url)).json();
		const names = (j.entries || [])
			.filter((e) => !type || e.type === type)
			.map((e) => String(e.name));
		return asOrdered ? names : names.sort();
	}

	/* A file's text, or fallback when it cannot be read (not 401). */
	async function textOr(url, fallback) {
		try {
			return await getText(url);
		} catch (e) {
			if (e.status === 401)
				throw e;
			return fallback;
		}
	}

	/* Runs an action, shows its error (the server's text) in el prefixed
	 * with what, then calls after() either way. */
	async function attempt(el, what, fn, after) {
		setText(el, '');
		try {
			return await fn();
		} catch (e) {
			if (e.status !== 401)
				setText(el, `${what}: ${e.message}`);
			return undefined;
		} finally {
			if (after)
				await after();
		}
	}

	/* A download of an authenticated GET: the response into a blob, the
	 * blob saved under name (the whole archive passes through memory). */
	async function download(url, name, note) {
		setText(note, `exporting ${name}…`);
		const resp = await request('GET', url);
		const blob = await resp.blob();
		const a = document.createElement('a');
		a.href = URL.createObjectURL(blob);
		a.download = name;
		a.hidden = true;
		document.body.appendChild(a);
		a.click();
		a.remove();
		setTimeout(() => URL.revokeObjectURL(a.href), 60000);
		setText(note, `${name}: ${formatBytes(blob.size)} exported`);
	}

	/* ---- pages ---- */

	const VIEWS = ['boxes-view', 'box-view', 'prompt-view', 'volumes-view', 'tokens-view',
		'desktop-view'];
	let currentView = null;

	/* "#/box/a%20b" -> ["box", "a b"] (a malformed escape stays as it is). */
	function hashParts() {
		return location.hash
			.replace(/^#\/?/, '')
			.split('/')
			.filter((p) => p !== '')
			.map((p) => {
				try {
					return decodeURIComponent(p);
				} catch (e) {
					return p;
				}
			});
	}

	function leaveView() {
		if (currentView === 'desktop-view')
			desktopClose();
		if (currentView === 'box-view')
			boxClose();
		if (currentView === 'prompt-view')
			promptClose();
		currentView = null;
	}

	function route() {
		if (!token())
			return;
		const [page, arg] = hashParts();
		let view = 'boxes-view';
		if (page === 'box' && arg)
			view = 'box-view';
		else if (page === 'desktop' && arg)
			view = 'desktop-view';
		else if (page === 'prompts' && arg)
			view = 'prompt-view';
		else if (page === 'volumes')
			view = 'volumes-view';
		else if (page === 'tokens')
			view = 'tokens-view';
		leaveView();
		currentView = view;
		for (const v of VIEWS)
			$(v).hidden = v !== view;
		document.body.dataset.view = view;
		for (const a of $('nav').querySelectorAll('a'))
			a.classList.toggle('current', a.getAttribute('href') === '#/' + (page || ''));
		panelError('');
		switch (view) {
		case 'box-view':
			boxOpen(arg);
			break;
		case 'desktop-view':
			desktopOpen(arg);
			break;
		case 'prompt-view':
			promptOpen(arg);
			break;
		default:
			refreshView();
		}
	}

	function refreshView() {
		switch (currentView) {
		case 'boxes-view':
			refresh();
			break;
		case 'box-view':
			boxRefresh();
			break;
		case 'volumes-view':
			volumesRefresh();
			break;
		case 'tokens-view':
			tokensRefresh();
			break;
		}
	}

	/* ---- prompts: #/prompts/NAME ---- */

	const EVENTS_MAX = 5000; /* event lines kept on screen */
	let promptBox = null;
	let promptAbort = null;
	let promptDir = null; /* the prompt followed: [box, name] */

	function promptError(text) {
		setText($('pr-error'), text || '');
	}

	function promptOpen(name) {
		promptBox = name;
		setText($('pr-box'), name);
		$('pr-back').href = '#/box/' + encodeURIComponent(name);
		setText($('pr-back'), name);
		promptError('');
		setText($('pr-status'), '');
		clear($('pr-events'));
		promptAgents();
		promptList(name);
	}

	function promptClose() {
		if (promptAbort)
			promptAbort.abort();
		promptAbort = null;
		promptDir = null;
		promptBox = null;
		$('pr-stop').disabled = true;
	}

	/* /v1/tree/agents/: one file per installed agent. */
	async function promptAgents() {
		const sel = $('pr-agent');
		let names = [];
		try {
			names = await listNames(TREE + 'agents/', 'file');
		} catch (e) {
			if (e.status === 401)
				return;
		}
		const keep = sel.value;
		clear(sel);
		sel.appendChild(option('', 'the default agent'));
		for (const n of names)
			sel.appendChild(option(n, n));
		if (names.includes(keep))
			sel.value = keep;
	}

	async function promptList(name) {
		const list = $('pr-list');
		let names = [];
		try {
			/* The tree lists a box's prompts in the order they were
			 * made; their names tell nothing of it (web-RANDOM, 1, 10). */
			names = await listNames(tree('boxes', name, 'prompts') + '/', 'dir', true);
		} catch (e) {
			if (e.status !== 401 && promptBox === name)
				promptError(e.message);
			return;
		}
		if (promptBox !== name)
			return;
		clear(list);
		$('pr-none').hidden = names.length > 0;
		for (const p of names.reverse()) {
			const li = document.createElement('li');
			const b = button(p, 'pr-item', () => promptFollow(name, p));
			li.appendChild(b);
			const st = document.createElement('span');
			st.className = 'muted';
			li.appendChild(st);
			list.appendChild(li);
			textOr(tree('boxes', name, 'prompts', p, 'status'), '').then((t) => setText(st, ' ' + t));
		}
	}

	function promptShow(line) {
		const pre = $('pr-events');
		/* usage is the prompt's running total: one line, the last */
		const seen = line.kind === 'usage' ? pre.querySelector('.ev-usage') : null;
		if (seen) {
			seen.textContent = line.text;
			return;
		}
		const el = document.createElement('div');
		el.className = 'ev ev-' + line.kind;
		el.dataset.kind = line.kind;
		el.textContent = line.text;
		pre.appendChild(el);
		while (pre.childNodes.length > EVENTS_MAX)
			pre.firstChild.remove();
	}

	/* Follows boxes/NAME/prompts/P/events to its end event, then reads
	 * exit. */
	async function promptFollow(name, p) {
		if (promptAbort)
			promptAbort.abort();
		const abort = new AbortController();
		promptAbort = abort;
		promptDir = [name, p];
		clear($('pr-events'));
		promptError('');
		setText($('pr-status'), `${p}: running…`);
		$('pr-stop').disabled = false;
		const render = window.PaddockPrompt;
		const state = {};
		const holder = {};
		try {
			const resp = await request('GET', tree('boxes', name, 'prompts', p, 'events'),
						   undefined, abort.signal);
			const reader = resp.body.getReader();
			const decoder = new TextDecoder();
			for (;;) {
				const { done, value } = await reader.read();
				const chunk = done ? decoder.decode() + '\n' : decoder.decode(value, { stream: true });
				for (const l of render.lines(holder, chunk)) {
					const line = render.render(render.parse(l), 0, state);
					if (line)
						promptShow(line);
				}
				if (done || state.ended)
					break;
			}
			if (state.ended) {
				abort.abort(); /* the stream may stay open: end is last */
				setText($('pr-status'), `${p}: exit ${state.exit}`);
				/* The end event may come before the prompt's status
				 * says so: exit answers once it does, and the list
				 * (below) then shows the final status. */
				await getText(tree('boxes', name, 'prompts', p, 'exit')).catch(() => {});
			} else {
				const code = await getText(tree('boxes', name, 'prompts', p, 'exit'));
				setText($('pr-status'), `${p}: exit ${code}`);
			}
		} catch (e) {
			if (abort.signal.aborted && !state.ended)
				return;
			if (e.status !== 401 && !state.ended) {
				setText($('pr-status'), '');
				promptError(e.message);
			}
		} finally {
			if (promptAbort === abort) {
				promptAbort = null;
				$('pr-stop').disabled = true;
				if (promptBox === name)
					promptList(name);
			}
		}
	}

	async function promptSend(ev) {
		ev.preventDefault();
		const name = promptBox;
		const text = $('pr-text').value;
		if (!name || text.trim() === '')
			return;
		const p = randomName('web-', 8);
		const agent = $('pr-agent').value;
		const model = $('pr-model').value.trim();
		$('pr-send').disabled = true;
		const made = await attempt($('pr-error'), 'prompt', async () => {
			await request('PUT', tree('boxes', name, 'prompts', p) + '/');
			try {
				if (agent)
					await request('PUT', tree('boxes', name, 'prompts', p, 'agent'), agent + '\n');
				if (model)
					await request('PUT', tree('boxes', name, 'prompts', p, 'model'), model + '\n');
				await request('PUT', tree('boxes', name, 'prompts', p, 'text'), text);
			} catch (e) {
				request('DELETE', tree('boxes', name, 'prompts', p) + '/').catch(() => {});
				throw e;
			}
			return true;
		}, async () => {
			$('pr-send').disabled = false;
		});
		if (made && promptBox === name) {
			$('pr-text').value = '';
			promptFollow(name, p);
		}
	}

	async function promptStop() {
		if (!promptDir)
			return;
		const [name, p] = promptDir;
		await attempt($('pr-error'), 'stop', () =>
			request('PUT', tree('boxes', name, 'prompts', p, 'ctl'), 'kill\n'));
	}

	/* ---- one box: #/box/NAME ---- */

	let currentBox = null;
	let currentBoxType = '';
	let boxLoading = false;
	let snapSignature = '';
	let shotUrl = null;

	function boxError(text) {
		setText($('bx-error'), text || '');
	}

	function boxNote(text) {
		setText($('bx-note'), text || '');
	}

	function boxOpen(name) {
		currentBox = name;
		currentBoxType = '';
		snapSignature = '';
		setText($('bx-name'), name);
		setText($('bx-state'), '');
		boxError('');
		boxNote('');
		setText($('bx-shot-note'), '');
		$('bx-shot-img').hidden = true;
		$('bx-ttl').value = '';
		$('bx-ttl').dataset.loaded = '';
		delete $('bx-type').dataset.edited;
		$('bx-geometry').value = '';
		$('bx-geometry').dataset.loaded = '';
		$('bx-policy-entries').value = '';
		$('bx-policy-form').dataset.loaded = '';
		clear($('bx-snap-rows'));
		$('bx-desktop-live').href = '#/desktop/' + encodeURIComponent(name);
		$('bx-prompts-link').href = '#/prompts/' + encodeURIComponent(name);
		boxRefresh();
	}

	function boxClose() {
		currentBox = null;
		if (shotUrl)
			URL.revokeObjectURL(shotUrl);
		shotUrl = null;
		$('bx-shot-img').removeAttribute('src');
	}

	function fillTypes(current) {
		const sel = $('bx-type');
		/* Not while the person is choosing: a refresh landing between
		 * their choice and the click would put the old type back. */
		if (document.activeElement === sel || sel.dataset.edited)
			return;
		const names = typeNames.includes(current) || !current ? typeNames : [current, ...typeNames];
		if ([...sel.options].map((o) => o.value).join(' ') !== names.join(' ')) {
			clear(sel);
			for (const n of names)
				sel.appendChild(option(n, n));
		}
		sel.value = current;
	}

	/* A field the person may be editing is filled only the first time
	 * (dataset.loaded) or when it does not have the focus. */
	function fillInput(el, value, force) {
		if (force || (document.activeElement !== el && !el.dataset.loaded)) {
			el.value = value;
			el.dataset.loaded = '1';
		}
	}

	function fillPolicy(policy, force) {
		const lines = String(policy ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '');
		const mode = lines[0] || '';
		setText($('bx-policy-current'),
			lines.length > 1 ? `${mode}: ${lines.slice(1).join(', ')}` : mode || '—');
		const form = $('bx-policy-form');
		if (!force && (form.dataset.loaded || form.contains(document.activeElement)))
			return;
		form.dataset.loaded = '1';
		$('bx-policy-mode').value = mode;
		$('bx-policy-entries').value = lines.slice(1).join('\n');
		policyModeChanged();
	}

	function policyModeChanged() {
		$('bx-policy-entries').disabled = $('bx-policy-mode').value !== 'allowlist';
	}

	async function boxRefresh() {
		const name = currentBox;
		if (!name || boxLoading)
			return;
		boxLoading = true;
		try {
			const info = await loadBox(name);
			if (currentBox !== name)
				return;
			if (!info) {
				boxError(`box ${name} does not exist (any more)`);
				setText($('bx-state'), 'gone');
				return;
			}
			const state = String(info.state ?? '');
			setText($('bx-state'), state);
			$('bx-state').dataset.state = state;
			currentBoxType = String(info.type ?? '');
			fillTypes(currentBoxType);
			fillInput($('bx-ttl'), String(info.ttl ?? ''));
			setText($('bx-ttl-left'), formatTtl(info.ttl));
			setText($('bx-expires'), String(info.expires ?? '—'));
			setText($('bx-image'), String(info.image ?? ''));
			setText($('bx-ip'), String(info.ip ?? '') || '—');
			const policy = await textOr(tree('boxes', name, 'policy'), info.policy ?? '');
			fillPolicy(policy, false);
			const desk = await textOr(tree('boxes', name, 'desktop', 'state'), '');
			setText($('bx-desktop-state'), desk || '(not available)');
			$('bx-desktop-state').dataset.state = desk;
			$('bx-desktop-on').disabled = desk === 'on';
			$('bx-desktop-off').disabled = desk !== 'on';
			fillInput($('bx-geometry'),
				  await textOr(tree('boxes', name, 'desktop', 'geometry'), ''));
			await Promise.all([snapsRefresh(name), boxVolumesRefresh(name)]);
		} catch (e) {
			if (e.status !== 401 && currentBox === name)
				boxError(e.message);
		} finally {
			boxLoading = false;
		}
	}

	/* One box setting file, written; the page reloads either way. */
	function boxWrite(file, value, what) {
		const name = currentBox;
		return attempt($('bx-error'), what, async () => {
			boxNote('');
			await request('PUT', tree('boxes', name, ...file), value);
			boxNote(`${what}: done`);
			return true;
		}, boxRefresh);
	}

	async function setType(ev) {
		ev.preventDefault();
		const sel = $('bx-type');
		const value = sel.value;
		/* Written: from now on the page shows what the box has. */
		delete sel.dataset.edited;
		await boxWrite(['type'], value, 'type');
	}

	async function setTtl(ev) {
		ev.preventDefault();
		/* The field keeps what was written (the countdown shows beside). */
		await boxWrite(['ttl'], $('bx-ttl').value.trim(), 'ttl');
	}

	async function savePolicy(ev) {
		ev.preventDefault();
		const mode = $('bx-policy-mode').value;
		let body = mode + '\n';
		if (mode === 'allowlist')
			for (const l of $('bx-policy-entries').value.split('\n'))
				if (l.trim() !== '')
					body += l.trim() + '\n';
		if (await boxWrite(['policy'], body, 'policy'))
			$('bx-policy-form').dataset.loaded = '';
	}

	async function setGeometry(ev) {
		ev.preventDefault();
		await boxWrite(['desktop', 'geometry'], $('bx-geometry').value.trim(), 'geometry');
	}

	async function desktopState(on) {
		await boxWrite(['desktop', 'state'], on ? 'on' : 'off', on ? 'desktop on' : 'desktop off');
	}

	/* screenshot.png needs the token: fetched, shown from a blob: URL. */
	async function takeScreenshot() {
		const name = currentBox;
		const note = $('bx-shot-note');
		setText(note, 'capturing…');
		await attempt($('bx-error'), 'screenshot', async () => {
			const started = performance.now();
			const blob = await (await request('GET', tree('boxes', name, 'screenshot.png'))).blob();
			if (currentBox !== name)
				return;
			const img = $('bx-shot-img');
			await new Promise((resolve, reject) => {
				const url = URL.createObjectURL(blob);
				img.onload = () => resolve();
				img.onerror = () => reject(new Error('the image could not be decoded'));
				img.src = url;
				if (shotUrl)
					URL.revokeObjectURL(shotUrl);
				shotUrl = url;
			});
			img.hidden = false;
			setText(note, `${img.naturalWidth}×${img.naturalHeight}, ${formatBytes(blob.size)}, ` +
				`${Math.round(performance.now() - started)} ms, ${new Date().toLocaleTimeString()}`);
		});
		if (note.textContent === 'capturing…')
			setText(note, '');
	}

	/* Snapshots: the box's snapshots/ lists ids (links to snapshots/ID). */
	async function snapsRefresh(name) {
		/* "last" leads to the newest: not a row of its own. */
		const ids = (await listNames(tree('boxes', name, 'snapshots') + '/')).filter((i) => i !== 'last');
		const snaps = await Promise.all(ids.map(async (id) => {
			const [label, created, size] = await Promise.all(['label', 'created', 'size'].map(
				(f) => textOr(tree('snapshots', id, f), null)));
			return { id, label, created, size };
		}));
		const live = snaps.filter((s) => s.created !== null);
		live.sort((a, b) => String(b.created).localeCompare(String(a.created)) || a.id.localeCompare(b.id));
		const signature = JSON.stringify(live);
		const tbody = $('bx-snap-rows');
		/* Rebuilt only when something changed, and never under an edit. */
		const editing = document.activeElement && document.activeElement.tagName === 'INPUT' &&
			tbody.contains(document.activeElement);
		if (currentBox !== name || signature === snapSignature || editing)
			return;
		snapSignature = signature;
		clear(tbody);
		for (const s of live)
			tbody.appendChild(snapRow(name, s));
		$('bx-no-snaps').hidden = live.length !== 0;
	}

	function snapRow(name, s) {
		const tr = document.createElement('tr');
		tr.dataset.testid = 'snap-row';
		tr.dataset.snap = s.id;
		setText(cell(tr, 'snap-id'), s.id);
		const labelCell = cell(tr, 'snap-label');
		const form = document.createElement('form');
		form.className = 'inline';
		const input = document.createElement('input');
		input.value = s.label ?? '';
		input.dataset.testid = 'snap-label-input';
		input.setAttribute('aria-label', `label of snapshot ${s.id}`);
		const save = document.createElement('button');
		save.type = 'submit';
		save.textContent = 'Save';
		save.dataset.testid = 'snap-label-save';
		form.append(input, save);
		form.addEventListener('submit', (ev) => {
			ev.preventDefault();
			snapAct(name, s.id, 'label', input.value);
		});
		labelCell.appendChild(form);
		setText(cell(tr, 'snap-created'), s.created ?? '');
		const size = cell(tr, 'snap-size');
		setText(size, formatBytes(s.size));
		size.title = `${s.size} bytes that no older snapshot holds`;
		cell(tr, 'snap-actions').append(
			button('Restore', 'snap-restore', () => snapAct(name, s.id, 'restore')),
			button('Export', 'snap-export', () => snapAct(name, s.id, 'export')),
			button('Delete', 'snap-delete', () => snapAct(name, s.id, 'delete')));
		return tr;
	}

	async function snapAct(name, id, what, value) {
		boxNote('');
		await attempt($('bx-error'), `${what} ${id}`, async () => {
			switch (what) {
			case 'label':
				await request('PUT', tree('snapshots', id, 'label'), value);
				boxNote(`snapshot ${id} labelled`);
				break;
			case 'restore': {
				if (!confirm(`Reset box ${name}'s files to snapshot ${id}? ` +
					     'A running box is stopped and started again.'))
					return;
				const j = await (await request('PUT', tree('boxes', name, 'restore'), id)).json();
				let note = `restored snapshot ${j.snapshot ?? id}`;
				if (j.restarted)
					note += `; the box was restarted (files before: snapshot ${j.before}` +
						(j.jobs_ended ? `; jobs ended: ${j.jobs_ended}` : '') + ')';
				boxNote(note);
				break;
			}
			case 'delete':
				if (!confirm(`Delete snapshot ${id}?`))
					return;
				await request('DELETE', tree('snapshots', id) + '/');
				boxNote(`snapshot ${id} deleted`);
				break;
			case 'export':
				await download(tree('snapshots', id, 'export'), `${name}-${id}.tar.zst`, $('bx-note'));
				break;
			}
		}, () => {
			snapSignature = '';
			return boxRefresh();
		});
	}

	async function takeSnapshot(ev) {
		ev.preventDefault();
		const name = currentBox;
		const label = $('bx-snap-label').value;
		boxNote('');
		await attempt($('bx-error'), 'snapshot', async () => {
			const j = await (await request('PUT', tree('boxes', name, 'snapshot'), label)).json();
			$('bx-snap-label').value = '';
			boxNote(`snapshot ${j.snapshot} taken`);
		}, () => {
			snapSignature = '';
			return boxRefresh();
		});
	}

	/* The box's volumes file: one name a line; written whole. */
	let boxVolumes = [];

	async function boxVolumesRefresh(name) {
		const attached = (await getText(tree('boxes', name, 'volumes')))
			.split('\n').map((l) => l.trim()).filter((l) => l !== '');
		const all = await listNames(tree('volumes') + '/', 'dir');
		if (currentBox !== name)
			return;
		boxVolumes = attached;
		const ul = $('bx-vols');
		clear(ul);
		for (const v of attached) {
			const li = document.createElement('li');
			li.dataset.testid = 'bx-vol';
			li.dataset.volume = v;
			const code = document.createElement('code');
			code.textContent = v;
			li.append(code, ` at /mnt/${v} `,
				button('Detach', 'bx-vol-detach', () =>
					setVolumes(attached.filter((x) => x !== v), `detach ${v}`)));
			ul.appendChild(li);
		}
		$('bx-no-vols').hidden = attached.length !== 0;
		const sel = $('bx-vol-select');
		if (document.activeElement !== sel) {
			const free = all.filter((v) => !attached.includes(v));
			const keep = sel.value;
			clear(sel);
			for (const v of free)
				sel.appendChild(option(v, v));
			if (free.includes(keep))
				sel.value = keep;
			$('bx-vol-form').querySelector('button').disabled = free.length === 0;
		}
	}

	function setVolumes(list, what) {
		return boxWrite(['volumes'], list.map((v) => v + '\n').join(''), what);
	}

	async function attachVolume(ev) {
		ev.preventDefault();
		const v = $('bx-vol-select').value;
		if (v)
			await setVolumes([...boxVolumes, v], `attach ${v}`);
	}

	/* ---- volumes: #/volumes ---- */

	let volumesLoading = false;

	async function volumesRefresh() {
		if (volumesLoading)
			return;
		volumesLoading = true;
		try {
			const names = await listNames(tree('volumes') + '/', 'dir');
			const vols = await Promise.all(names.map(async (n) => ({
				name: n,
				size: await textOr(tree('volumes', n, 'size'), ''),
				boxes: await textOr(tree('volumes', n, 'boxes'), ''),
			})));
			const tbody = $('vol-rows');
			const seen = new Set();
			for (const v of vols) {
				seen.add(v.name);
				let tr = tbody.querySelector(`tr[data-volume="${CSS.escape(v.name)}"]`);
				if (!tr)
					tr = volumeRow(v.name);
				tbody.appendChild(tr);
				setText(tr.querySelector('[data-testid="vol-name"]'), v.name);
				setText(tr.querySelector('[data-testid="vol-size"]'), formatBytes(v.size));
				setText(tr.querySelector('[data-testid="vol-boxes"]'),
					v.boxes.split('\n').filter((l) => l.trim() !== '').join(', ') || '—');
			}
			for (const tr of [...tbody.children])
				if (!seen.has(tr.dataset.volume))
					tr.remove();
			$('no-volumes').hidden = vols.length !== 0;
		} catch (e) {
			if (e.status !== 401)
				panelError('volumes: ' + e.message);
		} finally {
			volumesLoading = false;
		}
	}

	function volumeRow(name) {
		const tr = document.createElement('tr');
		tr.dataset.testid = 'vol-row';
		tr.dataset.volume = name;
		for (const f of ['name', 'size', 'boxes'])
			cell(tr, 'vol-' + f);
		cell(tr, 'vol-actions').append(
			button('Export', 'vol-export', () => volumeAct(name, 'export')),
			button('Delete', 'vol-delete', () => volumeAct(name, 'delete')));
		return tr;
	}

	async function volumeAct(name, what) {
		setText($('vol-note'), '');
		await attempt($('panel-error'), `${what} ${name}`, async () => {
			if (what === 'delete') {
				if (!confirm(`Delete volume ${name} and everything in it?`))
					return;
				await request('DELETE', tree('volumes', name) + '/');
			} else {
				await download(tree('volumes', name, 'export'), `${name}.tar.zst`, $('vol-note'));
			}
		}, volumesRefresh);
	}

	async function createVolume(ev) {
		ev.preventDefault();
		const name = $('vol-name').value.trim();
		await attempt($('panel-error'), `create volume ${name}`, async () => {
			await request('PUT', tree('volumes', name) + '/');
			$('vol-name').value = '';
		}, volumesRefresh);
	}

	/* ---- tokens: #/tokens ---- */

	let tokensLoading = false;

	async function tokensRefresh() {
		if (tokensLoading)
			return;
		tokensLoading = true;
		try {
			const ids = await listNames(tree('tokens') + '/', 'dir');
			const toks = await Promise.all(ids.map(async (id) => {
				const [label, created, lastUsed, expires] = await Promise.all(
					['label', 'created', 'last_used', 'expires']
						.map((f) => textOr(tree('tokens', id, f), '')));
				return { id, label, created, lastUsed, expires };
			}));
			const mine = localStorage.getItem(TOKEN_ID_KEY);
			const tbody = $('token-rows');
			clear(tbody);
			for (const t of toks) {
				const tr = document.createElement('tr');
				tr.dataset.testid = 'token-row';
				tr.dataset.token = t.id;
				setText(cell(tr, 'token-id'), t.id);
				setText(cell(tr, 'token-label'), (t.label || '—') + (t.id === mine ? ' (this panel)' : ''));
				setText(cell(tr, 'token-created'), t.created);
				setText(cell(tr, 'token-last-used'), t.lastUsed);
				setText(cell(tr, 'token-expires'), t.expires);
				cell(tr, 'token-actions').append(button('Revoke', 'token-revoke', () => revokeToken(t.id)));
				tbody.appendChild(tr);
			}
		} catch (e) {
			if (e.status !== 401)
				panelError('tokens: ' + e.message);
		} finally {
			tokensLoading = false;
		}
	}

	async function revokeToken(id) {
		const mine = id === localStorage.getItem(TOKEN_ID_KEY);
		if (!confirm(mine ? `Revoke token ${id}? It is this panel's own: you will be logged out.`
				  : `Revoke token ${id}? Whatever uses it is cut off at once.`))
			return;
		await attempt($('panel-error'), `revoke ${id}`, async () => {
			await request('DELETE', tree('tokens', id) + '/');
			if (mine)
				showLogin('This panel\'s token was revoked.');
		}, mine ? null : tokensRefresh);
	}

	/* ---- the live desktop: #/desktop/NAME ---- */

	/* noVNC's RFB class, an ES module the daemon serves from the novnc
	 * package (/novnc/core/rfb.js), imported on first use. */
	let rfbClass = null;
	let rfb = null;
	let desktopBox = null;
	let desktopControl = false;
	let desktopGen = 0;
	/* Closes before a connection was made while desktop/state says on
	 * (the session still starting): retried a few times, 2 s apart. */
	const DESKTOP_RETRIES = 10;
	let desktopRetries = 0;
	let desktopConnected = false;
	let desktopRetryTimer = null;

	function desktopStatus(state, text) {
		const el = $('dt-status');
		el.dataset.state = state;
		setText(el, text);
	}

	function desktopError(text) {
		setText($('dt-error'), text || '');
	}

	function desktopOpen(name) {
		desktopBox = name;
		desktopControl = false;
		desktopRetries = 0;
		setText($('dt-box'), name);
		setText($('dt-back'), name);
		$('dt-back').href = '#/box/' + encodeURIComponent(name);
		desktopConnect();
	}

	function desktopDisconnect() {
		desktopGen++;
		clearTimeout(desktopRetryTimer);
		desktopRetryTimer = null;
		if (rfb) {
			const old = rfb;
			rfb = null;
			try {
				old.disconnect();
			} catch (e) {
				/* already closed */
			}
		}
		clear($('dt-screen'));
	}

	function desktopClose() {
		desktopDisconnect();
		desktopBox = null;
		desktopStatus('idle', 'not connected');
		desktopError('');
	}

	function controlButton() {
		const b = $('dt-control');
		b.setAttribute('aria-pressed', desktopControl ? 'true' : 'false');
		b.textContent = desktopControl ? 'Release control' : 'Take control';
	}

	/* Why a connection closed, beyond the server's reason if it gave one
	 * (a refused handshake shows as 1006 without one to a page): the
	 * desktop/state file tells; a 401 there leads to the login form. */
	async function desktopDiagnose(name, gen, reason) {
		let why = '';
		try {
			const state = await getText(tree('boxes', name, 'desktop', 'state'));
			if (state !== 'on') {
				why = `the desktop of ${name} is ${state}`;
				$('dt-on').hidden = false;
			} else if (!desktopConnected && desktopRetries < DESKTOP_RETRIES && gen === desktopGen) {
				desktopRetries++;
				desktopStatus('connecting', `waiting for the desktop (try ${desktopRetries + 1})…`);
				desktopRetryTimer = setTimeout(() => {
					if (gen === desktopGen)
						desktopConnect();
				}, 2000);
				return;
			}
		} catch (e) {
			if (e.status === 401)
				return;
			why = e.message;
		}
		if (gen === desktopGen && why && why !== reason)
			desktopError(reason ? `${reason} (${why})` : why);
	}

	async function desktopConnect() {
		const name = desktopBox;
		desktopDisconnect();
		const gen = desktopGen;
		const control = desktopControl;
		desktopConnected = false;
		controlButton();
		desktopError('');
		$('dt-on').hidden = true;
		desktopStatus('connecting', 'loading noVNC…');
		if (!rfbClass) {
			try {
				rfbClass = (await import('/novnc/core/rfb.js')).default;
			} catch (e) {
				if (gen === desktopGen) {
					desktopStatus('failed', 'not connected');
					desktopError('noVNC could not be loaded from /novnc/ (is the novnc ' +
						     'package installed on the server?): ' + e.message);
				}
				return;
			}
		}
		if (gen !== desktopGen)
			return;
		desktopStatus('connecting', 'connecting…');
		const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
		const url = `${scheme}//${location.host}/v1/vnc/${encodeURIComponent(name)}` +
			(control ? '?control=1' : '');
		let ws;
		try {
			/* Browsers cannot set headers on a WebSocket: the token
			 * travels as a subprotocol, the server answers "binary". */
			ws = new WebSocket(url, ['binary', 'paddock-token.' + token()]);
		} catch (e) {
			desktopStatus('failed', 'not connected');
			desktopError(e.message);
			return;
		}
		let closed = null;
		ws.addEventListener('close', (e) => {
			closed = e;
		});
		const r = new rfbClass($('dt-screen'), ws, { shared: true });
		r.viewOnly = !control;
		r.scaleViewport = true;
		r.resizeSession = false;
		r.focusOnClick = true;
		r.showDotCursor = control;
		r.addEventListener('connect', () => {
			if (gen !== desktopGen)
				return;
			desktopConnected = true;
			desktopRetries = 0;
			desktopStatus(control ? 'control' : 'view',
				      control ? 'connected: in control (keyboard and mouse go to the box)'
					      : 'connected: view only');
			if (control)
				r.focus();
		});
		r.addEventListener('disconnect', () => {
			if (gen !== desktopGen)
				return;
			rfb = null;
			const code = closed ? closed.code : 0;
			const reason = closed && closed.reason ? closed.reason : '';
			let text = 'disconnected';
			if (reason)
				text += `: ${reason}`;
			if (code)
				text += ` (code ${code})`;
			desktopStatus('closed', text);
			desktopError(reason);
			/* Also when the server gave a reason: a revoked token
			 * leads back to the login form from there. */
			desktopDiagnose(name, gen, reason);
		});
		r.addEventListener('securityfailure', (e) => {
			if (gen === desktopGen)
				desktopError('VNC security failure: ' + (e.detail.reason || e.detail.status));
		});
		r.addEventListener('desktopname', (e) => {
			if (gen === desktopGen)
				$('dt-screen').title = e.detail.name;
		});
		rfb = r;
	}

	async function desktopTurnOn() {
		const name = desktopBox;
		await attempt($('dt-error'), 'desktop on', async () => {
			await request('PUT', tree('boxes', name, 'desktop', 'state'), 'on');
			desktopConnect();
		});
	}

	/* ---- start ---- */

	$('login-form').addEventListener('submit', login);
	$('logout').addEventListener('click', logout);
	$('create-form').addEventListener('submit', create);
	$('exec-form').addEventListener('submit', runCommand);
	$('console-close').addEventListener('click', closeConsole);
	$('bx-type-form').addEventListener('submit', setType);
	$('bx-type').addEventListener('change', () => { $('bx-type').dataset.edited = '1'; });
	$('bx-ttl-form').addEventListener('submit', setTtl);
	$('bx-policy-form').addEventListener('submit', savePolicy);
	$('bx-policy-mode').addEventListener('change', policyModeChanged);
	$('bx-desktop-on').addEventListener('click', () => desktopState(true));
	$('bx-desktop-off').addEventListener('click', () => desktopState(false));
	$('bx-shot').addEventListener('click', takeScreenshot);
	$('bx-geometry-form').addEventListener('submit', setGeometry);
	$('bx-snap-form').addEventListener('submit', takeSnapshot);
	$('bx-vol-form').addEventListener('submit', attachVolume);
	$('vol-create-form').addEventListener('submit', createVolume);
	$('dt-control').addEventListener('click', () => {
		desktopControl = !desktopControl;
		desktopRetries = 0;
		desktopConnect();
	});
	$('dt-reconnect').addEventListener('click', () => {
		desktopRetries = 0;
		desktopConnect();
	});
	$('dt-on').addEventListener('click', desktopTurnOn);
	$('pr-form').addEventListener('submit', promptSend);
	$('pr-stop').addEventListener('click', promptStop);
	window.addEventListener('hashchange', route);

	if (token())
		showMain();
	else
		showLogin('');
})();
