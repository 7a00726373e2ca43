// A move to a `won` stage asks the sale (console.md "Casos"): a modal `dialog` with the shared
// Monto / Moneda / Confirmar form (ui/won-form.tsx) and Cancelar; Escape cancels too. The server's
// refusal is shown inside it.
import { useLayoutEffect, useRef } from 'preact/hooks';
import { type Sale, WonForm } from '../../ui/won-form';
import { casesTexts as t } from './texts';

export function WonDialog({
  who,
  busy,
  error,
  onConfirm,
  onCancel,
}: {
  who: string;
  busy: boolean;
  error: string;
  onConfirm: (sale: Sale) => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useLayoutEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      class="won-dialog"
      aria-labelledby="won-title"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="won-title">{t.wonTitle(who)}</h2>
      <p class="hint">{t.wonHint}</p>
      <WonForm idPrefix="board-won" busy={busy} autoFocus onConfirm={onConfirm}>
        <button type="button" class="secondary" onClick={onCancel}>
          {t.cancel}
        </button>
      </WonForm>
      {error && (
        <p role="alert" class="field-error">
          {error}
        </p>
      )}
    </dialog>
  );
}
