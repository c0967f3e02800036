#!/usr/bin/env python3
"""fake-model.py - a scripted model server for the agents' tests.

Speaks the Anthropic Messages API (POST /v1/messages, streaming or not,
/v1/messages/count_tokens, GET /v1/models), the OpenAI Responses API
(POST /v1/responses, streaming) and Chat Completions (POST
/v1/chat/completions, streaming or not). Paths are matched on their end, so
a base URL with or without /v1 both work.

The script, for every agent alike: a request whose conversation holds no
tool result after its last prompt, and that offers a tool able to write a file, is answered
with ONE call of that tool writing hello.txt (the content: --content, else
the text after "hello.txt with content:" in the prompt) in the working directory the agent
told the model about (its system prompt), else relative. A request that
carries a tool result gets the final text "Wrote hello.txt". Anything else
(titles, summaries, quota probes: no write tool offered) gets a short text.

A prompt holding the word PADDOCK-HANG is answered only after --hang
seconds (default 60): a test kills the agent while it waits. On each
--silent address (same port) connections are accepted and never answered:
an agent pointed there runs until it is killed.

Every request is logged as a JSON line to --log: time, method, path, the
API key it carried (x-api-key or Authorization: Bearer), the model, stream,
and what the server answered (tool name, "final" or "text"). --dump DIR
also writes each request's headers and body to DIR/N.json (to study an
agent).

python3 standard library only. A plain threaded TCP server, not
http.server's HTTPServer: that one looks its own name up in DNS at bind,
which hangs where there is no resolver.
"""
import argparse
import http.server
import json
import re
import socket
import socketserver
import sys
import threading
import time
import uuid

ARGS = None
LOCK = threading.Lock()
COUNTER = [0]

WRITE_TOOLS = ["Write", "write", "write_file", "apply_patch", "shell", "exec_command",
               "Bash", "bash", "local_shell", "shell_command", "exec"]


def log(entry):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def dump(headers, body):
    if not ARGS.dump:
        return
    with LOCK:
        COUNTER[0] += 1
        n = COUNTER[0]
    with open("%s/%03d.json" % (ARGS.dump, n), "w") as f:
        json.dump({"headers": dict(headers), "body": body}, f, indent=1)


def text_of(content):
    """The text of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict):
                for k in ("text", "input_text", "content"):
                    if isinstance(b.get(k), str):
                        out.append(b[k])
                        break
    return "\n".join(out)


def find_cwd(*texts):
    pats = [r"<cwd>([^<\n]+)</cwd>", r"[Ww]orking directory:\s*(/[^\s<]+)",
            r"[Cc]urrent working directory:\s*(/[^\s<]+)", r"\bcwd:\s*(/[^\s<]+)"]
    for t in texts:
        for p in pats:
            m = re.search(p, t or "")
            if m:
                return m.group(1).strip().rstrip(".")
    return None


def content_for(prompt):
    if ARGS.content is not None:
        return ARGS.content
    m = re.search(r"hello\.txt with content:\s*([^\n\"'<]+)", prompt or "")
    return m.group(1).strip() if m else "hello from paddock"


def pick_tool(names):
    for want in WRITE_TOOLS:
        if want in names:
            return want
    return None


def tool_input(name, path, content, cwd, schema_props):
    """The arguments of a call of tool NAME writing CONTENT to PATH."""
    shell = "printf '%%s\\n' '%s' > %s" % (content.replace("'", "'\\''"), path)
    if name == "apply_patch":
        patch = "*** Begin Patch\n*** Add File: %s\n+%s\n*** End Patch\n" % (path, content)
        if "input" in schema_props or not schema_props:
            return {"input": patch}
        return {"patch": patch}
    if name in ("shell", "local_shell"):
        d = {"command": ["bash", "-lc", shell]}
        if cwd:
            d["workdir"] = cwd
        return d
    if name == "shell_command":
        d = {"command": shell}
        if cwd:
            d["workdir"] = cwd
        return d
    if name == "exec":
        # codex's code mode: JavaScript that calls its nested tools.
        return {"input": "await tools.exec_command(%s);\ntext('done');\n"
                % json.dumps({"cmd": shell, "workdir": cwd} if cwd else {"cmd": shell})}
    if name == "exec_command":
        d = {"cmd": shell}
        if cwd:
            d["workdir"] = cwd
        return d
    if name in ("Bash", "bash"):
        return {"command": shell, "description": "Write hello.txt"}
    keys = {"file_path", "path", "filePath", "filename"}
    key = next((k for k in ("file_path", "filePath", "path", "filename") if k in schema_props),
               None)
    if key is None:
        key = "file_path" if name == "Write" else "path"
    _ = keys
    return {key: path, "content": content + "\n"}


def hang(prompt):
    """A PADDOCK-HANG prompt's answer waits (after its request is logged)."""
    if "PADDOCK-HANG" in (prompt or ""):
        time.sleep(ARGS.hang)


