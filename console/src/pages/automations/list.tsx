// The account's automations: name (opens it), trigger, state, the executions' counters of
// GET …/automations, and Activar / Pausar (PATCH status). Read again on automation.* events.
import { useEffect, useState } from 'preact/hooks';
import { subscribe } from '../../api/live';
import { BASE, Link } from '../../router';
import { useLoad } from '../config/load';
import { type Automation, StatusButton } from './status';
import { autoTexts as t } from './texts';

const COUNTERS = ['running', 'completed', 'handed_off', 'failed', 'cancelled'] as const;

export function AutomationList({ base, onDenied }: { base: string; onDenied: () => void }) {
  const list = useLoad<{ data: Automation[] }>(`${base}/automations`, onDenied);
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  useEffect(() => {
    const offs = ['automation.completed', 'automation.failed'].map((k) => subscribe(k, list.reload));
    return () => {
      for (const off of offs) off();
    };
  }, []);
  const items = list.data?.data ?? null;
  return (
    <>
      <p class="hint">{t.intro}</p>
      <Link class="button-link" href={`${BASE}/automatizaciones/nueva`}>
        Crear automatización
      </Link>
      {list.error && (
        <p role="alert" class="form-error">
          {list.error}
        </p>
      )}
      {items === null && !list.error && <p role="status">{t.loading}</p>}
      {items?.length === 0 && <p>{t.empty}</p>}
      <p role="status" class="notice">
        {message}
      </p>
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {items && items.length > 0 && (
        <>
          <p class="hint">{t.countsHint}</p>
          <ul class="automations" aria-label={t.title}>
            {items.map((a) => (
              <li key={a.id} class="automation">
                <p class="automation-name">
                  <Link href={`${BASE}/automatizaciones/${a.id}`}>{a.name}</Link>
                  <span class={`state state-${a.status}`}>{t.status[a.status]}</span>
                </p>
                <p class="hint">{t.trigger(a.trigger)}</p>
                <dl class="counters">
                  {COUNTERS.map((k) => (
                    <div key={k}>
                      <dt>{t.counters[k]}</dt>
                      <dd>{a.executions?.[k] ?? 0}</dd>
                    </div>
                  ))}
                </dl>
                <StatusButton
                  base={base}
                  automation={a}
                  onDone={(text) => {
                    setMessage(text);
                    setError('');
                    list.reload();
                  }}
                  onError={(text) => {
                    setMessage('');
                    setError(text);
                  }}
                />
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
