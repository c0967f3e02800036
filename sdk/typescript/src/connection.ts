// Which server, with which token, and the HTTP requests on its tree.
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { errorFromResponse, InvalidError, PaddockError } from "./errors.js";

export interface ConnectionOptions {
  /** The server, e.g. "https://paddock.example.com". */
  url?: string;
  /** A token from `paddock login` or POST /v1/login. */
  token?: string;
}

/** The CLI's config file: $PADDOCK_CONFIG, else $XDG_CONFIG_HOME/paddock/
 * config.ini, else ~/.config/paddock/config.ini (%APPDATA% on Windows). */
export function configPath(): string | undefined {
  const env = process.env;
  if (env.PADDOCK_CONFIG) return env.PADDOCK_CONFIG;
  if (process.platform === "win32")
    return env.APPDATA ? join(env.APPDATA, "paddock", "config.ini") : undefined;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, "paddock", "config.ini");
  const home = env.HOME || homedir();
  return home ? join(home, ".config", "paddock", "config.ini") : undefined;
}

/** [server] url and token of the CLI's stored login (a missing file: none). */
async function readConfig(): Promise<{ url?: string; token?: string }> {
  const path = configPath();
  if (!path) return {};
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return {};
    throw new PaddockError(`cannot read ${path}: ${(e as Error).message}`);
  }
  // The INI the CLI writes: "[section]" and "key = value" lines; ";" and
  // "#" start comments, as inih reads them.
  const out: { url?: string; token?: string } = {};
  let section = "";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s;.*$/, "").trim();
    if (!line || line.startsWith(";") || line.startsWith("#")) continue;
    const m = /^\[(.*)\]$/.exec(line);
    if (m) {
      section = m[1].trim();
      continue;
    }
    const eq = line.search(/[=:]/);
    if (eq < 0 || section !== "server") continue;
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if ((key === "url" || key === "token") && value) out[key] = value;
  }
  return out;
}

/** Percent-encodes each segment of a relative tree path; "." and ".."
 * segments are refused (the server would refuse them too). */
export function encodePath(path: string): string {
  return path
    .split("/")
    .filter((s) => s !== "")
    .map((s) => {
      if (s === "." || s === "..")
        throw new InvalidError(`'${path}': '.' and '..' are not allowed in paths`, 0, "EINVAL");
      return encodeURIComponent(s);
    })
    .join("/");
}

/** @internal An answer's body, read: a connection cut meanwhile (a revoked
 * token, the server stopping) is a PaddockError too. */
export async function readBody<T>(p: Promise<T>, what: string): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof PaddockError) throw e;
    const cause = (e as { cause?: Error }).cause;
    throw new PaddockError(`${what}: ${cause?.message || (e as Error).message}`, 0, "EIO");
  }
}

export interface RequestOptions {
  body?: string | Uint8Array | AsyncIterable<Uint8Array>;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

const USER_AGENT = "paddock-sdk-typescript/0.1.0";

export class Connection {
  readonly url: string;
  private readonly token: string | undefined;

  constructor(url: string, token?: string) {
    if (!/^https?:\/\//.test(url))
      throw new InvalidError(`unsupported URL '${url}' (use http:// or https://)`, 0, "EINVAL");
    this.url = url.replace(/\/+$/, "");
    this.token = token || undefined;
  }

  /** options, else PADDOCK_URL/PADDOCK_TOKEN, else the CLI's stored login
   * (whose token is sent only to the config's own URL). */
  static async resolve(opts: ConnectionOptions = {}): Promise<Connection> {
    const env = process.env;
    let url = opts.url || env.PADDOCK_URL || undefined;
    let token = opts.token || undefined;
    const config = url && token ? {} : await readConfig();
    if (!url) url = config.url;
    if (!url)
      throw new PaddockError(
        "no server: give url, set PADDOCK_URL, or run 'paddock login URL'",
        0,
        "ENOENT",
      );
    if (!token) token = env.PADDOCK_TOKEN || undefined;
    if (!token && config.url && config.token && config.url.replace(/\/+$/, "") === url.replace(/\/+$/, ""))
      token = config.token;
    return new Connection(url, token);
  }

  /** @internal A request on the API (path below the server, e.g.
   * "/v1/tree/boxes/"); throws the typed error for an answer that is not
   * 2xx. */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    let url = this.url + path;
    if (o.query) url += "?" + new URLSearchParams(o.query).toString();
    const headers: Record<string, string> = { "User-Agent": USER_AGENT, ...o.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const init: RequestInit & { duplex?: string } = { method, headers };
    if (o.body !== undefined) {
      init.body = o.body as BodyInit;
      // A streamed body (an async iterable) needs half duplex in Node's fetch.
      if (typeof o.body !== "string" && !(o.body instanceof Uint8Array)) init.duplex = "half";
    }
    let res: Response;
    try {
      res = await fetch(url, init);
    } catch (e) {
      const cause = (e as { cause?: Error }).cause;
      throw new PaddockError(
        `${method} ${url}: ${cause?.message || (e as Error).message}`,
        0,
        (cause as { code?: string } | undefined)?.code || "EIO",
      );
    }
    if (!res.ok)
      throw errorFromResponse(res.status, await readBody(res.text(), `${method} ${path}`), `${method} ${path}`);
    return res;
  }

  /** @internal A request on the tree (path relative to /v1/tree/,
   * already encoded). */
  tree(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    return this.request(method, "/v1/tree/" + path, o);
  }

  /** A file's value without its trailing newline. */
  async get(path: string): Promise<string> {
    const res = await this.tree("GET", path);
    return (await readBody(res.text(), path)).replace(/\n$/, "");
  }

  /** One write of value (a newline is added unless it ends with one);
   * returns the answer's body ("" for 204). */
  async put(path: string, value: string | Uint8Array = ""): Promise<string> {
    const body = typeof value === "string" && value !== "" && !value.endsWith("\n") ? value + "\n" : value;
    const res = await this.tree("PUT", path, { body });
    return res.status === 204 ? "" : await readBody(res.text(), path);
  }

  async delete(path: string, query?: Record<string, string>): Promise<void> {
    const res = await this.tree("DELETE", path, { query });
    await readBody(res.arrayBuffer(), path);
  }

  /** A directory's entries. */
  async list(path: string): Promise<DirEntry[]> {
    const res = await this.tree("GET", path.endsWith("/") ? path : path + "/");
    const j = (await readBody(res.json(), path)) as { entries?: DirEntry[] };
    return j.entries || [];
  }
}

export interface DirEntry {
  name: string;
  type: "dir" | "file" | "link";
  /** Octal, e.g. "0644". */
  mode: string;
  size: number;
}

/** A name like the CLI makes: PREFIX and 6 of [a-z0-9]. */
export function randomName(prefix: string, n = 6): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const rnd = randomBytes(n);
  let out = prefix;
  for (const b of rnd) out += alphabet[b % alphabet.length];
  return out;
}
