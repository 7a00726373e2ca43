// A move to a `won` stage asks the sale (console.md "Casos"): a modal `dialog` with the shared
// Monto / Moneda / Confirmar form (ui/won-form.tsx) and Cancelar; Escape cancels too. The server's
// refusal is shown inside it.
import { Modal } from '../../ui/modal';
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
  return (
    <Modal class="won-dialog" labelledBy="won-title" onCancel={onCancel}>
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
    </Modal>
  );
}
