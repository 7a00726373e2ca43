// Agentes de IA (console.md "Pages"; docs/agents.md): the list with the numbers that use each
// agent, and one agent (/console/agentes/<id>): configuration, test chat, reviews. Over the
// operator account routes with the session; a 403 shows only the "no permiso" text.
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { useFocusOnChange } from '../../focus';
import { BASE, Link } from '../../router';
import { texts } from '../../texts';
import { AgentDetail } from './detail';
import { AgentList } from './list';
import { agentTexts as t } from './texts';
import '../automations/automations.css';
import './agents.css';

export function AgentsPage({ accountId, sub }: { accountId: string; sub: string | null }) {
  const [denied, setDenied] = useState(false);
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  const onDenied = () => setDenied(true);
  const id = sub?.split('/')[0] ?? null;
  return (
    <div class="agents-page">
      {id && (
        <p class="crumb">
          <Link href={`${BASE}/agentes`}>{t.back}</Link>
        </p>
      )}
      {denied ? (
        <Title body={<p>{texts.denied}</p>} />
      ) : id ? (
        <AgentDetail key={id} base={base} id={id} onDenied={onDenied} />
      ) : (
        <Title body={<AgentList base={base} onDenied={onDenied} />} />
      )}
    </div>
  );
}

function Title({ body }: { body: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'agentes');
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {t.title}
      </h1>
      {body}
    </>
  );
}
