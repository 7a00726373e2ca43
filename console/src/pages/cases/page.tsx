// Casos (console.md "Casos"): the board of a pipeline (select `Embudo` when there are several),
// one column per stage — a `list` named after the stage — with the cases as cards. Filters:
// Estado, Motivo, Puntaje, Atendido por. A card moves by drag and drop or by its `Mover a…` menu
// (POST …/cases/{caseId}/stage as the member); a move to a `won` stage first asks Monto and Moneda
// (then also POST …/outcome {result: "won"}). Live: the columns are read again on case.* and
// message events, so a case a customer opens appears in the first stage without a reload.
import { useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useFocusOnChange } from '../../focus';
import { texts } from '../../texts';
import type { Sale } from '../../ui/won-form';
import { messageOf, useLoad } from '../config/load';
import { useBoard } from './board';
import { Card } from './card';
import './cases.css';
import { casesTexts as t } from './texts';
import { type BoardCase, type Filters, type Pipeline, type Stage, who } from './types';
import { WonDialog } from './won-dialog';

interface Reason {
  name: string;
}

function Select({
  id,
  label,
  value,
  options,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  options: [string, string][];
  onChange: (v: string) => void;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {options.map(([v, name]) => (
          <option key={v} value={v}>
            {name}
          </option>
        ))}
      </select>
    </div>
  );
}

