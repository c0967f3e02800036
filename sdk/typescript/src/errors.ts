// Errors: the server's status, errno name and its own text.

export class PaddockError extends Error {
  /** The HTTP status (0 when the request never got an answer). */
  readonly status: number;
  /** The errno name the server gave ("EINVAL"), or "" when it gave none. */
  readonly errno: string;

  constructor(message: string, status = 0, errno = "") {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.errno = errno;
  }
}

/** 401: a token that is missing, wrong, revoked or expired. */
export class AuthError extends PaddockError {}
/** 404: no such box, file, job, snapshot or volume. */
export class NotFoundError extends PaddockError {}
/** 409: the name is taken, or the object is in the wrong state. */
export class ConflictError extends PaddockError {}
/** 400: a value the server refuses. */
export class InvalidError extends PaddockError {}
/** commands.run's timeoutMs passed: the job was killed. */
export class TimeoutError extends PaddockError {
  /** What the job wrote before it was killed. */
  stdout = "";
  stderr = "";
}

/** @internal The error for an answer that is not 2xx, from its body. */
export function errorFromResponse(status: number, body: string, what: string): PaddockError {
  let message = "";
  let errno = "";
  try {
    const j = JSON.parse(body);
    if (j && typeof j.error === "string") message = j.error;
    if (j && typeof j.errno === "string") errno = j.errno;
  } catch {
    // not the JSON shape: the body's first line
    message = body.split("\n", 1)[0].slice(0, 400);
  }
  if (!message) message = `${what}: HTTP status ${status}`;
  switch (status) {
    case 400:
      return new InvalidError(message, status, errno);
    case 401:
      return new AuthError(message, status, errno);
    case 404:
      return new NotFoundError(message, status, errno);
    case 409:
      return new ConflictError(message, status, errno);
    default:
      return new PaddockError(message, status, errno);
  }
}
