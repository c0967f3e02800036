// paddock-sdk: Paddock's HTTP API in the shape of hosted sandboxes' SDKs.
export { Box, Desktop, PromptRun, Volume } from "./box.js";
export type { BoxInfo, CreateOptions, Policy, PromptEvent, PromptOptions, VolumeInfo } from "./box.js";
export { CommandHandle, Commands, shellJoin } from "./commands.js";
export type { CommandResult, RunOptions } from "./commands.js";
export { Files } from "./files.js";
export type { TransferResult } from "./files.js";
export { Connection, configPath } from "./connection.js";
export type { ConnectionOptions, DirEntry } from "./connection.js";
export { AuthError, ConflictError, InvalidError, NotFoundError, PaddockError, TimeoutError } from "./errors.js";
