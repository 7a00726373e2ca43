// One automation (/console/automatizaciones/<id>): its state with Activar / Pausar, the flow in
// the JSON editor (PATCH), a test run on the sandbox (POST …/test) and its executions.
import { useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { Feedback, Loading } from '../../ui/feedback';
import { Field } from '../../ui/field';
import { messageOf, useLoad } from '../config/load';
import { FlowEditor } from './editor';
import { Executions } from './executions';
import { type Automation, StatusButton } from './status';
import { autoTexts as t } from './texts';

/** `type` (and a step's `id`) first: the database keeps JSON keys in its own order. */
const typeFirst = ({ id, type, ...rest }: Record<string, unknown>) => ({ ...(id === undefined ? {} : { id }), type, ...rest });

/** What the editor shows: the fields PATCH takes, except status (the buttons) and the start rate. */
const editable = (a: Automation): string =>
  JSON.stringify({ name: a.name, trigger: typeFirst(a.trigger), steps: a.steps.map(typeFirst), phoneNumberId: a.phoneNumberId }, null, 2);

export function AutomationDetail({ base, id, onDenied }: { base: string; id: string; onDenied: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, `automatizaciones/${id}`);
  const path = `${base}/automations/${encodeURIComponent(id)}`;
  const [version, setVersion] = useState(0);
  const one = useLoad<Automation>(path, onDenied, version);
  const [message, setMessage] = useState(new URLSearchParams(location.search).has('creada') ? t.created : '');
  const [error, setError] = useState('');
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

  const done = (text: string) => {
    setMessage(text);
    setError('');
    setVersion((v) => v + 1);
  };
  return (
    <div class="automation-page">
      {title}
      <p class="state-line">
        Estado: <span class={`state state-${a.status}`}>{t.status[a.status]}</span>
        <StatusButton
          base={base}
          automation={a}
          onDone={done}
          onError={(text) => {
            setMessage('');
            setError(text);
          }}
        />
      </p>
      <Feedback status={message} error={error} />
      <section aria-labelledby="flujo">
        <h2 id="flujo">Flujo</h2>
        <FlowEditor
          key={a.id}
          initial={editable(a)}
          submitLabel="Guardar"
          onSave={async (flow) => {
            await call('PATCH', path, flow);
            done(t.saved);
          }}
        />
      </section>
      <section aria-labelledby="probar">
        <h2 id="probar">Probar en el sandbox</h2>
        <TestRun path={path} onStarted={() => setVersion((v) => v + 1)} />
      </section>
      <section aria-labelledby="ejecuciones">
        <h2 id="ejecuciones">Ejecuciones</h2>
        <Executions path={path} version={version} />
      </section>
    </div>
  );
}

function TestRun({ path, onStarted }: { path: string; onStarted: () => void }) {
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async (e: SubmitEvent) => {
    e.preventDefault();
    const to = String(new FormData(e.currentTarget as HTMLFormElement).get('to') ?? '');
    setBusy(true);
    setError('');
    setStatus('');
    try {
      const ex = await call<{ status: string }>('POST', `${path}/test`, { to });
      setStatus(t.testStarted(t.execStatus[ex.status] ?? ex.status));
      onStarted();
    } catch (err) {
      setError(messageOf(err));
      document.getElementById('test-to')?.focus();
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="test-form" onSubmit={run}>
      <p class="hint">{t.testHint}</p>
      <Field id="test-to" name="to" label="Teléfono de prueba" type="tel" required autocomplete="off" error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          Probar
        </button>
      </div>
      <p role="status" class="notice">
        {status}
      </p>
    </form>
  );
}
