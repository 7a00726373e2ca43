// Automatizaciones (console.md "Pages"; docs/automations.md): the list with state and counters,
// a new flow (/console/automatizaciones/nueva) and one automation (/console/automatizaciones/<id>),
// over the operator account routes with the session. A 403 shows only the "no permiso" text.
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link, navigate } from '../../router';
import { texts } from '../../texts';
import { AutomationDetail } from './detail';
import { FlowEditor } from './editor';
import { AutomationList } from './list';
import { autoTexts as t } from './texts';
import './automations.css';

export function AutomationsPage({ accountId, sub }: { accountId: string; sub: string | null }) {
  const [denied, setDenied] = useState(false);
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  const onDenied = () => setDenied(true);
  const id = sub?.split('/')[0] ?? null;
  return (
    <div class="automations-page">
      {id && (
        <p class="crumb">
          <Link href={`${BASE}/automatizaciones`}>{t.back}</Link>
        </p>
      )}
      {denied ? (
        <Title text={t.title} routeKey="automatizaciones-denied" body={<p>{texts.denied}</p>} />
      ) : id === 'nueva' ? (
        <NewAutomation base={base} />
      ) : id ? (
        <AutomationDetail key={id} base={base} id={id} onDenied={onDenied} />
      ) : (
        <Title text={t.title} routeKey="automatizaciones" body={<AutomationList base={base} onDenied={onDenied} />} />
      )}
    </div>
  );
}

function Title({ text, routeKey, body }: { text: string; routeKey: string; body: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, routeKey);
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {text}
      </h1>
      {body}
    </>
  );
}

function NewAutomation({ base }: { base: string }) {
  return (
    <Title
      text={t.newFlow.name}
      routeKey="automatizaciones/nueva"
      body={
        <FlowEditor
          initial={JSON.stringify({ name: t.newFlow.name, trigger: t.newFlow.trigger, steps: t.newFlow.steps }, null, 2)}
          submitLabel="Crear"
          onSave={async (flow) => {
            const a = await call<{ id: string }>('POST', `${base}/automations`, flow);
            navigate(`${BASE}/automatizaciones/${a.id}?creada=1`);
          }}
        />
      }
    />
  );
}
