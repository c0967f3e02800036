// The few Node.js APIs the SDK uses, declared here because the build has no
// @types/node (the SDK is compiled with the distribution's tsc alone). Not
// emitted: the shipped .d.ts files name none of these types.

declare const process: {
  env: Record<string, string | undefined>;
  platform: string;
  cwd(): string;
};

declare module "node:fs/promises" {
  export function readFile(path: string, encoding: "utf8"): Promise<string>;
  export function mkdir(path: string, opts?: { recursive?: boolean }): Promise<string | undefined>;
  export function readdir(path: string): Promise<string[]>;
  export function stat(path: string): Promise<{ isDirectory(): boolean }>;
}

declare module "node:os" {
  export function homedir(): string;
}

declare module "node:path" {
  export function join(...parts: string[]): string;
}

declare module "node:crypto" {
  export function randomBytes(n: number): Uint8Array;
}

declare module "node:child_process" {
  interface Readable {
    on(ev: "data", fn: (chunk: Uint8Array) => void): this;
    on(ev: "end" | "close", fn: () => void): this;
    on(ev: "error", fn: (e: Error) => void): this;
    pause(): this;
    resume(): this;
    [Symbol.asyncIterator](): AsyncIterableIterator<Uint8Array>;
  }
  interface Writable {
    write(chunk: Uint8Array, cb?: (e?: Error | null) => void): boolean;
    end(cb?: () => void): this;
    once(ev: "drain", fn: () => void): this;
    on(ev: "error", fn: (e: Error) => void): this;
    destroy(e?: Error): this;
  }
  export interface ChildProcess {
    stdin: Writable | null;
    stdout: Readable | null;
    stderr: Readable | null;
    kill(sig?: string): boolean;
    on(ev: "close", fn: (code: number | null, signal: string | null) => void): this;
    on(ev: "error", fn: (e: Error) => void): this;
  }
  export function spawn(
    cmd: string,
    args: string[],
    opts?: { stdio?: ("pipe" | "ignore" | "inherit")[]; windowsHide?: boolean },
  ): ChildProcess;
}
