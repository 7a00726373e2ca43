// Loading one of the account's lists for a section of Configuración: the data, the error text,
// and a reload. A 403 (a role without access) is reported to the page, which shows "no permiso".
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';

export interface Loaded<T> {
  data: T | null;
  error: string;
  reload: () => void;
  /** Adopt what the server answered a change with, in the render that reports the change. */
  set: (d: T) => void;
}

export const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

/** GET `path` now and whenever `version` changes or reload() is called; an empty path loads nothing. */
export function useLoad<T>(path: string, onDenied: () => void, version = 0): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    call<T>('GET', path)
      .then((d) => {
        if (!live) return;
        setData(d);
        setError('');
      })
      .catch((e: unknown) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 403) onDenied();
        else setError(messageOf(e));
      });
    return () => {
      live = false;
    };
  }, [path, tick, version]);
  return { data, error, reload: () => setTick((t) => t + 1), set: setData };
}
