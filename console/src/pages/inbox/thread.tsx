// One conversation: its contact and who handles it (with Devolver al bot when the team does), its
// messages with status ticks, the reply box (disabled outside the 24-hour window, with the reason)
// and the team's private notes.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { BASE, Link } from '../../router';
import { texts } from '../../texts';
import { CasePanel } from './case-panel';
import { onInboxEvent } from './live';
import { Notes } from './notes';
import { Reply } from './reply';
import { inboxTexts as t } from './texts';
import { type Conversation, contactName, type Message } from './types';

const errorText = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

function Tick({ m }: { m: Message }) {
  const [glyph, label] = t.ticks[m.status] ?? t.ticks.pending!;
  return (
    <span class={`tick tick-${m.status}`}>
      <span role="img" aria-label={label} title={label}>
        {glyph}
      </span>
      {m.status === 'failed' && m.error && <span class="tick-reason"> {m.error}</span>}
    </span>
  );
}

const time = (iso: string) =>
  new Date(iso).toLocaleString('es-AR', { day: '2-digit', month: '2-digit', hour: '2-digit', minute: '2-digit' });

export function Thread({ accountId, id, onChanged }: { accountId: string; id: string; onChanged: () => void }) {
  const base = `/admin/v1/accounts/${accountId}/conversations/${id}`;
  const [conv, setConv] = useState<Conversation | null>(null);
  const [messages, setMessages] = useState<Message[]>([]);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [tick, setTick] = useState(0);
  // The case stays on screen after it closes here (its state, its reason still editable).
  const [caseId, setCaseId] = useState<string | null>(null);
  useEffect(() => {
    if (conv?.openCaseId) setCaseId(conv.openCaseId);
  }, [conv?.openCaseId]);

  useEffect(() => {
    let live = true;
    Promise.all([call<Conversation>('GET', base), call<{ data: Message[] }>('GET', `${base}/messages?limit=100`)])
      .then(([c, m]) => {
        if (!live) return;
        setConv(c);
        setMessages(m.data);
        setError('');
      })
      .catch((e: unknown) => live && setError(errorText(e)));
    return () => {
      live = false;
    };
  }, [base, tick]);
  useEffect(() => onInboxEvent(() => setTick((n) => n + 1)), []);

  const refresh = () => {
    setTick((n) => n + 1);
    onChanged();
  };
  const handBack = async () => {
    try {
      await call('POST', `${base}/handback`);
      setNotice(t.handedBack);
      refresh();
    } catch (e) {
      setError(errorText(e));
    }
  };

  const open = conv?.windowOpenUntil ? new Date(conv.windowOpenUntil).getTime() > Date.now() : false;
  const handling = conv?.handling.type ?? 'none';

  return (
    <article class="thread" aria-labelledby="thread-title">
      <p class="back">
        <Link href={`${BASE}/conversaciones`}>← {t.back}</Link>
      </p>
      {error && <p role="alert">{error}</p>}
      {!conv && !error && <p role="status">{t.loading}</p>}
      {conv && (
        <>
          <header class="thread-head">
            <h2 id="thread-title">{contactName(conv.contact)}</h2>
            {conv.contact.phone && conv.contact.name && <p class="hint">{conv.contact.phone}</p>}
            <p class="thread-handling">
              {t.handledBy}:{' '}
              <span class={`handling handling-${handling}`}>
                {t.handling[handling]}
                {conv.handling.name ? ` (${conv.handling.name})` : ''}
              </span>
              {conv.handling.type === 'team' && (
                <button type="button" class="secondary" onClick={handBack}>
                  {t.handBack}
                </button>
              )}
            </p>
            <p role="status" class="notice">
              {notice}
            </p>
          </header>
          <ol class="messages" aria-label={t.messages}>
            {messages.length === 0 && <li class="hint">{t.noMessages}</li>}
            {messages.map((m) => (
              <li key={m.id} class={`message ${m.direction}`}>
                {m.direction === 'outbound' && (
                  <span class="by">
                    {m.by?.name ?? t.handling[m.from === 'agent' ? 'agent' : m.from === 'automation' ? 'automation' : 'team']}
                  </span>
                )}
                <p class="text">{m.text ?? (m.template ? `${t.template}: ${m.template.name}` : `[${m.type}]`)}</p>
                <span class="meta">
                  <time dateTime={m.timestamp ?? m.createdAt}>{time(m.timestamp ?? m.createdAt)}</time>
                  {m.direction === 'outbound' && <Tick m={m} />}
                </span>
              </li>
            ))}
          </ol>
          <Reply base={base} accountId={accountId} open={open} onSent={refresh} />
          {caseId && <CasePanel accountId={accountId} caseId={caseId} onChanged={refresh} />}
          <Notes base={base} />
        </>
      )}
    </article>
  );
}
