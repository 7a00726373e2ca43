// A secret shown once (a new key, a webhook's signing secret): the value in a read-only field,
// `Copiar` (clipboard API), the warning, and `Listo`, which closes it for good.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { configTexts as t } from './texts';

export function ShownOnce({
  id,
  label,
  value,
  note,
  onDone,
}: {
  id: string;
  label: string;
  value: string;
  note: string;
  onDone: () => void;
}) {
  const input = useRef<HTMLInputElement>(null);
  const [status, setStatus] = useState('');
  useLayoutEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setStatus(t.copied);
    } catch {
      input.current?.select();
      setStatus(t.copyFailed);
    }
  };
  return (
    <div class="once">
      <div class="field">
        <label for={id}>{label}</label>
        <input id={id} ref={input} readOnly value={value} class="secret" spellcheck={false} />
      </div>
      <p>{note}</p>
      <div class="actions">
        <button type="button" class="secondary" onClick={copy}>
          Copiar
        </button>
        <button type="button" onClick={onDone}>
          Listo
        </button>
      </div>
      <p role="status" class="hint">
        {status}
      </p>
    </div>
  );
}

/** The button that opened a form or a secret: it takes the focus back when `open` turns false. */
export function useFocusBack(open: boolean) {
  const ref = useRef<HTMLButtonElement>(null);
  const was = useRef(open);
  useLayoutEffect(() => {
    if (was.current && !open) ref.current?.focus();
    was.current = open;
  }, [open]);
  return ref;
}
