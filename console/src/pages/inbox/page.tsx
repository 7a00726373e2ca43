// Conversaciones, the team inbox: the list (newest activity first, who handles each one) and the
// open conversation (/console/conversaciones/<id>): side by side when wide, one at a time at 360 px.
// Live: the list and the open conversation are read again on the stream's message and
// conversation events (api/live.ts; without a stream, nothing happens).
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import './inbox.css';
import { BASE, Link } from '../../router';
import { texts } from '../../texts';
import { onInboxEvent } from './live';
import { inboxTexts as t } from './texts';
import { Thread } from './thread';
import { contactName, type InboxItem } from './types';

const when = (iso: string): string => {
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today
    ? d.toLocaleTimeString('es-AR', { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString('es-AR', { day: '2-digit', month: '2-digit' });
};

export function InboxPage({ accountId, openId }: { accountId: string; openId: string | null }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'conversaciones');
  const [items, setItems] = useState<InboxItem[] | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let live = true;
    call<{ data: InboxItem[] }>('GET', `/admin/v1/accounts/${accountId}/conversations?limit=50`)
      .then((r) => {
        if (!live) return;
        setItems(r.data);
        setError('');
      })
      .catch((e: unknown) => live && setError(e instanceof ApiError ? e.message : texts.offline));
    return () => {
      live = false;
    };
  }, [accountId, tick]);
  useEffect(() => onInboxEvent(() => setTick((n) => n + 1)), []);

  return (
    <div class={`inbox${openId ? ' has-open' : ''}`}>
      <section class="inbox-list" aria-labelledby="inbox-title">
        <h1 id="inbox-title" ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        {error && <p role="alert">{error}</p>}
        {items === null && !error && <p role="status">{t.loading}</p>}
        {items?.length === 0 && <p>{t.empty}</p>}
        {items && items.length > 0 && (
          <ul aria-label={t.title} class="conversations">
            {items.map((c) => (
              <li key={c.id}>
                <Link href={`${BASE}/conversaciones/${c.id}`} aria-current={c.id === openId ? 'true' : undefined} class="conversation-item">
                  <span class="conv-top">
                    <span class="conv-name">{contactName(c.contact)}</span>
                    {c.lastMessage && <span class="conv-time">{when(c.lastMessage.createdAt)}</span>}
                  </span>
                  <span class="conv-last">
                    {c.lastMessage?.direction === 'outbound' && (
                      <>
                        <span aria-hidden="true">↩ </span>
                        <span class="sr-only">{t.ours}</span>
                      </>
                    )}
                    {c.lastMessage?.text ?? ''}
                  </span>
                  <span class={`handling handling-${c.handling.type ?? 'none'}`}>{t.handling[c.handling.type ?? 'none']}</span>
                </Link>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section class="inbox-thread" aria-label={openId ? undefined : t.title}>
        {openId ? (
          <Thread key={openId} accountId={accountId} id={openId} onChanged={() => setTick((n) => n + 1)} />
        ) : (
          <p class="hint">{t.pick}</p>
        )}
      </section>
    </div>
  );
}
