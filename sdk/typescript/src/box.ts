// Boxes: boxes/NAME/ and what hangs off it.
import { Commands } from "./commands.js";
import { Connection, ConnectionOptions, encodePath, randomName, readBody } from "./connection.js";
import { ConflictError, NotFoundError, PaddockError } from "./errors.js";
import { Files } from "./files.js";

/** A network egress policy. */
export type Policy = "allow-all" | "deny-all" | { allow: string[] };

export interface CreateOptions extends ConnectionOptions {
  /** The box's name (default: box-XXXXXX, like `paddock new`). */
  name?: string;
  /** Box type, e.g. "small" (default: the server's). */
  type?: string;
  /** Time to live in milliseconds (rounded up to seconds); null: none. */
  ttl?: number | null;
  /** Base image (default: the server's). */
  image?: string;
  policy?: Policy;
  /** The Docker daemon inside the box (images that have it). */
  docker?: boolean;
}

/** What boxes/NAME/info says (the server's JSON, fields as it names
 * them: created, ip, policy, usage, limits, volumes, error…), with the
 * TTL's countdown and expiry added. */
export interface BoxInfo {
  name: string;
  state: string;
  type: string;
  image: string;
  /** Milliseconds left before the box is stopped; null: no limit. */
  ttlMs: number | null;
  /** RFC 3339 time of the TTL's expiry, or "never". */
  expires: string;
  [key: string]: unknown;
}

/** One event of a prompt's run (prompts/P/events): start, message,
 * tool_call, tool_result, usage, error, end. */
export interface PromptEvent {
  type: string;
  [key: string]: unknown;
}

export interface PromptOptions {
  /** An agent from the server's agents/ (default: the server's). */
  agent?: string;
  model?: string;
  cwd?: string;
  env?: Record<string, string>;
  /** An earlier prompt whose agent session to resume. */
  continue?: string;
}

function ttlValue(ms: number | null): string {
  if (ms === null) return "none";
  if (!Number.isFinite(ms) || ms < 0) throw new PaddockError(`bad ttl ${ms}`, 0, "EINVAL");
  return String(Math.ceil(ms / 1000));
}

function policyBody(p: Policy): string {
  if (p === "allow-all" || p === "deny-all") return p + "\n";
  if (p && typeof p === "object" && Array.isArray(p.allow))
    return "allowlist\n" + p.allow.map((e) => e + "\n").join("");
  throw new PaddockError(`bad policy ${JSON.stringify(p)}`, 0, "EINVAL");
}

function parsePolicy(text: string): Policy {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  if (lines[0] === "allowlist") return { allow: lines.slice(1) };
  return lines[0] as Policy;
}

export class Box {
  readonly name: string;
  /** @internal */
  readonly conn: Connection;
  readonly commands: Commands;
  readonly files: Files;
  readonly policy: {
    set(p: Policy): Promise<void>;
    get(): Promise<Policy>;
  };
  readonly volumes: {
    list(): Promise<string[]>;
    attach(volume: string): Promise<void>;
    detach(volume: string): Promise<void>;
  };
  readonly desktop: Desktop;
  private readonly dir: string;

  /** @internal Use Box.create or Box.connect. */
  constructor(conn: Connection, name: string) {
    this.conn = conn;
    this.name = name;
    this.dir = `boxes/${encodePath(name)}/`;
    this.commands = new Commands(conn, name);
    this.files = new Files(conn, name);
    this.desktop = new Desktop(conn, this.dir);
    this.policy = {
      set: async (p) => {
        await conn.put(this.dir + "policy", policyBody(p));
      },
      get: async () => parsePolicy(await conn.get(this.dir + "policy")),
    };
    const volumes = async () => (await conn.get(this.dir + "volumes")).split("\n").filter((l) => l !== "");
    // The box's volumes file is the whole list.
    const setVolumes = (names: string[]) => conn.put(this.dir + "volumes", names.map((n) => n + "\n").join(""));
    this.volumes = {
      list: volumes,
      attach: async (v) => {
        const names = await volumes();
        if (!names.includes(v)) await setVolumes([...names, v]);
      },
      detach: async (v) => {
        const names = await volumes();
        if (names.includes(v)) await setVolumes(names.filter((n) => n !== v));
      },
    };
  }

