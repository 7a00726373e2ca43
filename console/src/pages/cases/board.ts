// The board's data: each stage's column loaded on its own (GET …/pipelines/{id}/cases?stage=…,
// cursor pages, `Ver más` appends the next), read again on the live stream's case.* and message
// events (at most once a second), and a card moved at once on screen before the server answers
// (the next read puts it back if the move was refused).
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { subscribe } from '../../api/live';
import { messageOf } from '../config/load';
import type { BoardCase, Filters, Page, Pipeline } from './types';

export interface Column {
  items: BoardCase[];
  hasMore: boolean;
  nextCursor: string | null;
  error: string;
  loading: boolean;
  /** Read at least once (a live re-read keeps showing the cards and the count meanwhile). */
  loaded: boolean;
}

const PAGE = 50;
const MAX = 200;
const LIVE_KINDS = [
  'case.opened',
  'case.stage_changed',
  'case.closed',
  'case.outcome',
  'case.classified',
  'message.received',
  'message.sent',
];
const LIVE_PAUSE_MS = 1000;

function query(stageId: string, f: Filters, limit: number, after?: string): string {
  const q = new URLSearchParams({ stage: stageId, status: f.status, limit: String(limit) });
  if (f.reason) q.set('reason', f.reason);
  if (f.score) q.set('score', f.score);
  if (f.handledBy) q.set('handledBy', f.handledBy);
  if (after) q.set('after', after);
  return q.toString();
}

const byNewest = (a: BoardCase, b: BoardCase) => (a.openedAt < b.openedAt ? 1 : a.openedAt > b.openedAt ? -1 : a.id < b.id ? 1 : -1);

export function useBoard(root: string, pipeline: Pipeline | null, filters: Filters) {
  const [columns, setColumns] = useState<Record<string, Column>>({});
  const current = useRef(columns);
  current.current = columns;
  const generation = useRef(0);
  /** Reads are numbered: an older read answering after a newer one is dropped. */
  const seq = useRef(0);
  const applied = useRef(new Map<string, number>());
  const fresh = (stageId: string, n: number): boolean => {
    if ((applied.current.get(stageId) ?? 0) > n) return false;
    applied.current.set(stageId, n);
    return true;
  };
  const path = pipeline ? `${root}/pipelines/${pipeline.id}/cases` : '';
  const filtersKey = JSON.stringify(filters);

  const setColumn = (stageId: string, fn: (c: Column | undefined) => Column) =>
    setColumns((all) => ({ ...all, [stageId]: fn(all[stageId]) }));

  /** Reads every column again (as many cards as each shows now, 50 to 200). */
  const reload = () => {
    if (!pipeline) return;
    const gen = generation.current;
    for (const stage of pipeline.stages) {
      const shown = current.current[stage.id]?.items.length ?? 0;
      const limit = Math.min(MAX, Math.max(PAGE, shown));
      const n = ++seq.current;
      setColumn(stage.id, (c) => ({ items: [], hasMore: false, nextCursor: null, error: '', loaded: false, ...c, loading: true }));
      call<Page>('GET', `${path}?${query(stage.id, filters, limit)}`)
        .then((p) => {
          if (gen !== generation.current || !fresh(stage.id, n)) return;
          setColumn(stage.id, () => ({
            items: p.data,
            hasMore: p.hasMore,
            nextCursor: p.nextCursor,
            error: '',
            loading: false,
            loaded: true,
          }));
        })
        .catch((e: unknown) => {
          if (gen !== generation.current) return;
          setColumn(stage.id, (c) => ({
            items: c?.items ?? [],
            hasMore: false,
            nextCursor: null,
            error: messageOf(e),
            loading: false,
            loaded: true,
          }));
        });
    }
  };
  const reloadRef = useRef(reload);
  reloadRef.current = reload;

  useEffect(() => {
    generation.current++;
    setColumns({});
    current.current = {};
    reloadRef.current();
  }, [path, filtersKey]);

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const soon = () => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        reloadRef.current();
      }, LIVE_PAUSE_MS);
    };
    const offs = LIVE_KINDS.map((k) => subscribe(k, soon));
    return () => {
      if (timer) clearTimeout(timer);
      for (const off of offs) off();
    };
  }, []);

  /** The next page of one column. */
  const more = (stageId: string) => {
    const col = current.current[stageId];
    if (!col?.nextCursor) return;
    const gen = generation.current;
    const n = ++seq.current;
    setColumn(stageId, (c) => ({ ...c!, loading: true }));
    call<Page>('GET', `${path}?${query(stageId, filters, PAGE, col.nextCursor)}`)
      .then((p) => {
        if (gen !== generation.current || !fresh(stageId, n)) return;
        setColumn(stageId, (c) => ({
          items: [...(c?.items ?? []), ...p.data.filter((x) => !c?.items.some((y) => y.id === x.id))],
          hasMore: p.hasMore,
          nextCursor: p.nextCursor,
          error: '',
          loading: false,
          loaded: true,
        }));
      })
      .catch((e: unknown) => gen === generation.current && setColumn(stageId, (c) => ({ ...c!, error: messageOf(e), loading: false })));
  };

  /** Shows the card in its new column at once (the server's answer and the next read decide). */
  const place = (c: BoardCase, stageId: string) => {
    const stage = pipeline?.stages.find((s) => s.id === stageId);
    if (!stage) return;
    setColumns((all) => {
      const next: Record<string, Column> = {};
      for (const [id, col] of Object.entries(all)) next[id] = { ...col, items: col.items.filter((x) => x.id !== c.id) };
      const target = next[stageId];
      if (target) target.items = [...target.items, { ...c, stage: { ...c.stage, stage } }].sort(byNewest);
      return next;
    });
  };

  return { columns, reload, more, place };
}
