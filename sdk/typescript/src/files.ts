// A box's files: boxes/NAME/root/PATH, and trees as tar streams piped
// through the system's tar (GNU tar, or bsdtar on macOS and Windows).
import { spawn, ChildProcess } from "node:child_process";
import { mkdir, readdir } from "node:fs/promises";
import { Connection, DirEntry, encodePath, readBody } from "./connection.js";
import { NotFoundError, PaddockError } from "./errors.js";

export interface TransferResult {
  /** Entries the server extracted (upload). */
  entries?: number;
  /** Bytes of content. */
  bytes?: number;
}

/** Runs tar; resolves when it exits 0, else rejects with its stderr. */
function tarDone(child: ChildProcess, what: string): Promise<void> {
  let err = "";
  child.stderr?.on("data", (d) => {
    if (err.length < 4096) err += new TextDecoder().decode(d);
  });
  return new Promise((resolve, reject) => {
    child.on("error", (e) => reject(new PaddockError(`${what}: cannot run tar: ${e.message}`, 0, "ENOENT")));
    child.on("close", (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new PaddockError(`${what}: tar failed (${signal ? "signal " + signal : "exit " + code}): ${err.trim()}`, 0, "EIO"),
        );
    });
  });
}

export class Files {
  private readonly conn: Connection;
  private readonly root: string;

  /** @internal */
  constructor(conn: Connection, box: string) {
    this.conn = conn;
    this.root = `boxes/${encodePath(box)}/root/`;
  }

  private path(p: string): string {
    return this.root + encodePath(p);
  }

  /** A file's content: text (UTF-8, the default) or bytes. */
  read(path: string, opts?: { format?: "text" }): Promise<string>;
  read(path: string, opts: { format: "bytes" }): Promise<Uint8Array>;
  async read(path: string, opts: { format?: "text" | "bytes" } = {}): Promise<string | Uint8Array> {
    const res = await this.conn.tree("GET", this.path(path));
    if (opts.format === "bytes") return new Uint8Array(await readBody(res.arrayBuffer(), path));
    return readBody(res.text(), path);
  }

  /** Replaces the file with data, atomically; missing parent directories
   * are made. */
  async write(path: string, data: string | Uint8Array): Promise<void> {
    const p = this.path(path);
    try {
      await this.conn.tree("PUT", p, { body: data });
    } catch (e) {
      const parent = p.slice(0, p.lastIndexOf("/") + 1);
      if (!(e instanceof NotFoundError) || parent === this.root) throw e;
      await this.conn.tree("PUT", parent);
      await this.conn.tree("PUT", p, { body: data });
    }
  }

  /** Makes a directory and its parents. */
  async makeDir(path: string): Promise<void> {
    await this.conn.tree("PUT", this.path(path) + "/");
  }

  /** A directory's entries. */
  list(dir: string): Promise<DirEntry[]> {
    return this.conn.list(this.path(dir) + "/");
  }

  /** True when path exists in the box. */
  async exists(path: string): Promise<boolean> {
    try {
      await this.conn.tree("GET", this.path(path) + "/", { query: { format: "text" } }).then((r) => r.arrayBuffer());
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      // a file, not a directory
      if (e instanceof PaddockError && e.status >= 400 && e.status < 500) {
        try {
          const r = await this.conn.tree("GET", this.path(path));
          await r.body?.cancel();
          return true;
        } catch (e2) {
          if (e2 instanceof NotFoundError) return false;
          throw e2;
        }
      }
      throw e;
    }
  }

  /** Removes a file, or a directory with everything in it. */
  async remove(path: string): Promise<void> {
    await this.conn.delete(this.path(path), { recursive: "1" });
  }

  /** Copies the local directory localDir's contents into remoteDir (made
   * if missing) as one tar stream, merged there when the whole archive
   * was accepted. */
  async upload(localDir: string, remoteDir: string): Promise<TransferResult> {
    const names = (await readdir(localDir)).sort();
    if (names.length === 0) {
      await this.makeDir(remoteDir);
      return { entries: 0, bytes: 0 };
    }
    // Names rather than ".": no entry for the directory itself.
    const child = spawn("tar", ["-c", "-f", "-", "-C", localDir, "--", ...names], {
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
    const done = tarDone(child, "upload");
    done.catch(() => undefined);
    try {
      const res = await this.conn.tree("PUT", this.path(remoteDir) + "/", {
        query: { format: "tar" },
        body: child.stdout as unknown as AsyncIterable<Uint8Array>,
      });
      const answer = (await readBody(res.json(), remoteDir)) as TransferResult;
      await done;
      return answer;
    } finally {
      child.kill();
    }
  }

  /** Copies remoteDir's contents into the local directory localDir (made
   * if missing). */
  async download(remoteDir: string, localDir: string): Promise<void> {
    await mkdir(localDir, { recursive: true });
    const res = await this.conn.tree("GET", this.path(remoteDir) + "/", { query: { format: "tar" } });
    // What the box holds is the box's: never its owners, nor setuid or
    // setgid bits (which tar run as root would otherwise restore).
    const child = spawn("tar", ["-x", "-f", "-", "--no-same-owner", "--no-same-permissions", "-C", localDir], {
      stdio: ["pipe", "ignore", "pipe"],
      windowsHide: true,
    });
    const done = tarDone(child, "download");
    done.catch(() => undefined);
    const stdin = child.stdin!;
    let broken: Error | undefined;
    stdin.on("error", (e) => {
      broken = e;
    });
    try {
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done: end, value } = await readBody(reader.read(), remoteDir);
          if (end) break;
          if (broken) break;
          // tar ending early (an error) must not leave this waiting.
          if (!stdin.write(value))
            await Promise.race([new Promise<void>((r) => stdin.once("drain", () => r())), done]);
        }
      }
      stdin.end();
      await done;
    } catch (e) {
      child.kill();
      throw e;
    }
  }
}
