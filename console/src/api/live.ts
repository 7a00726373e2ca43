// The console's one live connection: an EventSource on /console/api/stream shared by every page,
// with subscribe(kind, fn). A stream that is absent or fails before opening (404, an older server)
// is closed and left alone: no live updates, no retries. One that worked and drops is reopened
// once after a pause (the browser's own retry is cut off so it never storms).
type Listener = (data: unknown) => void;

const STREAM = '/console/api/stream';
const REOPEN_MS = 15_000;
const listeners = new Map<string, Set<Listener>>();
let source: EventSource | null = null;
let givenUp = false;
let reopenTimer: ReturnType<typeof setTimeout> | null = null;

function dispatch(kind: string, e: MessageEvent): void {
  let data: unknown = null;
  try {
    data = JSON.parse(String(e.data));
  } catch {
    data = null;
  }
  for (const fn of listeners.get(kind) ?? []) fn(data);
}

function attach(s: EventSource, kind: string): void {
  s.addEventListener(kind, (e) => dispatch(kind, e as MessageEvent));
}

function open(): void {
  if (source || givenUp || reopenTimer || typeof EventSource === 'undefined') return;
  let opened = false;
  const s = new EventSource(STREAM);
  source = s;
  s.onopen = () => {
    opened = true;
  };
  s.onerror = () => {
    s.close();
    source = null;
    if (!opened) {
      givenUp = true;
      return;
    }
    reopenTimer = setTimeout(() => {
      reopenTimer = null;
      if (listeners.size > 0) open();
    }, REOPEN_MS);
  };
  for (const kind of listeners.keys()) attach(s, kind);
}

/** Calls fn with each event of this kind (its `data`); returns the unsubscribe. */
export function subscribe(kind: string, fn: Listener): () => void {
  let set = listeners.get(kind);
  if (!set) {
    set = new Set();
    listeners.set(kind, set);
    if (source) attach(source, kind);
  }
  set.add(fn);
  open();
  return () => {
    set.delete(fn);
    if (set.size === 0) listeners.delete(kind);
    if (listeners.size === 0 && source) {
      source.close();
      source = null;
    }
  };
}