export function CasesPage({ accountId }: { accountId: string }) {
  const root = `/admin/v1/accounts/${accountId}`;
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'casos');
  const [denied, setDenied] = useState(false);
  const pipelines = useLoad<{ data: Pipeline[] }>(`${root}/pipelines`, () => setDenied(true));
  const reasons = useLoad<{ data: Reason[] }>(`${root}/reasons`, () => {});
  const [chosen, setChosen] = useState('');
  const [filters, setFilters] = useState<Filters>({ status: 'all', reason: '', score: '', handledBy: '' });
  const list = pipelines.data?.data ?? [];
  const pipeline = list.find((p) => p.id === chosen) ?? list.find((p) => p.default) ?? list[0] ?? null;
  const board = useBoard(root, pipeline, filters);
  const [notice, setNotice] = useState('');
  const [error, setError] = useState('');
  const [focusCase, setFocusCase] = useState('');
  const [winning, setWinning] = useState<{ c: BoardCase; stage: Stage; staged: boolean } | null>(null);
  const [busy, setBusy] = useState(false);
  const [winError, setWinError] = useState('');
  const [over, setOver] = useState('');

  /** Moves the card (and, with a sale, records it); `staged`: the stage move already went through. */
  const move = async (c: BoardCase, stage: Stage, sale?: Sale, staged = false): Promise<'done' | 'staged' | 'failed'> => {
    board.place(c, stage.id);
    let moved = staged;
    try {
      if (!moved) {
        const amount = sale?.amount !== undefined ? { amount: sale.amount } : {};
        await call('POST', `${root}/cases/${c.id}/stage`, { stageId: stage.id, ...amount });
        moved = true;
      }
      if (sale) await call('POST', `${root}/cases/${c.id}/outcome`, { result: 'won', ...sale });
      setError('');
      setNotice(t.moved(who(c), stage.name));
      setFocusCase(c.id);
      return 'done';
    } catch (e) {
      setNotice('');
      if (sale) setWinError(messageOf(e));
      else setError(messageOf(e));
      return moved ? 'staged' : 'failed';
    } finally {
      board.reload();
    }
  };
  const pick = (c: BoardCase, stage: Stage) => {
    if (stage.kind === 'won') {
      setWinError('');
      setWinning({ c, stage, staged: false });
    } else void move(c, stage);
  };
  const findCase = (id: string): BoardCase | undefined => {
    for (const col of Object.values(board.columns)) {
      const c = col.items.find((x) => x.id === id);
      if (c) return c;
    }
    return undefined;
  };
  const setFilter = (k: keyof Filters) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));

  return (
    <div class="cases">
      <h1 ref={heading} tabIndex={-1}>
        {t.title}
      </h1>
      {denied && <p>{texts.denied}</p>}
      {pipelines.error && <p role="alert">{pipelines.error}</p>}
      {!pipelines.data && !pipelines.error && <p role="status">{t.loading}</p>}
      {pipelines.data && list.length === 0 && <p>{t.noPipelines}</p>}
      {pipeline && (
        <>
          <fieldset class="board-filters">
            <legend>{t.filters}</legend>
            {list.length > 1 && (
              <Select
                id="cases-pipeline"
                label={t.pipeline}
                value={pipeline.id}
                options={list.map((p) => [p.id, p.name])}
                onChange={setChosen}
              />
            )}
            <Select
              id="cases-status"
              label={t.status}
              value={filters.status}
              options={Object.entries(t.statusOptions)}
              onChange={setFilter('status')}
            />
            <Select
              id="cases-reason"
              label={t.reason}
              value={filters.reason}
              options={[['', t.anyReason], ...(reasons.data?.data ?? []).map((r): [string, string] => [r.name, r.name])]}
              onChange={setFilter('reason')}
            />
            <Select
              id="cases-score"
              label={t.score}
              value={filters.score}
              options={Object.entries(t.scoreOptions)}
              onChange={setFilter('score')}
            />
            <Select
              id="cases-handled"
              label={t.handledBy}
              value={filters.handledBy}
              options={Object.entries(t.handledOptions)}
              onChange={setFilter('handledBy')}
            />
          </fieldset>
          <p class="hint">{t.dragHint}</p>
          {error && <p role="alert">{error}</p>}
          <p role="status" class="notice">
            {notice}
          </p>
          <div class="board">
            {pipeline.stages.map((stage) => {
              const col = board.columns[stage.id];
              return (
                <section
                  key={stage.id}
                  class={`column${over === stage.id ? ' is-over' : ''}`}
                  aria-labelledby={`col-${stage.id}`}
                  onDragOver={(e) => {
                    e.preventDefault();
                    if (over !== stage.id) setOver(stage.id);
                  }}
                  onDragLeave={() => setOver((o) => (o === stage.id ? '' : o))}
                  onDrop={(e) => {
                    e.preventDefault();
                    setOver('');
                    const c = findCase(e.dataTransfer?.getData('text/plain') ?? '');
                    if (c && c.status === 'open' && c.stage?.stage.id !== stage.id) pick(c, stage);
                  }}
                >
                  <h2 id={`col-${stage.id}`}>
                    {stage.name}
                    {col?.loaded && <span class="count">{t.count(col.items.length, col.hasMore)}</span>}
                  </h2>
                  {/* biome-ignore lint/a11y/noRedundantRoles: list-style none drops the list role in some browsers */}
                  <ul role="list" aria-label={stage.name} class="cards">
                    {col?.items.map((c) => (
                      <Card
                        key={c.id}
                        c={c}
                        stages={pipeline.stages}
                        focus={focusCase === c.id}
                        onFocused={() => setFocusCase('')}
                        onPick={pick}
                      />
                    ))}
                  </ul>
                  {col?.loaded && col.items.length === 0 && !col.error && <p class="hint">{t.emptyColumn}</p>}
                  {col?.error && <p role="alert">{col.error}</p>}
                  {col?.hasMore && (
                    <button
                      type="button"
                      class="secondary"
                      aria-describedby={`col-${stage.id}`}
                      disabled={col.loading}
                      onClick={() => board.more(stage.id)}
                    >
                      {t.more}
                    </button>
                  )}
                </section>
              );
            })}
          </div>
        </>
      )}
      {winning && (
        <WonDialog
          who={who(winning.c)}
          busy={busy}
          error={winError}
          onCancel={() => {
            const id = winning.c.id;
            setWinning(null);
            setFocusCase(id);
          }}
          onConfirm={async (sale) => {
            setBusy(true);
            // A sale whose stage moved but whose outcome failed retries only the outcome.
            const result = await move(winning.c, winning.stage, sale, winning.staged);
            setBusy(false);
            if (result === 'done') setWinning(null);
            else if (result === 'staged') setWinning({ ...winning, staged: true });
          }}
        />
      )}
    </div>
  );
}
