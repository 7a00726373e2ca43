// The conversation's private notes for the team (never sent to the contact).
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { inboxTexts as t } from './texts';
import type { Note } from './types';

export function Notes({ base }: { base: string }) {
  const [notes, setNotes] = useState<Note[]>([]);
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);

  useEffect(() => {
    call<{ data: Note[] }>('GET', `${base}/notes`)
      .then((r) => setNotes(r.data))
      .catch((e: unknown) => setError(e instanceof ApiError ? e.message : texts.offline));
  }, [base, tick]);

  const save = async (e: Event) => {
    e.preventDefault();
    if (!text.trim()) return;
    try {
      await call('POST', `${base}/notes`, { text });
      setText('');
      setError('');
      setTick((n) => n + 1);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : texts.offline);
    }
  };

  return (
    <section class="notes" aria-labelledby="notes-title">
      <h3 id="notes-title">{t.notes}</h3>
      {notes.length === 0 ? (
        <p class="hint">{t.noNotes}</p>
      ) : (
        <ul aria-label={t.notes}>
          {notes.map((n) => (
            <li key={n.id} class="note">
              <p>{n.text}</p>
              <p class="hint">
                {n.by.name} · {new Date(n.createdAt).toLocaleString('es-AR')}
              </p>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={save}>
        <label for="note-text">{t.noteLabel}</label>
        <textarea id="note-text" rows={2} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
        {error && (
          <p role="alert" class="field-error">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="secondary" disabled={!text.trim()}>
            {t.saveNote}
          </button>
        </div>
      </form>
    </section>
  );
}
