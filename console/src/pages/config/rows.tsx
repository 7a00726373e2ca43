// What the rows of Números, Instagram, Apps de IA and Miembros share: an action that waits with its
// buttons disabled and then says what happened (role=status) or the server's text (role=alert),
// and a destructive action asked twice (`Sí, …` / `Cancelar`), as Claves de API does.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { Feedback, Loading } from '../../ui/feedback';
import { messageOf } from './load';

export interface Action {
  busy: boolean;
  error: string;
  status: string;
  /** Runs `fn`; on success shows `done` and calls `then` (a reload). */
  run: (fn: () => Promise<unknown>, done: string, then?: () => void) => Promise<void>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const run = async (fn: () => Promise<unknown>, done: string, then?: () => void) => {
    setBusy(true);
    setError('');
    setStatus('');
    try {
      await fn();
      setStatus(done);
      then?.();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, status, run };
}

/** The outcome of a section's last action: a status line, or the server's error text. */
export function Outcome({ action }: { action: Action }) {
  return <Feedback status={action.status} error={action.error} />;
}

/** `question`, then `Sí, <verb>` and `Cancelar` (focused: Enter does not destroy by accident). */
export function Confirm({
  question,
  yes,
  busy,
  onYes,
  onNo,
}: {
  question: string;
  yes: string;
  busy: boolean;
  onYes: () => void;
  onNo: () => void;
}) {
  const button = useRef<HTMLButtonElement>(null);
  useLayoutEffect(() => button.current?.focus(), []);
  return (
    <div class="confirm">
      <p>{question}</p>
      <button type="button" class="danger" disabled={busy} onClick={onYes}>
        {yes}
      </button>
      <button type="button" class="secondary" ref={button} onClick={onNo}>
        Cancelar
      </button>
    </div>
  );
}

/** A section of Configuración: its h2, then its parts. */
export function Part({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** The load's error, or `Cargando…` until the data is there. */
export function Pending({ error, loading }: { error: string; loading: string }) {
  return <Loading error={error} loading={loading} />;
}
