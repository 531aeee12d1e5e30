// Typed errors from the API server's Status responses.
import type { Status, StatusCause } from 'kubernetes-types/meta/v1.js';

export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly causes: StatusCause[];

  constructor(status: number, reason: string, message: string, causes: StatusCause[] = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.causes = causes;
  }

  static fromResponse(status: number, body: string, what: string): ApiError {
    try {
      const s = JSON.parse(body) as Status;
      return new ApiError(
        status,
        s.reason ?? 'Unknown',
        s.message ?? `${what}: HTTP ${status}`,
        s.details?.causes ?? [],
      );
    } catch {
      return new ApiError(status, 'Unknown', `${what}: HTTP ${status}: ${body.slice(0, 500)}`);
    }
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }

  get isConflict(): boolean {
    return this.status === 409 && this.reason === 'Conflict';
  }

  get isAlreadyExists(): boolean {
    return this.status === 409 && this.reason === 'AlreadyExists';
  }

  get isInvalid(): boolean {
    return this.status === 422;
  }

  get isGone(): boolean {
    return this.status === 410;
  }
}