  /** Creates a box, writes its settings and starts it (as `paddock new`).
   * A box whose settings fail is deleted again. */
  static async create(opts: CreateOptions = {}): Promise<Box> {
    const conn = await Connection.resolve(opts);
    let name = "";
    // A generated name may be taken: try a few.
    for (let attempt = 0; ; attempt++) {
      name = opts.name ?? randomName("box-");
      try {
        await conn.put(`boxes/${encodePath(name)}/`);
        break;
      } catch (e) {
        if (!(e instanceof ConflictError) || opts.name !== undefined || attempt >= 4) throw e;
      }
    }
    const dir = `boxes/${encodePath(name)}/`;
    // docker after image: whether the box has Docker is its image's.
    const steps: [string, string | undefined][] = [
      ["image", opts.image],
      ["type", opts.type],
      ["docker", opts.docker === undefined ? undefined : opts.docker ? "on" : "off"],
      ["ttl", opts.ttl === undefined ? undefined : ttlValue(opts.ttl)],
      ["policy", opts.policy === undefined ? undefined : policyBody(opts.policy)],
      ["state", "running"],
    ];
    try {
      for (const [file, value] of steps) if (value !== undefined) await conn.put(dir + file, value);
    } catch (e) {
      await conn.delete(dir).catch(() => undefined);
      throw e;
    }
    return new Box(conn, name);
  }

  /** An existing box; a stopped one is resumed. */
  static async connect(name: string, opts: ConnectionOptions = {}): Promise<Box> {
    const conn = await Connection.resolve(opts);
    const box = new Box(conn, name);
    const state = await conn.get(box.dir + "state");
    if (state === "stopped") await box.resume();
    return box;
  }

  /** Every box, with its info. */
  static async list(opts: ConnectionOptions = {}): Promise<BoxInfo[]> {
    const conn = await Connection.resolve(opts);
    const entries = (await conn.list("boxes/")).filter((e) => e.type === "dir");
    const infos = await Promise.all(
      entries.map((e) =>
        new Box(conn, e.name).info().catch((err) => {
          if (err instanceof NotFoundError) return undefined; // deleted meanwhile
          throw err;
        }),
      ),
    );
    return infos.filter((i): i is BoxInfo => i !== undefined);
  }

  /** boxes/NAME/info: state, type, image, ttl, expires, ip, policy, usage… */
  async info(): Promise<BoxInfo> {
    const [info, ttl, expires] = await Promise.all([
      this.conn.tree("GET", this.dir + "info").then((r) => readBody(r.json(), this.name + "/info")),
      this.conn.get(this.dir + "ttl"),
      this.conn.get(this.dir + "expires"),
    ]);
    return { ...info, ttlMs: /^\d+$/.test(ttl) ? Number(ttl) * 1000 : null, expires } as BoxInfo;
  }

  /** The state: created, running, stopped (starting/stopping meanwhile). */
  state(): Promise<string> {
    return this.conn.get(this.dir + "state");
  }

  /** Deletes the box (stopped first if it runs). Named volumes survive. */
  async kill(): Promise<void> {
    await this.conn.delete(this.dir);
  }

  /** Restarts the countdown at ms milliseconds (rounded up to seconds);
   * null: no limit. */
  async setTtl(ms: number | null): Promise<void> {
    await this.conn.put(this.dir + "ttl", ttlValue(ms));
  }

  /** Stops the box (its filesystem is snapshotted). */
  async stop(): Promise<void> {
    await this.conn.put(this.dir + "state", "stopped");
  }

  /** Starts or resumes the box. */
  async resume(): Promise<void> {
    await this.conn.put(this.dir + "state", "running");
  }

  /** Snapshots the box now; returns the snapshot's id. */
  async snapshot(label = "manual"): Promise<string> {
    const answer = JSON.parse(await this.conn.put(this.dir + "snapshot", label)) as { snapshot: string };
    return answer.snapshot;
  }

