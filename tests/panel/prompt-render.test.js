/* prompt-render.test.js - the panel's prompt page renders a prompt's
 * normalized events as `paddock prompt` prints them (web/panel/
 * prompt-render.js, pure, loaded here under node): tool calls one line
 * each, cut to the width; results short; messages whole; the answer from
 * end's result when no message came; and nothing an agent sends comes out
 * as a control character (the page puts the text in with textContent, so
 * HTML is inert anyway; control characters would still confuse a reader
 * copying it to a terminal). Run by tests/check-panel-prompt.sh. */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');

const R = require(path.join(process.env.TOP_SRCDIR || path.join(__dirname, '../..'),
	'web/panel/prompt-render.js'));

function show(lines, width) {
	const state = {};
	const out = [];
	for (const l of lines) {
		const r = R.render(R.parse(l), width || 0, state);
		if (r)
			out.push(r);
	}
	return { out, state };
}

test('tool calls: name and the most telling argument', () => {
	const { out } = show([
		'{"type":"tool_call","time":"T","id":"1","name":"Write","input":{"content":"x","file_path":"hello.txt"}}',
		'{"type":"tool_call","time":"T","id":"2","name":"shell","input":{"command":["bash","-lc","ls\\nwc"]}}',
		'{"type":"tool_call","time":"T","id":"3","name":"odd","input":{"n":1,"what":"thing"}}',
		'{"type":"tool_call","time":"T","id":"4","name":"TodoWrite","input":{"todos":[]}}',
	]);
	assert.deepStrictEqual(out.map((o) => o.text), [
		'→ Write hello.txt', '→ shell bash -lc ls wc', '→ odd thing', '→ TodoWrite']);
	assert.ok(out.every((o) => o.kind === 'tool'));
});

test('tool calls are cut to the width, on a character', () => {
	const { out } = show([
		'{"type":"tool_call","time":"T","id":"1","name":"Bash","input":{"command":"' + 'é'.repeat(80) + '"}}',
	], 20);
	assert.strictEqual(Array.from(out[0].text).length, 20);
	assert.ok(out[0].text.endsWith('é…'));
});

test('results: first line and how many more; errors marked', () => {
	const { out } = show([
		'{"type":"tool_result","time":"T","id":"1","output":"\\nfirst\\nsecond\\nthird\\n","is_error":false}',
		'{"type":"tool_result","time":"T","id":"2","output":"nope\\nat x","is_error":true}',
		'{"type":"tool_result","time":"T","id":"3","output":"","is_error":false}',
	]);
	assert.deepStrictEqual(out.map((o) => [o.kind, o.text]), [
		['result', '  ← first (+2 lines)'], ['tool-error', '  ✗ nope (+1 lines)'],
		['result', '  ← (no output)']]);
});

test('messages whole, start, usage, errors, end', () => {
	const { out, state } = show([
		'{"type":"start","time":"T","agent":"claude","session":"S","model":"m"}',
		'{"type":"message","time":"T","text":"line one\\n\\tline two"}',
		'{"type":"usage","time":"T","input_tokens":3,"output_tokens":4}',
		'{"type":"error","time":"T","message":"rate limited"}',
		'{"type":"end","time":"T","exit":2,"result":"line one"}',
	]);
	assert.deepStrictEqual(out.map((o) => [o.kind, o.text]), [
		['start', 'claude, model m, session S'], ['message', 'line one\n\tline two'],
		['usage', '3 input tokens, 4 output tokens'], ['error', 'agent error: rate limited'],
		['end', 'exit 2']]);
	assert.strictEqual(state.ended, true);
	assert.strictEqual(state.exit, 2);
});

test('an answer only in the result is shown', () => {
	const { out } = show(['{"type":"end","time":"T","exit":0,"result":"the answer"}']);
	assert.deepStrictEqual(out.map((o) => [o.kind, o.text]), [['message', 'the answer']]);
});

test('not an event: nothing', () => {
	const { out } = show(['not json', '[1]', '{"no":"type"}', '{"type":"future","text":"x"}', '']);
	assert.deepStrictEqual(out, []);
});

test('hostile text never comes out as a control character', () => {
	const evil = '\\u001b[31mred\\u001b]0;t\\u0007 \\u009b2J \\u007f \\r\\u0000x';
	const { out } = show([
		`{"type":"start","time":"T","agent":"a${evil}","model":"${evil}"}`,
		`{"type":"message","time":"T","text":"${evil}"}`,
		`{"type":"tool_call","time":"T","id":"1","name":"${evil}","input":{"path":"${evil}\\n"}}`,
		`{"type":"tool_result","time":"T","id":"1","output":"${evil}","is_error":true}`,
		`{"type":"error","time":"T","message":"${evil}"}`,
	]);
	assert.strictEqual(out.length, 5);
	for (const o of out) {
		// eslint-disable-next-line no-control-regex
		assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(o.text), JSON.stringify(o.text));
		if (o.kind !== 'message' && o.kind !== 'error')
			assert.ok(!/[\n\t]/.test(o.text), JSON.stringify(o.text));
	}
	assert.ok(out[1].text.startsWith('\\x1b[31mred'));
});

test('chunks become whole lines, whatever the cuts', () => {
	const h = {};
	assert.deepStrictEqual(R.lines(h, '{"a"'), []);
	assert.deepStrictEqual(R.lines(h, ':1}\n{"b":2}\r\n{"c"'), ['{"a":1}', '{"b":2}']);
	assert.deepStrictEqual(R.lines(h, ':3}\n'), ['{"c":3}']);
	assert.strictEqual(h.carry, '');
});
