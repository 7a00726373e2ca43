// Campañas (console.md "Pages"): the account's campaigns with their state and live counters
// (/console/campanas), one campaign (/console/campanas/<id>) and the form of a new one
// (/console/campanas/nueva, admins and owners). Over the operator account routes with the session.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link } from '../../router';
import type { Role } from '../../sections';
import { texts } from '../../texts';
import { Counters, StatusBadge } from './counters';
import { CampaignDetail } from './detail';
import { CampaignForm } from './form';
import { useCampaignLive } from './live';
import { campaignTexts as t } from './texts';
import type { Campaign } from './types';
import './campaigns.css';

export function CampaignsPage({ accountId, role, sub }: { accountId: string; role: Role; sub: string | null }) {
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  const manager = role !== 'agent';
  // An agent who follows a link to the form gets the list (the server would refuse the create anyway).
  if (sub === 'nueva') return manager ? <CampaignForm base={base} /> : <CampaignList base={base} manager={false} />;
  if (sub) return <CampaignDetail base={base} id={sub} manager={manager} />;
  return <CampaignList base={base} manager={manager} />;
}

function CampaignList({ base, manager }: { base: string; manager: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'campanas');
  const [items, setItems] = useState<Campaign[] | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    call<{ data: Campaign[] }>('GET', `${base}/campaigns`)
      .then((r) => {
        if (!live) return;
        setItems(r.data);
        setError('');
      })
      .catch((e: unknown) => live && setError(e instanceof ApiError ? e.message : texts.offline));
    return () => {
      live = false;
    };
  }, [base, tick]);
  const shown = useRef<Campaign[] | null>(null);
  shown.current = items;
  useCampaignLive(
    (c) => {
      const list = shown.current;
      if (list?.some((x) => x.id === c.id)) setItems(list.map((x) => (x.id === c.id ? c : x)));
      else setTick((n) => n + 1);
    },
    (id) => shown.current?.some((x) => x.id === id) ?? false,
    () => setTick((n) => n + 1),
  );

  return (
    <div class="cmp">
      <div class="cmp-head">
        <h1 ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        {manager && (
          <Link href={`${BASE}/campanas/nueva`} class="cmp-button">
            {t.create}
          </Link>
        )}
      </div>
      {error && <p role="alert">{error}</p>}
      {items === null && !error && <p role="status">{t.loading}</p>}
      {items?.length === 0 && <p class="hint">{manager ? t.empty : t.emptyAgent}</p>}
      {items && items.length > 0 && (
        <ul aria-label={t.title} class="cmp-list">
          {items.map((c) => (
            <li key={c.id} class="cmp-item">
              <div class="cmp-item-top">
                <Link href={`${BASE}/campanas/${c.id}`}>{c.name}</Link>
                <StatusBadge status={c.status} />
              </div>
              <Counters c={c} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
