// One campaign: its state, live counters, what it sends (template, variables, audience, number,
// schedule) and, for admins and owners, `Cancelar` while it can still be stopped.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { BASE, Link } from '../../router';
import { texts } from '../../texts';
import { Counters, StatusBadge } from './counters';
import { useCampaignLive } from './live';
import { formatTime, campaignTexts as t } from './texts';
import { type Campaign, cancellable, type PhoneNumber, type Template } from './types';

const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

export function CampaignDetail({ base, id, manager }: { base: string; id: string; manager: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, `campanas/${id}`);
  const [c, setC] = useState<Campaign | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  /** undefined while loading; null: not found (deleted, or the read failed). */
  const [template, setTemplate] = useState<Template | null | undefined>(undefined);
  const [number, setNumber] = useState<PhoneNumber | null | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState('');
  const [actionError, setActionError] = useState('');

  useEffect(() => {
    let live = true;
    call<Campaign>('GET', `${base}/campaigns/${encodeURIComponent(id)}`)
      .then((r) => {
        if (!live) return;
        setC(r);
        setError('');
      })
      .catch((e: unknown) => live && setError(e instanceof ApiError && e.status === 404 ? t.notFound : messageOf(e)));
    return () => {
      live = false;
    };
  }, [base, id, tick]);
  // The template and the number, by id, once (for their names).
  const templateId = c?.templateId ?? null;
  const numberId = c?.phoneNumberId ?? null;
  useEffect(() => {
    if (!templateId) return;
    call<{ data: Template[] }>('GET', `${base}/templates`)
      .then((r) => setTemplate(r.data.find((x) => x.id === templateId) ?? null))
      .catch(() => setTemplate(null));
  }, [base, templateId]);
  useEffect(() => {
    if (!numberId) return;
    call<{ phoneNumbers: PhoneNumber[] }>('GET', base)
      .then((r) => setNumber(r.phoneNumbers.find((x) => x.id === numberId) ?? null))
      .catch(() => setNumber(null));
  }, [base, numberId]);
  useCampaignLive(
    (x) => x.id === id && setC(x),
    (x) => x === id,
    () => setTick((n) => n + 1),
  );

  const cancel = async () => {
    setBusy(true);
    setActionError('');
    try {
      setC(await call<Campaign>('POST', `${base}/campaigns/${encodeURIComponent(id)}/cancel`));
      setConfirming(false);
      setNote(t.cancelled);
      heading.current?.focus();
    } catch (e) {
      setActionError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  const back = (
    <p>
      <Link href={`${BASE}/campanas`}>{t.back}</Link>
    </p>
  );
  if (!c)
    return (
      <div class="cmp">
        {back}
        <h1 ref={heading} tabIndex={-1}>
          {t.title}
        </h1>
        {error ? <p role="alert">{error}</p> : <p role="status">{t.loading}</p>}
      </div>
    );
  const filters = Object.entries(c.audience.attributes ?? {});
  const vars = Object.entries(c.variables);
  return (
    <div class="cmp">
      {back}
      <div class="cmp-head">
        <h1 ref={heading} tabIndex={-1}>
          {c.name}
        </h1>
        <StatusBadge status={c.status} />
      </div>
      <p role="status" class="notice">
        {note}
      </p>
      <Counters c={c} label="Contadores" />
      {c.status === 'sending' && <p class="hint">{t.liveHint}</p>}
      <dl class="cmp-facts">
        <div>
          <dt>Plantilla</dt>
          <dd>{template === undefined && c.templateId ? t.loading : template ? `${template.name} (${template.language})` : '—'}</dd>
        </div>
        <div>
          <dt>Variables</dt>
          <dd>{vars.length === 0 ? 'Atributos de cada contacto' : vars.map(([k, v]) => `${k} = ${v}`).join(' · ')}</dd>
        </div>
        <div>
          <dt>Audiencia</dt>
          <dd>{filters.length === 0 ? 'Todos los contactos' : filters.map(([k, v]) => `${k} = ${v}`).join(' · ')}</dd>
        </div>
        <div>
          <dt>Número</dt>
          <dd>
            {number === undefined && c.phoneNumberId
              ? t.loading
              : number
                ? `${number.name ? `${number.name} · ` : ''}${number.phone}`
                : '—'}
          </dd>
        </div>
        <div>
          <dt>Programada para</dt>
          <dd>{formatTime(c.scheduledAt)}</dd>
        </div>
        <div>
          <dt>Empezó</dt>
          <dd>{formatTime(c.startedAt)}</dd>
        </div>
        <div>
          <dt>Terminó</dt>
          <dd>{formatTime(c.completedAt)}</dd>
        </div>
      </dl>
      {error && <p role="alert">{error}</p>}
      {manager &&
        cancellable(c) &&
        (confirming ? (
          <div class="cmp-confirm">
            <p>{t.cancelAsk}</p>
            <div class="cmp-actions">
              <button type="button" class="danger" disabled={busy} onClick={cancel}>
                Sí, cancelar
              </button>
              <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                No
              </button>
            </div>
          </div>
        ) : (
          <div class="cmp-actions">
            <button type="button" class="secondary" onClick={() => setConfirming(true)}>
              Cancelar
            </button>
          </div>
        ))}
      {actionError && (
        <p role="alert" class="form-error">
          {actionError}
        </p>
      )}
    </div>
  );
}
