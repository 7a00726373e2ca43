// Webhooks: the account's URLs, `Agregar webhook` (URL, one checkbox per event kind, Guardar →
// the signing secret shown once), and per webhook `Probar`, `Entregas` and `Eliminar`.
import { useLayoutEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { Field } from '../../ui/field';
import { Deliveries } from './deliveries';
import { EVENT_KINDS } from './events';
import { messageOf, useLoad } from './load';
import { ShownOnce, useFocusBack } from './once';
import { configTexts as t } from './texts';

export interface Webhook {
  id: string;
  url: string;
  events: string[] | null;
  enabled: boolean;
  disabledReason: string | null;
}

export function WebhooksSection({ base, onDenied, onChange }: { base: string; onDenied: () => void; onChange: () => void }) {
  const hooks = useLoad<{ data: Webhook[] }>(`${base}/webhooks`, onDenied);
  const [adding, setAdding] = useState(false);
  const [errors, setErrors] = useState<{ url?: string; events?: string }>({});
  const [busy, setBusy] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const opener = useFocusBack(adding || secret !== null);
  useLayoutEffect(() => {
    if (adding) document.getElementById('webhook-url')?.focus();
  }, [adding]);

  const save = async (e: SubmitEvent) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const events = form.getAll('events').map(String);
    setBusy(true);
    setErrors({});
    try {
      const res = await call<Webhook & { secret: string }>('POST', `${base}/webhooks`, {
        url: String(form.get('url') ?? ''),
        ...(events.length ? { events } : {}),
      });
      setSecret(res.secret);
      setAdding(false);
      hooks.reload();
      onChange();
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) onDenied();
      const f = err instanceof ApiError ? err.fields : {};
      const eventsError = Object.keys(f).find((k) => k.startsWith('events'));
      // The URL's problems (refused scheme, private address, plan maximum) go next to the URL.
      setErrors(eventsError ? { events: f[eventsError], url: f.url } : { url: f.url ?? messageOf(err) });
      document.getElementById('webhook-url')?.focus();
    } finally {
      setBusy(false);
    }
  };

  const list = hooks.data?.data ?? [];
  return (
    <section aria-labelledby="webhooks">
      <h2 id="webhooks">Webhooks</h2>
      {hooks.error && (
        <p role="alert" class="form-error">
          {hooks.error}
        </p>
      )}
      {hooks.data && list.length === 0 && <p class="hint">{t.webhooksEmpty}</p>}
      <ul class="hooks">
        {list.map((w) => (
          <WebhookItem
            key={w.id}
            base={base}
            hook={w}
            onDeleted={() => {
              hooks.reload();
              onChange();
            }}
          />
        ))}
      </ul>
      {secret ? (
        <ShownOnce id="new-secret" label="Secreto de firma" value={secret} note={t.secretOnce} onDone={() => setSecret(null)} />
      ) : adding ? (
        <form class="inline-form" onSubmit={save}>
          <Field id="webhook-url" name="url" label="URL" type="url" required placeholder="https://" error={errors.url} />
          <fieldset aria-describedby={errors.events ? 'webhook-events-error' : 'webhook-events-hint'}>
            <legend>Eventos</legend>
            <p id="webhook-events-hint" class="hint">
              {t.eventsHint}
            </p>
            <div class="checks">
              {EVENT_KINDS.map((k) => (
                <label key={k}>
                  <input type="checkbox" name="events" value={k} /> {k}
                </label>
              ))}
            </div>
            {errors.events && (
              <p id="webhook-events-error" class="field-error">
                {errors.events}
              </p>
            )}
          </fieldset>
          <div class="actions">
            <button type="submit" disabled={busy}>
              Guardar
            </button>
            <button type="button" class="secondary" onClick={() => setAdding(false)}>
              Cancelar
            </button>
          </div>
        </form>
      ) : (
        <button type="button" ref={opener} onClick={() => setAdding(true)}>
          Agregar webhook
        </button>
      )}
    </section>
  );
}

function WebhookItem({ base, hook, onDeleted }: { base: string; hook: Webhook; onDeleted: () => void }) {
  const path = `${base}/webhooks/${hook.id}`;
  const [open, setOpen] = useState(false);
  const [version, setVersion] = useState(0);
  const [status, setStatus] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);

  const act = async (run: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setError('');
    setStatus('');
    try {
      await run();
      setStatus(done);
      setVersion((v) => v + 1);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <li class="hook">
      <p class="hook-url">
        <code>{hook.url}</code>
      </p>
      <p class="hint">
        Eventos: {hook.events?.length ? hook.events.join(', ') : t.allEvents}
        {!hook.enabled && ` · desactivado (${hook.disabledReason ?? 'manual'})`}
      </p>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => act(() => call('POST', `${path}/test`), t.testQueued)}>
          Probar
        </button>
        <button type="button" class="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
          Entregas
        </button>
        {confirming ? (
          <>
            <button type="button" class="danger" onClick={() => act(() => call('DELETE', path).then(onDeleted), '')}>
              Sí, eliminar
            </button>
            <button type="button" class="secondary" onClick={() => setConfirming(false)}>
              Cancelar
            </button>
          </>
        ) : (
          <button type="button" class="secondary" onClick={() => setConfirming(true)}>
            Eliminar
          </button>
        )}
      </div>
      {confirming && <p>{t.deleteAsk(hook.url)}</p>}
      <p role="status" class="hint">
        {status}
      </p>
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {open && (
        <Deliveries path={path} version={version} onRedelivered={() => setVersion((v) => v + 1)} onStatus={setStatus} onError={setError} />
      )}
    </li>
  );
}
