/* prompt-render.js - a prompt's normalized events (one JSON object a line:
 * start, message, tool_call, tool_result, usage, error, end) as the lines
 * the panel's prompt page shows, the way `paddock prompt` prints them.
 * Pure: no DOM. Each line is {kind, text}; the page puts text into an
 * element with textContent only, never as HTML, and marks the kind with a
 * class. Everything in an event is the agent's, so hostile: control
 * characters (but newlines and tabs in messages) are shown as \xHH.
 *
 * Loaded by index.html before app.js (window.PaddockPrompt), and by the
 * panel's unit test under node (module.exports). */
'use strict';

(function (root) {
	/* The arguments that tell most about a tool call, in order. */
	const TELLING = ['file_path', 'filePath', 'path', 'command', 'cmd', 'pattern', 'url',
		'query', 'description', 'prompt'];

	/* C0 controls, DEL and C1 controls as \xHH; keepLines lets \n and \t
	 * through, else they (and \r) become spaces. */
	function clean(s, keepLines) {
		s = String(s);
		if (!keepLines)
			s = s.replace(/[\n\r\t]/g, ' ');
		// eslint-disable-next-line no-control-regex
		return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\r\n\t]/g, (c) => {
			if (keepLines && (c === '\n' || c === '\t'))
				return c;
			if (!keepLines && (c === '\n' || c === '\t' || c === '\r'))
				return ' ';
			return '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0');
		});
	}

	/* At most width characters (code points), the last one "…" when cut;
	 * width 0: all of it. */
	function cut(s, width) {
		const chars = Array.from(s);
		if (!width || chars.length <= width)
			return s;
		return chars.slice(0, Math.max(width - 1, 0)).join('') + '…';
	}

	function stringOf(v) {
		if (typeof v === 'string')
			return v;
		if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string'))
			return v.join(' ');
		return null;
	}

	function toolArgument(input) {
		if (!input || typeof input !== 'object' || Array.isArray(input))
			return null;
		for (const k of TELLING) {
			const s = stringOf(input[k]);
			if (s !== null)
				return s;
		}
		for (const k of Object.keys(input))
			if (typeof input[k] === 'string')
				return input[k];
		return null;
	}

	function str(ev, key) {
		return typeof ev[key] === 'string' ? ev[key] : '';
	}

	/* One event (an object) -> {kind, text}, or null when it shows
	 * nothing. state (an object kept across a prompt's events) remembers
	 * whether a message was shown, so an answer given only in the end's
	 * result still shows. */
	function render(ev, width, state) {
		if (!ev || typeof ev !== 'object' || typeof ev.type !== 'string')
			return null;
		state = state || {};
		switch (ev.type) {
		case 'start': {
			let t = clean(str(ev, 'agent') || 'agent');
			if (str(ev, 'model'))
				t += ', model ' + clean(ev.model);
			if (str(ev, 'session'))
				t += ', session ' + clean(ev.session);
			return { kind: 'start', text: t };
		}
		case 'message':
			if (!str(ev, 'text'))
				return null;
			state.said = true;
			return { kind: 'message', text: clean(ev.text, true) };
		case 'tool_call': {
			const arg = toolArgument(ev.input);
			const line = (str(ev, 'name') || 'tool') + (arg !== null ? ' ' + arg : '');
			return { kind: 'tool', text: '→ ' + cut(clean(line), width ? Math.max(width - 2, 1) : 0) };
		}
		case 'tool_result': {
			const failed = ev.is_error === true;
			const out = str(ev, 'output').replace(/^[\r\n]+/, '');
			const lines = out.split('\n');
			if (lines.length > 1 && lines[lines.length - 1] === '')
				lines.pop();
			const more = lines.length - 1;
			const tail = more > 0 ? ` (+${more} lines)` : '';
			const first = out === '' ? (failed ? 'failed' : '(no output)')
				: cut(clean(lines[0]), width ? Math.max(width - 4 - tail.length, 1) : 0);
			return { kind: failed ? 'tool-error' : 'result', text: (failed ? '  ✗ ' : '  ← ') + first + tail };
		}
		case 'usage':
			if (!Number.isInteger(ev.input_tokens) || !Number.isInteger(ev.output_tokens))
				return null;
			return { kind: 'usage', text: `${ev.input_tokens} input tokens, ${ev.output_tokens} output tokens` };
		case 'error':
			return { kind: 'error', text: 'agent error: ' + (clean(str(ev, 'message'), true) || '(no message)') };
		case 'end': {
			const code = Number.isInteger(ev.exit) && ev.exit >= 0 && ev.exit <= 255 ? ev.exit : 1;
			state.ended = true;
			state.exit = code;
			if (!state.said && str(ev, 'result'))
				return { kind: 'message', text: clean(ev.result, true), exit: code };
			return { kind: 'end', text: 'exit ' + code, exit: code };
		}
		default:
			return null;
		}
	}

	/* A reader's chunks -> whole lines: returns the complete lines of
	 * carry + chunk, and leaves what follows the last newline in
	 * holder.carry. */
	function lines(holder, chunk) {
		const all = (holder.carry || '') + chunk;
		const parts = all.split('\n');
		holder.carry = parts.pop();
		return parts.map((l) => l.replace(/\r$/, '')).filter((l) => l !== '');
	}

	/* One line of `events` -> its event object, or null (not JSON, not an
	 * object with a string type). */
	function parse(line) {
		try {
			const ev = JSON.parse(line);
			return ev && typeof ev === 'object' && !Array.isArray(ev) && typeof ev.type === 'string' ? ev : null;
		} catch (e) {
			return null;
		}
	}

	const api = { render, lines, parse, clean, cut, toolArgument };
	if (typeof module === 'object' && module.exports)
		module.exports = api;
	else
		root.PaddockPrompt = api;
})(typeof window !== 'undefined' ? window : this);
