// The reply box: a team reply through the operator route (the session's member is its author).
// Outside the 24-hour window the textbox is disabled with the reason, and Enviar plantilla opens
// the template picker.
import { useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { TemplatePicker } from './template-picker';
import { inboxTexts as t } from './texts';

export function Reply({ base, accountId, open, onSent }: { base: string; accountId: string; open: boolean; onSent: () => void }) {
  const [text, setText] = useState('');
  const [picking, setPicking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  const send = async (e: Event) => {
    e.preventDefault();
    if (!text.trim() || busy) return;
    setBusy(true);
    try {
      await call('POST', `${base}/messages`, { text });
      setText('');
      setError('');
      onSent();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : texts.offline);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="reply" onSubmit={send}>
      <label for="reply-text">{t.replyLabel}</label>
      <textarea
        id="reply-text"
        rows={3}
        value={text}
        disabled={!open}
        aria-describedby={!open ? 'reply-closed' : error ? 'reply-error' : undefined}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      {!open && (
        <p id="reply-closed" class="hint">
          {t.windowClosed}
        </p>
      )}
      {error && (
        <p id="reply-error" role="alert" class="field-error">
          {error}
        </p>
      )}
      <div class="actions">
        {!picking && (
          <button type="submit" disabled={!open || busy || !text.trim()}>
            {busy ? t.sending : t.send}
          </button>
        )}
        {!open && !picking && (
          <button type="button" class="secondary" onClick={() => setPicking(true)}>
            {t.sendTemplate}
          </button>
        )}
      </div>
      {picking && (
        <TemplatePicker
          accountId={accountId}
          base={base}
          onDone={(sent) => {
            setPicking(false);
            if (sent) onSent();
          }}
        />
      )}
    </form>
  );
}
