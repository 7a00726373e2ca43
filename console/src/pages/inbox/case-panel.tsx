// The case panel of an open conversation (console.md "Case panel"): select Etapa (the stages of its
// pipeline), select Motivo (reasons and sub-reasons: reasonSource person), Ganado (asks Monto and
// Moneda, then Confirmar), Perdido, Cerrar caso. Each calls the case's operator route as the member.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { WonForm } from '../../ui/won-form';
import { inboxTexts as t } from './texts';

interface Stage {
  id: string;
  name: string;
  kind: 'open' | 'won' | 'lost';
}
interface Pipeline {
  id: string;
  name: string;
  stages: Stage[];
}
interface Reason {
  name: string;
  subreasons: { name: string }[];
}
interface Case {
  id: string;
  status: 'open' | 'closed';
  stage: { pipeline: { id: string }; stage: Stage } | null;
  reason: string | null;
  subreason: string | null;
  outcome: 'won' | 'lost' | null;
}

const SEP = '\u0000';

export function CasePanel({ accountId, caseId, onChanged }: { accountId: string; caseId: string; onChanged: () => void }) {
  const root = `/admin/v1/accounts/${accountId}`;
  const [c, setCase] = useState<Case | null>(null);
  const [pipelines, setPipelines] = useState<Pipeline[]>([]);
  const [reasons, setReasons] = useState<Reason[]>([]);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [winning, setWinning] = useState(false);

  useEffect(() => {
    Promise.all([
      call<Case>('GET', `${root}/cases/${caseId}`),
      call<{ data: Pipeline[] }>('GET', `${root}/pipelines`),
      call<{ data: Reason[] }>('GET', `${root}/reasons`),
    ])
      .then(([k, p, r]) => {
        setCase(k);
        setPipelines(p.data);
        setReasons(r.data);
      })
      .catch((e: unknown) => setError(e instanceof ApiError ? e.message : texts.offline));
  }, [root, caseId]);

  const act = async (path: string, body: unknown, done: string) => {
    try {
      const next = await call<Case>('POST', `${root}/cases/${caseId}/${path}`, body);
      setCase(next);
      setError('');
      setNotice(done);
      setWinning(false);
      onChanged();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : texts.offline);
    }
  };

  if (!c) return error ? <p role="alert">{error}</p> : null;
  const stages = c.stage ? (pipelines.find((p) => p.id === c.stage!.pipeline.id)?.stages ?? []) : pipelines.flatMap((p) => p.stages);
  const reasonValue = c.reason ? [c.reason, c.subreason ?? ''].join(SEP) : '';
  const closed = c.status === 'closed';

  return (
    <section class="case-panel" aria-labelledby="case-title">
      <h3 id="case-title">{closed ? t.caseClosed : t.caseOpen}</h3>
      <div class="case-grid">
        <div class="field">
          <label for="case-stage">{t.stage}</label>
          <select
            id="case-stage"
            value={c.stage?.stage.id ?? ''}
            disabled={closed}
            onChange={(e) => act('stage', { stageId: (e.target as HTMLSelectElement).value }, t.stageSaved)}
          >
            {!c.stage && <option value="">{t.noStage}</option>}
            {stages.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="case-reason">{t.reason}</label>
          <select
            id="case-reason"
            value={reasonValue}
            onChange={(e) => {
              const [reason, subreason] = (e.target as HTMLSelectElement).value.split(SEP);
              if (reason) act('reason', subreason ? { reason, subreason } : { reason }, t.reasonSaved);
            }}
          >
            {!c.reason && <option value="">{t.noReason}</option>}
            {reasons.flatMap((r) => [
              <option key={r.name} value={[r.name, ''].join(SEP)}>
                {r.name}
              </option>,
              ...r.subreasons.map((s) => (
                <option key={`${r.name}/${s.name}`} value={[r.name, s.name].join(SEP)}>
                  {`${r.name} › ${s.name}`}
                </option>
              )),
            ])}
          </select>
        </div>
      </div>
      {!closed && (
        <div class="actions">
          <button type="button" class="secondary" onClick={() => setWinning(true)}>
            {t.won}
          </button>
          <button type="button" class="secondary" onClick={() => act('outcome', { result: 'lost' }, t.lostSaved)}>
            {t.lost}
          </button>
          <button type="button" class="secondary" onClick={() => act('close', {}, t.closedSaved)}>
            {t.closeCase}
          </button>
        </div>
      )}
      {winning && <WonForm idPrefix="case" onConfirm={(sale) => act('outcome', { result: 'won', ...sale }, t.wonSaved)} />}
      {c.outcome && <p class="hint">{c.outcome === 'won' ? t.outcomeWon : t.outcomeLost}</p>}
      {error && (
        <p role="alert" class="field-error">
          {error}
        </p>
      )}
      <p role="status" class="notice">
        {notice}
      </p>
    </section>
  );
}
