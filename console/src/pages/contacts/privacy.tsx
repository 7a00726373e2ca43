// A contact's data on request (docs/privacy.md "Erasure and export of one person"), for owners and
// admins: `Exportar datos` downloads everything held about the person (GET …/export, one JSON
// file), `Borrar datos del contacto` asks in a modal dialog that names what is erased, then
// DELETE …/contacts/{contactId}. The server's refusal is shown inside the dialog.
import { useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { Modal } from '../../ui/modal';
import { contactsTexts as t } from './texts';

export function ContactPrivacy({ base, id, who, onErased }: { base: string; id: string; who: string; onErased: () => void }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const opener = useRef<HTMLButtonElement>(null);

  const download = () => {
    // A link to the attachment: the browser downloads it with the session's cookie.
    const a = document.createElement('a');
    a.href = `${base}/contacts/${encodeURIComponent(id)}/export`;
    a.download = '';
    document.body.appendChild(a);
    a.click();
    a.remove();
  };

  const cancel = () => {
    setAsking(false);
    setError('');
    opener.current?.focus();
  };

  const erase = async () => {
    setBusy(true);
    setError('');
    try {
      await call('DELETE', `${base}/contacts/${encodeURIComponent(id)}`);
      setAsking(false);
      onErased();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : texts.offline);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="contact-privacy" aria-labelledby="contact-privacy">
      <h2 id="contact-privacy">{t.privacy}</h2>
      <p class="hint">{t.privacyHint}</p>
      <div class="actions">
        <button type="button" class="secondary" onClick={download}>
          {t.exportData}
        </button>
        <button type="button" class="danger" ref={opener} onClick={() => setAsking(true)}>
          {t.eraseData}
        </button>
      </div>
      {asking && <EraseDialog who={who} busy={busy} error={error} onConfirm={erase} onCancel={cancel} />}
    </section>
  );
}

function EraseDialog(p: { who: string; busy: boolean; error: string; onConfirm: () => void; onCancel: () => void }) {
  return (
    <Modal class="erase-dialog" labelledBy="erase-title" describedBy="erase-what" onCancel={p.onCancel}>
      <h2 id="erase-title">{t.eraseTitle(p.who)}</h2>
      <div id="erase-what">
        <p>{t.eraseIntro}</p>
        <ul>
          {t.eraseWhat.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
        <p>{t.eraseKeeps}</p>
        <p>
          <strong>{t.eraseFinal}</strong>
        </p>
      </div>
      {p.error && (
        <p role="alert" class="form-error">
          {p.error}
        </p>
      )}
      <div class="actions">
        <button type="button" class="danger" disabled={p.busy} onClick={p.onConfirm}>
          {t.eraseConfirm}
        </button>
        <button type="button" class="secondary" onClick={p.onCancel}>
          {t.cancel}
        </button>
      </div>
    </Modal>
  );
}
