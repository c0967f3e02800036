/* Paddock web panel: plain DOM, no framework, no build step.
 *
 * Talks to the daemon's HTTP mirror of the tree (web/README.md): POST
 * /v1/login for a token (kept in localStorage), then /v1/tree/... with
 * "Authorization: Bearer TOKEN". Any 401 forgets the token and shows the
 * login form again. Server data reaches the page only through textContent. */
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
		for (const tr of rows.values())
			tr.remove();
		rows.clear();
		$('main-view').hidden = true;
		$('logout').hidden = true;
		$('login-view').hidden = false;
		setText($('login-error'), message || '');
		$('login-password').value = '';
		$('login-password').focus();
	}

	function showMain() {
		$('login-view').hidden = true;
		$('main-view').hidden = false;
		$('logout').hidden = false;
		panelError('');
		loadTypes();
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
		refresh();
		refreshTimer = setInterval(() => {
			if (!document.hidden)
				refresh();
		}, REFRESH_MS);
	}

	function stopRefresh() {
		if (refreshTimer !== null)
			clearInterval(refreshTimer);
		refreshTimer = null;
	}

	async function loadTypes() {
		const select = $('create-type');
		try {
			const j = await (await request('GET', tree('types') + '/')).json();
			while (select.options.length > 1)
				select.remove(1);
			for (const e of j.entries || []) {
				if (e.type !== 'dir')
					continue;
				const opt = document.createElement('option');
				opt.value = e.name;
				opt.textContent = e.name;
				select.appendChild(opt);
			}
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
			panelError('');
		} catch (e) {
			if (e.status !== 401)
				panelError(e.message);
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

	/* ---- start ---- */

	$('login-form').addEventListener('submit', login);
	$('logout').addEventListener('click', logout);
	$('create-form').addEventListener('submit', create);
	$('exec-form').addEventListener('submit', runCommand);
	$('console-close').addEventListener('click', closeConsole);

	if (token())
		showMain();
	else
		showLogin('');
})();
