import { catalogue, type ErrorCode, textFor } from './messages.es-AR.js';

/** `cause` of plan and monthly-quota errors (api.md §7). */
export interface UpgradeCause {
  type: 'upgrade';
  reason: 'limit' | 'plan';
  resource: string;
  plan: string;
  limit: number | null;
  used: number | null;
  suggested: string | null;
}

export interface ApiErrorOptions {
  params?: Record<string, string | number>;
  cause?: UpgradeCause | null;
  headers?: Record<string, string>;
  /** Extra fields merged into the body (e.g. the provider `code` on 502). */
  extra?: Record<string, unknown>;
}

/** The one error type of the service: a code from the catalogue, its status and Spanish text. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly upgrade: UpgradeCause | null;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(code: ErrorCode, opts: ApiErrorOptions = {}) {
    super(textFor(code, opts.params));
    this.code = code;
    this.statusCode = catalogue[code].status;
    this.upgrade = opts.cause ?? null;
    this.headers = opts.headers ?? {};
    this.extra = opts.extra ?? {};
  }

  body(): Record<string, unknown> {
    return { error: this.message, cause: this.upgrade, ...this.extra };
  }
}

export interface ValidationProblem {
  path: (string | number)[];
  message: string;
}

/** A 400 whose `error.message` is the JSON text of the problems (api.md §7, "Validation errors"). */
export class ValidationError extends Error {
  readonly statusCode = 400;
  constructor(readonly problems: ValidationProblem[]) {
    super('validation');
  }
  body(): Record<string, unknown> {
    return { error: { message: JSON.stringify(this.problems) }, cause: null };
  }
}

export const invalid = (path: (string | number)[], message: string): ValidationError => new ValidationError([{ path, message }]);