def plan(tools, has_result, prompt, cwd):
    """(kind, tool name, input): kind is "tool", "final" or "text"."""
    if has_result:
        return ("final", None, None)
    names = [t[0] for t in tools]
    name = pick_tool(names)
    if name is None:
        return ("text", None, None)
    props = dict(tools)[name]
    content = content_for(prompt)
    path = (cwd.rstrip("/") + "/hello.txt") if cwd else "hello.txt"
    return ("tool", name, tool_input(name, path, content, cwd, props))


def schema_props(schema):
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return schema["properties"]
    return {}


FINAL = "Wrote hello.txt"
TEXT = "Paddock test"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def key(self):
        k = self.headers.get("x-api-key")
        if k:
            return k
        a = self.headers.get("authorization", "")
        if a.lower().startswith("bearer "):
            return a[7:]
        return a or None

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def read_chunked(self):
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, event, obj):
        data = ""
        if event:
            data += "event: %s\n" % event
        data += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.wfile.write(data.encode())
        self.wfile.flush()

    def record(self, body, answer):
        log({"time": time.time(), "method": self.command, "path": self.path,
             "key": self.key(), "model": body.get("model") if isinstance(body, dict) else None,
             "stream": bool(body.get("stream")) if isinstance(body, dict) else False,
             "answer": answer})

    def do_GET(self):
        dump(self.headers, None)
        path = self.path.split("?")[0]
        self.record({}, "get")
        if path.endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "type": "model", "display_name": m,
                 "created": 0, "created_at": "2025-01-01T00:00:00Z", "owned_by": "fake"}
                for m in ("fake-model", "claude-sonnet-4-5", "gpt-5")],
                "models": [], "has_more": False, "first_id": None, "last_id": None})
            return
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                       "message": "no such path"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.body()
        dump(self.headers, body)
        if not isinstance(body, dict):
            body = {}
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            self.record(body, "count")
            self.send_json(200, {"input_tokens": 42})
        elif path.endswith("/messages"):
            self.anthropic(body)
        elif path.endswith("/responses"):
            self.openai_responses(body)
        elif path.endswith("/chat/completions"):
            self.chat(body)
        else:
            self.record(body, "404")
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": "no such path"}})

    # --- Anthropic Messages -------------------------------------------
    def anthropic(self, body):
        msgs = body.get("messages") or []
        tools = [(t.get("name"), schema_props(t.get("input_schema")))
                 for t in body.get("tools") or [] if isinstance(t, dict)]
        has_result = False
        prompt = ""
        for m in msgs:
            if not isinstance(m, dict) or m.get("role") != "user":
                continue
            c = m.get("content")
            if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                           for b in c):
                has_result = True
            else:
                has_result = False
                prompt = text_of(c)
        system = body.get("system")
        system = text_of(system) if not isinstance(system, str) else system
        cwd = find_cwd(system, prompt, "\n".join(text_of(m.get("content")) for m in msgs
                                                  if isinstance(m, dict)))
        kind, name, inp = plan(tools, has_result, prompt, cwd)
        self.record(body, name or kind)
        hang(prompt)
        model = body.get("model") or "fake-model"
        mid = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if kind == "tool":
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name,
                     "input": inp}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": FINAL if kind == "final" else TEXT}
            stop = "end_turn"
        if not body.get("stream"):
            self.send_json(200, {"id": mid, "type": "message", "role": "assistant",
                                 "model": model, "content": [block], "stop_reason": stop,
                                 "stop_sequence": None, "usage": usage})
            return
        self.start_sse()
        self.sse("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": dict(usage, output_tokens=1)}})
        if kind == "tool":
            self.sse("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": dict(block, input={})})
            self.sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "input_json_delta",
                                                       "partial_json": json.dumps(inp)}})
        else:
            self.sse("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}})
            self.sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta",
                                                       "text": block["text"]}})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        self.sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 20}})
        self.sse("message_stop", {"type": "message_stop"})

    # --- OpenAI Responses ---------------------------------------------
    def openai_responses(self, body):
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        items = items if isinstance(items, list) else []
        has_result = False
        prompt = ""
        texts = [body.get("instructions") or ""]
        for it in items:
            if not isinstance(it, dict):
                continue
            t = it.get("type")
            if t in ("function_call_output", "custom_tool_call_output",
                     "local_shell_call_output"):
                has_result = True
            elif it.get("role") == "user":
                s = text_of(it.get("content"))
                texts.append(s)
                if "<environment_context>" not in s and \
                        "AGENTS.md" not in s and "<user_instructions>" not in s:
                    prompt = s
                    has_result = False
            elif it.get("role") in ("developer", "system"):
                texts.append(text_of(it.get("content")))
        # Tools come in the request's tools, or (codex's newer models) in
        # input items of type additional_tools, grouped in namespaces.
        flat = []
        offered = list(body.get("tools") or [])
        for it in items:
            if isinstance(it, dict) and it.get("type") == "additional_tools":
                offered += it.get("tools") or []
        for t in offered:
            if isinstance(t, dict) and t.get("type") == "namespace":
                flat += [x for x in t.get("tools") or [] if isinstance(x, dict)]
            elif isinstance(t, dict):
                flat.append(t)
        tools = []
        for t in flat:
            name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
            tools.append((name, schema_props(t.get("parameters"))))
        custom = {t.get("name") for t in flat if t.get("type") == "custom"}
        cwd = find_cwd(*texts)
        kind, name, inp = plan(tools, has_result, prompt, cwd)
        self.record(body, name or kind)
        hang(prompt)
        model = body.get("model") or "fake-model"
        rid = "resp_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 120}
        call_id = "call_" + uuid.uuid4().hex[:24]
        if kind == "tool" and name in custom:
            item = {"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:16],
                    "status": "completed", "call_id": call_id, "name": name,
                    "input": inp.get("input") or inp.get("patch")}
        elif kind == "tool":
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16],
                    "status": "completed", "call_id": call_id, "name": name,
                    "arguments": json.dumps(inp)}
        else:
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:16],
                    "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "annotations": [],
                                 "text": FINAL if kind == "final" else TEXT}]}
        resp = {"id": rid, "object": "response", "created_at": int(time.time()),
                "status": "completed", "model": model, "output": [item], "usage": usage,
                "error": None, "incomplete_details": None}
        if not body.get("stream"):
            self.send_json(200, resp)
            return
        self.start_sse()
        seq = [0]

        def ev(t, obj):
            obj = dict(obj, type=t, sequence_number=seq[0])
            seq[0] += 1
            self.sse(t, obj)
        ev("response.created", {"response": dict(resp, status="in_progress", output=[],
                                                  usage=None)})
        ev("response.in_progress", {"response": dict(resp, status="in_progress", output=[],
                                                     usage=None)})
        if item["type"] == "message":
            ev("response.output_item.added", {"output_index": 0,
                                              "item": dict(item, status="in_progress",
                                                           content=[])})
            text = item["content"][0]["text"]
            ev("response.content_part.added", {"item_id": item["id"], "output_index": 0,
                                               "content_index": 0,
                                               "part": {"type": "output_text", "text": "",
                                                        "annotations": []}})
            ev("response.output_text.delta", {"item_id": item["id"], "output_index": 0,
                                              "content_index": 0, "delta": text})
            ev("response.output_text.done", {"item_id": item["id"], "output_index": 0,
                                             "content_index": 0, "text": text})
            ev("response.content_part.done", {"item_id": item["id"], "output_index": 0,
                                              "content_index": 0,
                                              "part": item["content"][0]})
        else:
            ev("response.output_item.added", {"output_index": 0, "item": item})
        ev("response.output_item.done", {"output_index": 0, "item": item})
        ev("response.completed", {"response": resp})

    # --- OpenAI Chat Completions --------------------------------------
    def chat(self, body):
        msgs = body.get("messages") or []
        has_result = False
        prompt = ""
        texts = []
        for m in msgs:
            if isinstance(m, dict):
                texts.append(text_of(m.get("content")))
                if m.get("role") == "tool":
                    has_result = True
                elif m.get("role") == "user":
                    prompt = text_of(m.get("content"))
                    has_result = False
        tools = [((t.get("function") or {}).get("name"),
                  schema_props((t.get("function") or {}).get("parameters")))
                 for t in body.get("tools") or [] if isinstance(t, dict)]
        kind, name, inp = plan(tools, has_result, prompt, find_cwd(*texts))
        self.record(body, name or kind)
        hang(prompt)
        model = body.get("model") or "fake-model"
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        call = {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": name, "arguments": json.dumps(inp)}} if kind == "tool" \
            else None
        text = None if call else (FINAL if kind == "final" else TEXT)
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text}
            if call:
                msg["tool_calls"] = [call]
            self.send_json(200, {"id": cid, "object": "chat.completion",
                                 "created": int(time.time()), "model": model,
                                 "choices": [{"index": 0, "message": msg,
                                              "finish_reason": finish}], "usage": usage})
            return
        self.start_sse()
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def chunk(delta, fin=None, **extra):
            self.sse(None, dict(base, choices=[{"index": 0, "delta": delta,
                                                "finish_reason": fin}], **extra))
        chunk({"role": "assistant", "content": ""})
        if call:
            chunk({"tool_calls": [dict(call, index=0)]})
        else:
            chunk({"content": text})
        chunk({}, finish)
        self.sse(None, dict(base, choices=[], usage=usage))
        self.sse(None, "[DONE]")


def hold(sock):
    """Accepts connections on SOCK and keeps them open, unanswered."""
    held = []
    while True:
        c, _ = sock.accept()
        held.append(c)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def main():
    global ARGS
    p = argparse.ArgumentParser(description="a scripted fake model server")
    p.add_argument("--listen", action="append", default=[],
                   help="address to listen on (repeatable; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--content", default=None, help="what hello.txt is to hold")
    p.add_argument("--log", required=True, help="JSON lines, one per request")
    p.add_argument("--dump", default=None, help="directory for whole requests")
    p.add_argument("--hang", type=float, default=60, help="seconds a PADDOCK-HANG prompt waits")
    p.add_argument("--silent", action="append", default=[],
                   help="address where connections are accepted, never answered (repeatable)")
    ARGS = p.parse_args()
    servers = [Server((a, ARGS.port), Handler) for a in (ARGS.listen or ["127.0.0.1"])]
    for a in ARGS.silent:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, ARGS.port))
        s.listen(64)
        threading.Thread(target=hold, args=(s,), daemon=True).start()
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    sys.stdout.flush()
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
