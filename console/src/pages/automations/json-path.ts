// Where a path of the server's 400 (`steps.2.text`) sits in the JSON text of the editor: the
// offsets of that value (or of the deepest part of the path that exists, e.g. the step whose
// field is missing), so the editor can select it. The text is valid JSON (it was sent).

type Span = [number, number];

/** Walks one JSON value from `i`, recording the span of every value by its path; returns its end. */
function walk(text: string, i: number, path: string, spans: Map<string, Span>): number {
  const skip = (k: number) => {
    while (k < text.length && /\s/.test(text[k]!)) k++;
    return k;
  };
  i = skip(i);
  const start = i;
  const ch = text[i];
  let end: number;
  if (ch === '{' || ch === '[') {
    const close = ch === '{' ? '}' : ']';
    let k = skip(i + 1);
    let index = 0;
    while (k < text.length && text[k] !== close) {
      let key = String(index++);
      if (ch === '{') {
        const keyEnd = stringEnd(text, k);
        key = JSON.parse(text.slice(k, keyEnd)) as string;
        k = skip(keyEnd) + 1; // the colon
      }
      k = skip(walk(text, k, path ? `${path}.${key}` : key, spans));
      if (text[k] === ',') k = skip(k + 1);
    }
    end = k + 1;
  } else if (ch === '"') {
    end = stringEnd(text, i);
  } else {
    end = i;
    while (end < text.length && /[^\s,\]}]/.test(text[end]!)) end++;
  }
  spans.set(path, [start, end]);
  return end;
}

function stringEnd(text: string, i: number): number {
  let k = i + 1;
  while (k < text.length && text[k] !== '"') k += text[k] === '\\' ? 2 : 1;
  return k + 1;
}

/** The span of `path` (dot-joined), or of its longest prefix that exists; null when the text is not JSON. */
export function locate(text: string, path: string): Span | null {
  const spans = new Map<string, Span>();
  try {
    walk(text, 0, '', spans);
  } catch {
    return null;
  }
  const parts = path ? path.split('.') : [];
  for (let n = parts.length; n >= 0; n--) {
    const span = spans.get(parts.slice(0, n).join('.'));
    if (span) return span;
  }
  return null;
}

/** Line and column (1-based) of an offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}
