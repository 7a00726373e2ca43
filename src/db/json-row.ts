// Rows read back as JSON (to_jsonb(t) in a claim statement that returns several tables at once)
// carry timestamps as text: back to Date, as the drivers give them.
export type JsonRow = Record<string, unknown>;

export function withDates<T>(o: JsonRow, keys: readonly string[]): T {
  for (const k of keys) if (typeof o[k] === 'string') o[k] = new Date(o[k] as string);
  return o as T;
}