  /** The ids of this box's snapshots. */
  async snapshots(): Promise<string[]> {
    return (await this.conn.list(this.dir + "snapshots/")).map((e) => e.name).filter((n) => n !== "last");
  }

  /** A new box from this box's current filesystem (name: box-XXXXXX when
   * not given). */
  async fork(name?: string): Promise<Box> {
    const newName = name ?? randomName("box-");
    const answer = JSON.parse(await this.conn.put(this.dir + "fork", newName)) as { box: string };
    return new Box(this.conn, answer.box || newName);
  }

  /** Resets the filesystem to a snapshot, by id or by a label only one of
   * this box's snapshots has (a running box is stopped and started again). */
  async restore(idOrLabel: string): Promise<{ snapshot: string; restarted: boolean; before?: string; jobs_ended?: string }> {
    return JSON.parse(await this.conn.put(this.dir + "restore", idOrLabel));
  }

  /** Runs a coding agent in the box on text; iterate the result for its
   * events (the iteration ends after the `end` event). */
  async prompt(text: string, opts: PromptOptions = {}): Promise<PromptRun> {
    const name = randomName("sdk-", 8);
    const dir = `${this.dir}prompts/${name}/`;
    await this.conn.put(dir);
    try {
      const settings: [string, string | undefined][] = [
        ["agent", opts.agent],
        ["model", opts.model],
        ["continue", opts.continue],
        ["cwd", opts.cwd],
        [
          "env",
          opts.env
            ? Object.entries(opts.env)
                .map(([k, v]) => `${k}=${v}\n`)
                .join("")
            : undefined,
        ],
      ];
      for (const [file, value] of settings) if (value !== undefined && value !== "") await this.conn.put(dir + file, value);
      await this.conn.tree("PUT", dir + "text", { body: text });
    } catch (e) {
      await this.conn.delete(dir).catch(() => undefined);
      throw e;
    }
    return new PromptRun(this.conn, dir, name);
  }
}

/** A prompt's run: an async iterable of its events. */
export class PromptRun implements AsyncIterable<PromptEvent> {
  readonly name: string;
  private readonly conn: Connection;
  private readonly dir: string;

