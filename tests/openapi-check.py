#!/usr/bin/env python3
"""openapi-check.py - checks docs/openapi.yaml, alone and against a daemon.

  openapi-check.py lint SPEC
      the document itself: YAML, OpenAPI 3.1.x, every $ref resolves, every
      operation has responses and a unique operationId, every path
      parameter is declared (and every declared one is in the path),
      schemas are valid JSON Schema 2020-12, examples fit their schemas.
  openapi-check.py routes SPEC WEBDIR
      every route literal of the daemon's router (strcmp/strncmp of the
      URL in WEBDIR/*.c, macros resolved) is a described path or prefix.
  openapi-check.py live SPEC URL TOKEN FIXTURES PHASE
      against a running daemon; FIXTURES is a JSON file naming the objects
      the test made. PHASE:
        ops      every operation, in an order that keeps the objects
                 (reads, then writes, then mkdirs, then deletes of objects
                 made for it): the status is documented, the content type
                 is one the response lists, a JSON body (or a text value
                 with a pattern) validates against the documented schema;
        noauth   every operation that needs a token, without one: 401 and
                 an Error body;
        missing  every tree or preview operation on a box that does not
                 exist: 404 and an Error body;
        walk     the tree as the daemon lists it (every directory from
                 /v1/tree/ down, the first level of root/ and data/): every
                 path matches a described path, with parameters that fit
                 and the methods its mode allows; every described tree
                 path matches something listed (but those the fixtures
                 name in walk_may_miss).

Prints what fails as TAP diagnostics ("# ...") and exits 1 if anything does.
Uses the standard library, PyYAML and jsonschema only.
"""
import http.client
import io
import json
import os
import re
import sys
import tarfile
import urllib.parse

import yaml
import jsonschema

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
failures = []


def fail(msg):
    failures.append(msg)
    print("# " + msg)


# --- the document -------------------------------------------------------------


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def pointer(doc, ref):
    if not ref.startswith("#/"):
        raise KeyError(ref)
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[part]
    return node


