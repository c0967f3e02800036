// Exec jobs: boxes/NAME/exec/JOB/, their streams followed live.
import { Connection, encodePath, randomName } from "./connection.js";
import { PaddockError, TimeoutError } from "./errors.js";

export interface RunOptions {
  /** Called with each piece of stdout as it arrives (decoded as UTF-8). */
  onStdout?: (data: string) => void;
  /** Called with each piece of stderr as it arrives. */
  onStderr?: (data: string) => void;
  /** Working directory in the box (default: the user's home). */
  cwd?: string;
  /** Environment variables added for the command. */
  env?: Record<string, string>;
  /** Return a handle at once instead of waiting for the end. */
  background?: boolean;
  /** Fed to the command's stdin, which is then closed. Without it stdin
   * stays open (a background handle can write to it). */
  stdin?: string | Uint8Array;
  /** Run as this user of the box instead of its default user. */
  user?: string;
  /** Kill the job after this many milliseconds (run() then throws
   * TimeoutError; wait() of a handle too). */
  timeoutMs?: number;
  /** DISPLAY points at the box's desktop. */
  desktop?: boolean;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  /** The exit code; 128+N when killed by signal N. */
  exitCode: number;
}

/** A command's words quoted for the box's shell. */
export function shellJoin(words: string[]): string {
  return words
    .map((w) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'"))
    .join(" ");
}

const STDIN_CHUNK = 60 * 1024; // the server takes 64 KiB a write

/** A job that runs (or ran): its name in the box's exec/. */
export class CommandHandle {
  /** The job's name (boxes/BOX/exec/NAME). */
  readonly name: string;
  private readonly conn: Connection;
  private readonly dir: string;
  private readonly streams: Promise<[string, string]>;
  private readonly exit: Promise<string>;
  private result?: Promise<CommandResult>;
  private timer?: ReturnType<typeof setTimeout>;
  private timedOut = false;
  private stdinQueue: Promise<unknown> = Promise.resolve();

  /** @internal */
  constructor(conn: Connection, dir: string, name: string, o: RunOptions) {
    this.conn = conn;
    this.dir = dir;
    this.name = name;
    this.streams = Promise.all([
      this.follow("stdout", o.onStdout),
      this.follow("stderr", o.onStderr),
    ]);
    // exit answers at the job's end: asked now, it costs no round trip
    // after the streams end.
    this.exit = this.conn.get(this.dir + "exit");
    // Not awaited by a handle nobody waits for: no unhandled rejection.
    this.streams.catch(() => undefined);
    this.exit.catch(() => undefined);
    if (o.timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.kill().catch(() => undefined);
      }, o.timeoutMs);
      // A job that ends first needs no timer, waited for or not.
      Promise.all([this.streams, this.exit])
        .catch(() => undefined)
        .then(() => clearTimeout(this.timer));
    }
  }

  private async follow(stream: string, cb?: (s: string) => void): Promise<string> {
    const res = await this.conn.tree("GET", this.dir + stream);
    const decoder = new TextDecoder();
    let out = "";
    if (!res.body) return out;
    const reader = res.body.getReader();
    for (;;) {
      let piece: ReadableStreamReadResult<Uint8Array>;
      try {
        piece = await reader.read();
      } catch (e) {
        // The connection cut (a revoked token, the server stopping).
        throw new PaddockError(`${stream} of job ${this.name}: ${(e as Error).message}`, 0, "EIO");
      }
      const { done, value } = piece;
      if (done) break;
      const s = decoder.decode(value, { stream: true });
      if (s) {
        out += s;
        cb?.(s);
      }
    }
    const rest = decoder.decode();
    if (rest) {
      out += rest;
      cb?.(rest);
    }
    return out;
  }

  /** Waits for the end: stdout, stderr and the exit code. */
  wait(): Promise<CommandResult> {
    if (!this.result) this.result = this.finish();
    return this.result;
  }

  private async finish(): Promise<CommandResult> {
    try {
      const [[stdout, stderr], code] = await Promise.all([this.streams, this.exit]);
      const exitCode = Number.parseInt(code, 10);
      if (!/^\d+$/.test(code)) throw new PaddockError(`unexpected exit code '${code}'`, 0, "EPROTO");
      if (this.timedOut) {
        const e = new TimeoutError(`the command ran out of time and was killed (job ${this.name})`, 0, "ETIMEDOUT");
        e.stdout = stdout;
        e.stderr = stderr;
        throw e;
      }
      return { stdout, stderr, exitCode };
    } finally {
      if (this.timer) clearTimeout(this.timer);
    }
  }

  /** A ctl write; a job whose process is still being made answers 503
   * (EAGAIN) for a moment: tried again for up to 10 s. */
  private async ctl(line: string): Promise<void> {
    const end = Date.now() + 10_000;
    for (;;) {
      try {
        await this.conn.put(this.dir + "ctl", line);
        return;
      } catch (e) {
        if (!(e instanceof PaddockError && e.status === 503) || Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  /** Kills the job (SIGKILL). */
  kill(): Promise<void> {
    return this.ctl("kill");
  }

  /** Sends a signal by name or number ("INT", "TERM", 15). */
  signal(sig: string | number): Promise<void> {
    return this.ctl(`signal ${sig}`);
  }

  /** Writes data to the job's stdin (in order with other writes). */
  sendStdin(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const p = this.stdinQueue.then(() => this.writeStdin(bytes));
    this.stdinQueue = p.catch(() => undefined);
    return p;
  }

  private async writeStdin(bytes: Uint8Array): Promise<void> {
    for (let off = 0; off < bytes.length; ) {
      const piece = bytes.subarray(off, off + STDIN_CHUNK);
      try {
        // The pipe takes all of a piece or part of it: the answer says
        // how much ({"written": N}); the rest goes next, never again.
        const res = await this.conn.tree("PUT", this.dir + "stdin", { body: piece });
        let written = piece.length;
        if (res.status === 200) {
          const a = (await res.json()) as { written?: unknown };
          if (typeof a.written === "number" && a.written >= 0 && a.written <= piece.length)
            written = a.written;
        }
        off += written;
      } catch (e) {
        // The process's pipe is full: it has not read yet.
        if (e instanceof PaddockError && e.status === 503) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        throw e;
      }
    }
  }

  /** Closes the job's stdin (after the writes sent before). */
  closeStdin(): Promise<void> {
    const p = this.stdinQueue.then(() => this.ctl("eof"));
    this.stdinQueue = p.catch(() => undefined);
    return p;
  }
}

export class Commands {
  private readonly conn: Connection;
  private readonly box: string;

  /** @internal */
  constructor(conn: Connection, box: string) {
    this.conn = conn;
    this.box = box;
  }

  /** Runs cmd (a command line for the box's shell, `bash -lc` where the
   * image has bash, or words to quote) and waits for its end; with
   * background: true, returns a handle at once. */
  run(cmd: string | string[], opts: RunOptions & { background: true }): Promise<CommandHandle>;
  run(cmd: string | string[], opts?: RunOptions & { background?: false }): Promise<CommandResult>;
  async run(cmd: string | string[], opts: RunOptions = {}): Promise<CommandResult | CommandHandle> {
    const line = Array.isArray(cmd) ? shellJoin(cmd) : cmd;
    const name = randomName("sdk-", 8);
    const dir = `boxes/${encodePath(this.box)}/exec/${name}/`;
    await this.conn.put(dir);
    try {
      if (opts.env && Object.keys(opts.env).length > 0) {
        const body = Object.entries(opts.env)
          .map(([k, v]) => `${k}=${v}\n`)
          .join("");
        await this.conn.put(dir + "env", body);
      }
      if (opts.cwd !== undefined) await this.conn.put(dir + "cwd", opts.cwd);
      if (opts.user !== undefined) await this.conn.put(dir + "user", opts.user);
      if (opts.desktop) await this.conn.put(dir + "desktop", "1");
      await this.conn.tree("PUT", dir + "cmd", { body: line });
    } catch (e) {
      await this.conn.delete(dir).catch(() => undefined);
      throw e;
    }
    const h = new CommandHandle(this.conn, dir, name, opts);
    if (opts.stdin !== undefined) {
      h.sendStdin(opts.stdin).catch(() => undefined);
      h.closeStdin().catch(() => undefined);
    }
    return opts.background ? h : h.wait();
  }

  /** A job started earlier (by name), e.g. to wait for it again. */
  connect(name: string, opts: Pick<RunOptions, "onStdout" | "onStderr"> = {}): CommandHandle {
    return new CommandHandle(this.conn, `boxes/${encodePath(this.box)}/exec/${encodePath(name)}/`, name, opts);
  }
}
