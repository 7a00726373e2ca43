// The account's agents: name (opens it), state, version and the numbers that use it (the numbers'
// agentId, GET …/phone-numbers); `Crear agente` with a name (POST, paused) opens the new one.
import { useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { BASE, Link, navigate } from '../../router';
import { Field } from '../../ui/field';
import { messageOf, useLoad } from '../config/load';
import { agentTexts as t } from './texts';
import { type Agent, numberLabel, type PhoneNumber } from './types';

export function AgentList({ base, onDenied }: { base: string; onDenied: () => void }) {
  const agents = useLoad<{ data: Agent[] }>(`${base}/agents`, onDenied);
  const numbers = useLoad<{ data: PhoneNumber[] }>(`${base}/phone-numbers`, onDenied);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const create = async (e: SubmitEvent) => {
    e.preventDefault();
    const name = String(new FormData(e.currentTarget as HTMLFormElement).get('name') ?? '');
    setBusy(true);
    try {
      const a = await call<Agent>('POST', `${base}/agents`, { name });
      navigate(`${BASE}/agentes/${a.id}?creado=1`);
    } catch (err) {
      setError(err instanceof ApiError ? (err.fields.name ?? err.message) : messageOf(err));
      document.getElementById('agent-name')?.focus();
    } finally {
      setBusy(false);
    }
  };

  const items = agents.data?.data ?? null;
  const usedBy = (id: string) => (numbers.data?.data ?? []).filter((n) => n.agentId === id).map(numberLabel);
  return (
    <>
      <p class="hint">{t.intro}</p>
      <form class="create-agent" onSubmit={create}>
        <Field id="agent-name" name="name" label="Nombre del agente" required maxLength={120} autocomplete="off" error={error} />
        <button type="submit" disabled={busy}>
          Crear agente
        </button>
      </form>
      {agents.error && (
        <p role="alert" class="form-error">
          {agents.error}
        </p>
      )}
      {items === null && !agents.error && <p role="status">{t.loading}</p>}
      {items?.length === 0 && <p>{t.empty}</p>}
      {items && items.length > 0 && (
        <ul class="agents" aria-label={t.title}>
          {items.map((a) => (
            <li key={a.id} class="agent">
              <p class="automation-name">
                <Link href={`${BASE}/agentes/${a.id}`}>{a.name}</Link>
                <span class={`state state-${a.status}`}>{t.status[a.status]}</span>
              </p>
              <p class="hint">
                {t.version(a.version)}
                {a.model ? ` · ${a.model}` : ''}
              </p>
              <p>{t.numbers(usedBy(a.id))}</p>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