def deref(doc, node):
    """node with a top-level $ref followed (siblings of the $ref kept)."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        target = pointer(doc, node["$ref"])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = dict(target, **extra) if isinstance(target, dict) else target
        seen += 1
        if seen > 32:
            raise KeyError("$ref loop at " + str(node))
    return node


def inline(doc, schema, depth=0):
    """A schema with every $ref replaced by its target (the document has no
    recursive schemas), for validation without a resolver (jsonschema's
    resolver API differs between the versions Debian and pip ship)."""
    if depth > 64:
        raise ValueError("schema too deep (a recursive $ref?)")
    if isinstance(schema, dict):
        if "$ref" in schema:
            schema = deref(doc, schema)
        return {k: inline(doc, v, depth + 1) for k, v in schema.items()}
    if isinstance(schema, list):
        return [inline(doc, v, depth + 1) for v in schema]
    return schema


def operations(doc):
    """(path, method, operation, parameters) of every operation, parameters
    being the path item's merged with the operation's (resolved)."""
    for path, item in doc.get("paths", {}).items():
        item = deref(doc, item)
        common = [deref(doc, p) for p in item.get("parameters", [])]
        for m in METHODS:
            if m not in item:
                continue
            op = item[m]
            params = {(p["name"], p["in"]): p for p in common}
            for p in op.get("parameters", []):
                p = deref(doc, p)
                params[(p["name"], p["in"])] = p
            yield path, m, op, list(params.values())


def template_params(path):
    return re.findall(r"\{([^}]+)\}", path)


def lint(spec):
    try:
        doc = load(spec)
    except (OSError, yaml.YAMLError) as e:
        fail("%s: not valid YAML: %s" % (spec, e))
        return
    if not isinstance(doc, dict):
        fail("the document is not a mapping")
        return
    if not re.fullmatch(r"3\.1\.\d+", str(doc.get("openapi", ""))):
        fail("openapi is %r, not 3.1.x" % doc.get("openapi"))
    for k in ("title", "version"):
        if not doc.get("info", {}).get(k):
            fail("info.%s is missing" % k)
    if not doc.get("paths"):
        fail("no paths")

    def walk_refs(node, where):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    pointer(doc, ref)
                except (KeyError, TypeError, IndexError):
                    fail("%s: $ref %s does not resolve" % (where, ref))
            for k, v in node.items():
                walk_refs(v, where + "/" + str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk_refs(v, "%s/%d" % (where, i))

    walk_refs(doc, "#")
    if failures:
        return

    schemes = set(doc.get("components", {}).get("securitySchemes", {}))
    for req in doc.get("security", []):
        for name in req:
            if name not in schemes:
                fail("global security names unknown scheme %s" % name)
    ids = {}
    for path, m, op, params in operations(doc):
        where = "%s %s" % (m.upper(), path)
        oid = op.get("operationId")
        if not oid:
            fail(where + ": no operationId")
        elif oid in ids:
            fail("%s: operationId %s also on %s" % (where, oid, ids[oid]))
        else:
            ids[oid] = where
        if not op.get("responses"):
            fail(where + ": no responses")
        for code in op.get("responses", {}):
            if code != "default" and not re.fullmatch(r"[1-5](\d\d|XX)", str(code)):
                fail("%s: response code %r" % (where, code))
        declared = {p["name"] for p in params if p.get("in") == "path"}
        used = set(template_params(path))
        for name in used - declared:
            fail("%s: path parameter {%s} is not declared" % (where, name))
        for name in declared - used:
            fail("%s: parameter %s is declared in: path but not in the path" % (where, name))
        for p in params:
            if p.get("in") == "path" and p.get("required") is not True:
                fail("%s: path parameter %s must be required: true" % (where, p["name"]))
            if "schema" not in p and "content" not in p:
                fail("%s: parameter %s has no schema" % (where, p["name"]))
            if "example" in p and "schema" in p:
                check_value(doc, p["schema"], p["example"],
                            "%s: example of parameter %s" % (where, p["name"]))
        for req in op.get("security", []):
            for name in req:
                if name not in schemes:
                    fail("%s: security names unknown scheme %s" % (where, name))
        body = op.get("requestBody")
        if body:
            for mt, media in deref(doc, body).get("content", {}).items():
                if "example" in media and "schema" in media:
                    ex = media["example"]
                    if mt == "text/plain" and isinstance(ex, str) or mt != "text/plain":
                        check_value(doc, media["schema"], ex,
                                    "%s: example of the %s body" % (where, mt))
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        try:
            jsonschema.Draft202012Validator.check_schema(inline(doc, schema))
        except jsonschema.SchemaError as e:
            fail("schema %s is not valid JSON Schema 2020-12: %s" % (name, e.message))
    print("# %d paths, %d operations" % (len(doc["paths"]), len(ids)))


def check_value(doc, schema, value, where):
    try:
        s = inline(doc, schema)
        jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker()).validate(value)
    except jsonschema.ValidationError as e:
        fail("%s: %r does not fit: %s" % (where, value, e.message))
        return False
    except jsonschema.SchemaError as e:
        fail("%s: bad schema: %s" % (where, e.message))
        return False
    return True


# --- the router -------------------------------------------------------------------------


def routes(spec, webdir):
    doc = load(spec)
    described = list(doc["paths"])
    macros = {}
    sources = {}
    for name in sorted(os.listdir(webdir)):
        if name.endswith((".c", ".h")):
            with open(os.path.join(webdir, name), encoding="utf-8") as f:
                sources[name] = f.read()
    for text in sources.values():
        for m in re.finditer(r'^#define\s+(\w+)\s+"([^"]*)"', text, re.M):
            macros[m.group(1)] = m.group(2)
    found = []
    pat = re.compile(r'\b(strn?cmp)\(\s*url\s*,\s*("(?:[^"\\]|\\.)*"|\w+)')
    for name, text in sources.items():
        for m in pat.finditer(text):
            arg = m.group(2)
            lit = arg[1:-1] if arg.startswith('"') else macros.get(arg)
            if lit is None:
                fail("%s: %s(url, %s): cannot resolve %s" % (name, m.group(1), arg, arg))
                continue
            found.append((name, m.group(1), lit))
    if not found:
        fail("no route found in %s: has the router changed shape?" % webdir)
    for name, fn, lit in found:
        if fn == "strcmp":
            ok = lit in described or lit + "/" in described
        else:
            ok = any(p.startswith(lit) and p != lit for p in described) or \
                any(p.startswith(lit) for p in described)
        if not ok:
            fail("%s: the route %s %r is not described in %s" %
                 (name, "=" if fn == "strcmp" else "prefix", lit, spec))
    print("# %d route literals: %s" % (len(found), " ".join(sorted({l for _, _, l in found}))))


# --- against the daemon -------------------------------------------------------------------


class Client:
    def __init__(self, url, token):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.token = token

    def request(self, method, path, body=None, headers=None, auth=True, timeout=30):
        h = dict(headers or {})
        if auth:
            h["Authorization"] = "Bearer " + self.token
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()


def fill(path, values):
    def sub(m):
        name = m.group(1)
        v = str(values[name])
        return urllib.parse.quote(v, safe="/" if name == "path" else "")
    return re.sub(r"\{([^}]+)\}", sub, path)


def object_op(path, method):
    """mkdir or rmdir of an object: the last segment names it."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if not path.startswith("/v1/tree/") or not last.startswith("{") or last == "{path}":
        return False
    return method == "delete" or (method == "put" and path.endswith("/"))


def values_for(doc, path, method, op, params, fx):
    out = {}
    victim = object_op(path, method)
    own = fx.get("op_values", {}).get(op.get("operationId"), {})
    for p in params:
        if p["in"] != "path":
            continue
        name = p["name"]
        if name in own:
            out[name] = own[name]
        elif name == "path" and path.startswith("/v1/tree/"):
            # A directory that exists to read, one to make and remove.
            kind = "file" if not path.endswith("/") else "listdir" if method == "get" else "dir"
            out[name] = fx["files"][kind]
        elif victim and name in fx["victim"]:
            out[name] = fx["victim"][name]
        elif name in fx["keep"]:
            out[name] = fx["keep"][name]
        elif "example" in p:
            out[name] = p["example"]
        else:
            raise KeyError("no value for {%s} of %s %s" % (name, method.upper(), path))
    return out


def small_tar():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"pushed by openapi-check\n"
        info = tarfile.TarInfo("openapi-check/pushed.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build(doc, path, method, op, params, fx, values=None, extra_query=()):
    if values is None:
        values = values_for(doc, path, method, op, params, fx)
    url = fill(path, values)
    query = [(p["name"], str(p["example"])) for p in params
             if p["in"] == "query" and "example" in p]
    query += list(extra_query)
    if query:
        url += "?" + urllib.parse.urlencode(query)
    body, headers = None, {}
    oid = op.get("operationId")
    if oid in fx.get("bodies", {}):
        b = fx["bodies"][oid]
        body = json.dumps(b).encode() if not isinstance(b, str) else b.encode()
        headers["Content-Type"] = "application/json" if not isinstance(b, str) else "text/plain"
    elif ("format", "tar") in extra_query and "application/x-tar" in \
            deref(doc, op.get("requestBody", {})).get("content", {}):
        body, headers["Content-Type"] = small_tar(), "application/x-tar"
    elif op.get("requestBody"):
        content = deref(doc, op["requestBody"]).get("content", {})
        for mt, media in content.items():
            if "example" in media:
                ex = media["example"]
                body = ex.encode() if isinstance(ex, str) else json.dumps(ex).encode()
                headers["Content-Type"] = mt
            break
    auth = op.get("security", doc.get("security")) != []
    return url, body, headers, auth


def check_answer(doc, where, op, status, headers, data):
    responses = op.get("responses", {})
    resp = responses.get(str(status))
    if resp is None:
        resp = responses.get("%dXX" % (status // 100), responses.get("default"))
    if resp is None:
        fail("%s: status %d is not documented (%s); body %r" %
             (where, status, ", ".join(sorted(responses)), data[:200]))
        return
    resp = deref(doc, resp)
    content = resp.get("content")
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if not content:
        if data and str(status) in responses and status != 101:
            fail("%s: %d documents no body, got %s %r" % (where, status, ctype, data[:100]))
        return
    if not data and not ctype:
        return
    media = content.get(ctype)
    if media is None:
        fail("%s: %d answered %s, documented: %s" % (where, status, ctype or "no type",
                                                     ", ".join(content)))
        return
    schema = media.get("schema")
    if schema is None:
        return
    s = inline(doc, schema)
    if s.get("format") == "binary" or s.get("contentMediaType"):
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        fail("%s: the body is not UTF-8" % where)
        return
    if ctype == "application/json" or s.get("type") in ("object", "array") or \
            "oneOf" in s or ("$ref" in schema and s.get("type") != "string"):
        try:
            value = json.loads(text)
        except ValueError as e:
            fail("%s: the body is not JSON (%s): %r" % (where, e, text[:200]))
            return
    else:
        value = text
    check_value(doc, s, value, "%s: %d body" % (where, status))


def op_order(item, last=()):
    path, method = item[0], item[1]
    depth = path.rstrip("/").count("/")
    if item[2].get("operationId") in last:
        return (4, last.index(item[2].get("operationId")))
    if method in ("get", "head", "post", "patch", "options"):
        return (0, 0)
    if method == "put" and not object_op(path, method):
        return (1, 0)
    if method == "put":
        return (2, depth)
    return (3, -depth)


def live_ops(doc, cl, fx):
    # Those named "last" (a restore, which restarts the box and ends its
    # jobs) go after everything else.
    last = fx.get("last", [])
    ops = sorted(operations(doc), key=lambda item: op_order(item, last))
    n = 0
    only_errors = []
    for path, m, op, params in ops:
        # The request, then one more for each named example of a query
        # parameter (format=text, format=tar ...).
        variants = [()]
        for p in params:
            if p["in"] == "query" and "example" not in p:
                for ex in p.get("examples", {}).values():
                    variants.append(((p["name"], str(deref(doc, ex)["value"])),))
        best = 999
        for extra in variants:
            url, body, headers, auth = build(doc, path, m, op, params, fx, extra_query=extra)
            where = "%s %s (%s)" % (m.upper(), url, op.get("operationId"))
            try:
                status, h, data = cl.request(m.upper(), url, body, headers, auth)
            except OSError as e:
                fail("%s: %s" % (where, e))
                continue
            n += 1
            if os.environ.get("OPENAPI_CHECK_VERBOSE"):
                print("# %s -> %d %s %s" % (where, status, h.get("content-type"), data[:60]))
            check_answer(doc, where, op, status, h, data)
            best = min(best, status)
        if best >= 400:
            only_errors.append(op.get("operationId"))
    print("# %d requests" % n)
    # Not a failure: what these objects cannot show (no agent, no desktop
    # in the test's image; jobs already started ...).
    print("# answered only errors here (%d): %s" % (len(only_errors), " ".join(only_errors)))


def live_noauth(doc, cl, fx):
    n = 0
    for path, m, op, params in operations(doc):
        if op.get("security", doc.get("security")) == []:
            continue
        url, body, headers, _ = build(doc, path, m, op, params, fx)
        where = "%s %s without a token" % (m.upper(), url)
        status, h, data = cl.request(m.upper(), url, body, headers, auth=False)
        n += 1
        if status != 401:
            fail("%s: %d, not 401 (%r)" % (where, status, data[:120]))
            continue
        if "401" not in op.get("responses", {}):
            fail("%s: 401 is not documented" % where)
        if h.get("www-authenticate", "").split(" ")[0] != "Bearer":
            fail("%s: no WWW-Authenticate: Bearer" % where)
        check_answer(doc, where, op, status, h, data)
    print("# %d requests" % n)


def live_missing(doc, cl, fx):
    n = 0
    for path, m, op, params in operations(doc):
        if "{box}" not in path or not path.startswith(("/v1/tree/", "/v1/ports/")):
            continue
        if path.rstrip("/").endswith("{box}") and m == "put":
            continue  # that is mkdir: it makes the box
        values = values_for(doc, path, m, op, params, fx)
        values["box"] = fx["missing_box"]
        url, body, headers, _ = build(doc, path, m, op, params, fx, values)
        where = "%s %s (no such box)" % (m.upper(), url)
        status, h, data = cl.request(m.upper(), url, body, headers)
        n += 1
        if status != 404:
            fail("%s: %d, not 404 (%r)" % (where, status, data[:120]))
            continue
        check_answer(doc, where, op, status, h, data)
    print("# %d requests" % n)


def matchers(doc):
    out = []
    for path, item in doc["paths"].items():
        item = deref(doc, item)
        params = {}
        for p in item.get("parameters", []):
            p = deref(doc, p)
            params[p["name"]] = p
        for m in METHODS:
            for p in item.get(m, {}).get("parameters", []) if m in item else []:
                p = deref(doc, p)
                if p["in"] == "path":
                    params[p["name"]] = p
        rx = ""
        for part in re.split(r"(\{[^}]+\})", path):
            if part.startswith("{"):
                name = part[1:-1]
                if name == "path":
                    rx += "(?P<path>.+)" if path.endswith("{path}/") else "(?P<path>.*[^/])"
                else:
                    rx += "(?P<%s>[^/]+)" % name
            else:
                rx += re.escape(part)
        out.append((path, re.compile(rx + r"\Z"), params))
    return out


def live_walk(doc, cl, fx):
    ms = matchers(doc)
    seen = []

    def listing(path):
        status, h, data = cl.request("GET", urllib.parse.quote(path))
        if status != 200:
            fail("GET %s: %d %r" % (path, status, data[:120]))
            return []
        return json.loads(data)["entries"]

    def visit(path, depth_in_root=None, mode=None):
        seen.append((path, mode, depth_in_root is not None))
        if not path.endswith("/"):
            return
        if depth_in_root is not None and depth_in_root >= 1:
            return
        for e in listing(path):
            name = e["name"]
            child = path + name
            in_root = depth_in_root is not None
            mode = int(e["mode"], 8)
            if e["type"] == "dir":
                visit(child + "/", depth_in_root + 1 if in_root else None, mode)
            elif e["type"] == "link" and not in_root and re.search(
                    r"^/v1/tree/(boxes/[^/]+/root|volumes/[^/]+/data)$", child):
                visit(child + "/", 0, mode)
            else:
                seen.append((child, mode if e["type"] == "file" else None, in_root))

    visit("/v1/tree/")
    matched = set()
    bad = 0
    for path, mode, in_root in seen:
        hit = None
        for tmpl, rx, params in ms:
            m = rx.match(path)
            if not m:
                continue
            ok = True
            for name, v in m.groupdict().items():
                p = params.get(name)
                if p and "schema" in p:
                    s = inline(doc, p["schema"])
                    v2 = int(v) if s.get("type") == "integer" and v.isdigit() else v
                    try:
                        jsonschema.Draft202012Validator(s).validate(v2)
                    except jsonschema.ValidationError:
                        ok = False
            if ok:
                hit = tmpl
                matched.add(tmpl)
                break
        if not hit:
            bad += 1
            fail("%s: the daemon serves it; no described path matches" % path)
            continue
        # A tree file's mode says what it takes: read bits a GET, write
        # bits a PUT (files under root/ and data/ take both alike).
        item = doc["paths"][hit]
        if mode is not None and not in_root and not path.endswith("/"):
            if mode & 0o400 and "get" not in item:
                fail("%s: readable (mode %04o) but %s has no GET" % (path, mode, hit))
            if mode & 0o200 and "put" not in item:
                fail("%s: writable (mode %04o) but %s has no PUT" % (path, mode, hit))
            if not mode & 0o400 and "get" in item:
                fail("%s: write-only (mode %04o) but %s has a GET" % (path, mode, hit))
    print("# %d paths walked, %d not described" % (len(seen), bad))
    # The other way: a described tree path the daemon no longer serves
    # (it would answer 404, which every tree operation documents).
    for tmpl, _, _ in ms:
        if tmpl.startswith("/v1/tree/") and tmpl not in matched and \
                tmpl not in fx.get("walk_may_miss", []):
            fail("%s is described, but the tree lists nothing it matches" % tmpl)
    paths_seen = {p for p, _, _ in seen}
    for needed in fx.get("walk_must_see", []):
        if needed not in paths_seen:
            fail("the walk did not reach %s (made by the test)" % needed)


def main(argv):
    if len(argv) >= 3 and argv[1] == "lint":
        lint(argv[2])
    elif len(argv) >= 4 and argv[1] == "routes":
        routes(argv[2], argv[3])
    elif len(argv) >= 7 and argv[1] == "live":
        doc = load(argv[2])
        cl = Client(argv[3], argv[4])
        with open(argv[5], encoding="utf-8") as f:
            fx = json.load(f)
        phase = {"ops": live_ops, "noauth": live_noauth, "missing": live_missing,
                 "walk": live_walk}.get(argv[6])
        if not phase:
            print(__doc__, file=sys.stderr)
            return 2
        phase(doc, cl, fx)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
