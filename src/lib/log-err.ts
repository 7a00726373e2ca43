// The logger's `err` serializer. pino's standard one copies every property of an error, and
// database errors carry the data: PGlite's its query and parameters, PostgreSQL's a `detail` and
// `where` with row values (phones, message texts). A log line keeps only what says which error
// it was and where it came from.
import { pino } from 'pino';

interface LoggedError {
  type?: string;
  message: string;
  stack?: string;
  code?: string | number;
  aggregateErrors?: LoggedError[];
}

type ErrorLike = { message: string; code?: unknown; errors?: unknown };

const isErrorLike = (v: unknown): v is ErrorLike =>
  typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string';

export function serializeErr(err: unknown): unknown {
  return isErrorLike(err) ? logged(err) : err;
}

function logged(err: ErrorLike): LoggedError {
  // pino's own serializer writes the message and stack of an error with its causes.
  const out: LoggedError =
    err instanceof Error
      ? (({ type, message, stack }) => ({ type, message, stack }))(pino.stdSerializers.err(err))
      : { message: err.message };
  if (typeof err.code === 'string' || typeof err.code === 'number') out.code = err.code;
  if (Array.isArray(err.errors)) out.aggregateErrors = err.errors.filter(isErrorLike).map(logged);
  return out;
}