  /** @internal */
  constructor(conn: Connection, dir: string, name: string) {
    this.conn = conn;
    this.dir = dir;
    this.name = name;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<PromptEvent> {
    const res = await this.conn.tree("GET", this.dir + "events");
    if (!res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        let piece: ReadableStreamReadResult<Uint8Array>;
        try {
          piece = await reader.read();
        } catch (e) {
          // The connection cut (a revoked token, the server stopping).
          throw new PaddockError(`events of prompt ${this.name}: ${(e as Error).message}`, 0, "EIO");
        }
        const { done, value } = piece;
        if (done) buf += decoder.decode() + "\n";
        else buf += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          let ev: PromptEvent;
          try {
            ev = JSON.parse(line);
          } catch {
            continue; // not an event
          }
          if (!ev || typeof ev !== "object" || typeof ev.type !== "string") continue;
          yield ev;
          if (ev.type === "end") return; // always last
        }
        if (done) return;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** Stops the agent. */
  async kill(): Promise<void> {
    await this.conn.put(this.dir + "ctl", "kill");
  }

  /** The final answer (after the end). */
  result(): Promise<string> {
    return this.conn.get(this.dir + "result");
  }

  /** Waits for the end; the exit code. */
  async exit(): Promise<number> {
    return Number.parseInt(await this.conn.get(this.dir + "exit"), 10);
  }
}

/** The box's graphical session (images with a desktop). */
export class Desktop {
  private readonly conn: Connection;
  private readonly dir: string;

  /** @internal */
  constructor(conn: Connection, boxDir: string) {
    this.conn = conn;
    this.dir = boxDir;
  }

  /** Turns the session on (it comes up within seconds: the calls below
   * wait for it). */
  async start(): Promise<void> {
    await this.conn.put(this.dir + "desktop/state", "on");
  }

  async stop(): Promise<void> {
    await this.conn.put(this.dir + "desktop/state", "off");
  }

  /** "on" or "off". */
  state(): Promise<string> {
    return this.conn.get(this.dir + "desktop/state");
  }

  /** Retries fn while the desktop is still coming up (503, EAGAIN), up
   * to 30 s, as the CLI does. */
  private async whenUp<T>(fn: () => Promise<T>): Promise<T> {
    const end = Date.now() + 30_000;
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof PaddockError && e.status === 503) || Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /** A PNG of the current screen. */
  screenshot(): Promise<Uint8Array> {
    return this.whenUp(async () => {
      const res = await this.conn.tree("GET", this.dir + "screenshot.png");
      return new Uint8Array(await readBody(res.arrayBuffer(), "screenshot.png"));
    });
  }

  /** One line per window: id, title, geometry. */
  async windows(): Promise<string[]> {
    const text = await this.whenUp(() => this.conn.get(this.dir + "desktop/windows"));
    return text.split("\n").filter((l) => l !== "");
  }

  /** Where the pointer is. */
  async cursor(): Promise<{ x: number; y: number }> {
    const [x, y] = (await this.whenUp(() => this.conn.get(this.dir + "desktop/cursor"))).split(/\s+/).map(Number);
    return { x, y };
  }

  /** Sends actions, one a line, as desktop/input takes them ("move X Y",
   * "click left 10 20", "key ctrl+s"…); all or none are sent. */
  async input(...actions: string[]): Promise<void> {
    const body = actions.map((a) => a + "\n").join("");
    await this.whenUp(() => this.conn.put(this.dir + "desktop/input", body));
  }

  click(x: number, y: number, button: "left" | "middle" | "right" = "left"): Promise<void> {
    return this.input(`click ${button} ${Math.round(x)} ${Math.round(y)}`);
  }

  move(x: number, y: number): Promise<void> {
    return this.input(`move ${Math.round(x)} ${Math.round(y)}`);
  }

  /** Types text; a newline is sent as the Return key. */
  type(text: string): Promise<void> {
    const actions: string[] = [];
    text.split("\n").forEach((part, i) => {
      if (i > 0) actions.push("key Return");
      if (part) actions.push(`type ${part}`);
    });
    return actions.length ? this.input(...actions) : Promise.resolve();
  }

  /** Presses a key combination, e.g. "ctrl+s". */
  key(combo: string): Promise<void> {
    return this.input(`key ${combo}`);
  }
}

export interface VolumeInfo {
  name: string;
  /** Bytes used. */
  size: number;
  /** Boxes it is attached to. */
  boxes: string[];
}

/** Named volumes: volumes/NAME/, mounted at /mnt/NAME in boxes that
 * attach them. */
export class Volume {
  static async create(name: string, opts: ConnectionOptions = {}): Promise<void> {
    const conn = await Connection.resolve(opts);
    await conn.put(`volumes/${encodePath(name)}/`);
  }

  static async list(opts: ConnectionOptions = {}): Promise<VolumeInfo[]> {
    const conn = await Connection.resolve(opts);
    const entries = (await conn.list("volumes/")).filter((e) => e.type === "dir");
    const out = await Promise.all(
      entries.map(async (e) => {
        const dir = `volumes/${encodePath(e.name)}/`;
        try {
          const [size, boxes] = await Promise.all([conn.get(dir + "size"), conn.get(dir + "boxes")]);
          return { name: e.name, size: Number(size), boxes: boxes.split("\n").filter((l) => l !== "") };
        } catch (err) {
          if (err instanceof NotFoundError) return undefined;
          throw err;
        }
      }),
    );
    return out.filter((v): v is VolumeInfo => v !== undefined);
  }

  /** Deletes a volume (ConflictError while a box has it attached). */
  static async remove(name: string, opts: ConnectionOptions = {}): Promise<void> {
    const conn = await Connection.resolve(opts);
    await conn.delete(`volumes/${encodePath(name)}/`);
  }
}
