// One agent (/console/agentes/<id>): state with Activar / Pausar, the numbers that use it, its
// configuration form, the test chat and its reviews.
import { useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { Feedback, Loading } from '../../ui/feedback';
import { messageOf, useLoad } from '../config/load';
import { AgentForm } from './config-form';
import { Reviews } from './reviews';
import { TestChat } from './test-chat';
import { agentTexts as t } from './texts';
import { type Agent, numberLabel, type PhoneNumber } from './types';

export function AgentDetail({ base, id, onDenied }: { base: string; id: string; onDenied: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, `agentes/${id}`);
  const path = `${base}/agents/${encodeURIComponent(id)}`;
  const one = useLoad<Agent>(path, onDenied);
  const numbers = useLoad<{ data: PhoneNumber[] }>(`${base}/phone-numbers`, onDenied);
  const [message, setMessage] = useState(new URLSearchParams(location.search).has('creado') ? t.created : '');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const a = one.data;
  const title = (
    <h1 ref={heading} tabIndex={-1}>
      {a?.name ?? t.title}
    </h1>
  );
  if (one.error || !a)
    return (
      <>
        {title}
        <Loading error={one.error} loading={t.loading} />
      </>
    );

  const active = a.status === 'active';
  const toggle = async () => {
    setBusy(true);
    try {
      one.set(await call<Agent>('PATCH', path, { status: active ? 'paused' : 'active' }));
      setMessage(active ? t.paused : t.activated);
      setError('');
    } catch (e) {
      setMessage('');
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  const used = (numbers.data?.data ?? []).filter((n) => n.agentId === a.id);
  return (
    <div class="agent-page">
      {title}
      <p class="state-line">
        Estado: <span class={`state state-${a.status === 'active' ? 'active' : 'paused'}`}>{t.status[a.status]}</span>
        <span class="hint">{t.version(a.version)}</span>
        <button type="button" class={active ? 'secondary' : undefined} disabled={busy} onClick={toggle}>
          {active ? 'Pausar' : 'Activar'}
        </button>
      </p>
      <Feedback status={message} error={error} />
      <section aria-labelledby="agent-numbers">
        <h2 id="agent-numbers">Números</h2>
        {numbers.data &&
          (used.length === 0 ? (
            <p class="hint">{t.noNumbers}</p>
          ) : (
            <ul class="plain">
              {used.map((n) => (
                <li key={n.id}>{numberLabel(n)}</li>
              ))}
            </ul>
          ))}
      </section>
      <section aria-labelledby="agent-config">
        <h2 id="agent-config">Configuración</h2>
        <AgentForm
          key={a.version}
          path={path}
          agent={a}
          onSaved={(saved) => {
            // The saved agent is the page's data at once (as after Activar / Pausar): reloading it
            // instead left a moment in which "Guardamos…" showed over the old form, which the
            // reload's answer then remounted (key = version), throwing away what was typed meanwhile.
            one.set(saved);
            setMessage(t.saved(saved.version));
            setError('');
          }}
        />
      </section>
      <section aria-labelledby="agent-chat">
        <h2 id="agent-chat">Chat de prueba</h2>
        <TestChat path={path} />
      </section>
      <section aria-labelledby="agent-reviews">
        <h2 id="agent-reviews">Revisiones</h2>
        <Reviews path={path} enabled={a.review !== null} />
      </section>
    </div>
  );
}
