// Importar CSV: the file input `Archivo CSV` uploads the file at once (POST …/contacts/imports);
// the server's preview shows the first rows and every row that would fail (row, column, value,
// reason); `Importar` starts it (…/start) and the progress is polled until it ends.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import { texts } from '../../texts';
import { contactsTexts as t } from './texts';
import type { ContactImport, RowFailure } from './types';

const POLL_MS = 500;
/** Failing rows shown at most (a file of 100,000 bad rows would stall the page); the count says the rest. */
const SHOWN_FAILURES = 2000;

const messageOf = (e: unknown): string => (e instanceof ApiError ? e.message : texts.offline);

/** Every failing row: the ones the import carries, then the rest page by page. */
async function allFailures(base: string, imp: ContactImport): Promise<RowFailure[]> {
  const out = [...imp.failures];
  let more = imp.hasMoreFailures;
  while (more && out.length < SHOWN_FAILURES) {
    const after = out.at(-1)?.row ?? 0;
    const r = await call<{ data: RowFailure[]; hasMore: boolean }>(
      'GET',
      `${base}/contacts/imports/${imp.id}/failures?limit=500&after=${after}`,
    );
    out.push(...r.data);
    more = r.hasMore;
  }
  return out;
}

export function ImportPanel({ base, onClose, onImported }: { base: string; onClose: () => void; onImported: () => void }) {
  const file = useRef<HTMLInputElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [imp, setImp] = useState<ContactImport | null>(null);
  const [failures, setFailures] = useState<RowFailure[]>([]);
  useLayoutEffect(() => file.current?.focus(), []);

  const load = async (next: ContactImport) => {
    setFailures(await allFailures(base, next));
    setImp(next);
  };

  const upload = async () => {
    const f = file.current?.files?.[0];
    if (!f) return;
    setBusy(true);
    setError('');
    setImp(null);
    try {
      await load(await call<ContactImport>('POST', `${base}/contacts/imports`, f, 'text/csv'));
    } catch (e) {
      setError(messageOf(e));
      file.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  const start = async () => {
    if (!imp) return;
    setBusy(true);
    setError('');
    try {
      setImp(await call<ContactImport>('POST', `${base}/contacts/imports/${imp.id}/start`));
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  // While it runs: the progress, read again every POLL_MS until it ends.
  const running = imp?.state === 'queued' || imp?.state === 'running';
  useEffect(() => {
    if (!running || !imp) return;
    let live = true;
    const timer = setTimeout(async () => {
      try {
        const next = await call<ContactImport>('GET', `${base}/contacts/imports/${imp.id}`);
        if (!live) return;
        if (next.state === 'done' || next.state === 'failed') {
          await load(next);
          onImported();
        } else setImp(next);
      } catch (e) {
        if (live) setError(messageOf(e));
      }
    }, POLL_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [imp, running]);

  const ended = imp?.state === 'done' || imp?.state === 'failed';
  return (
    <section class="import-panel" aria-labelledby="import-title">
      <h2 id="import-title">{t.importTitle}</h2>
      <p class="hint" id="import-hint">
        {t.importHint}
      </p>
      {(!imp || imp.state === 'previewed') && (
        <div class="field">
          <label for="import-file">{t.file}</label>
          <input
            id="import-file"
            ref={file}
            type="file"
            accept=".csv,text/csv"
            aria-describedby="import-hint"
            disabled={busy}
            onChange={upload}
          />
        </div>
      )}
      {busy && !imp && <p role="status">{t.checking}</p>}
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {imp && (
        <>
          <p role="status">
            {imp.state === 'previewed' && t.summary(imp.totalRows, imp.validRows, imp.failed)}
            {imp.state === 'queued' && t.queued}
            {imp.state === 'running' && t.progressText(imp.processedRows, imp.totalRows)}
            {imp.state === 'done' && t.done(imp.created, imp.updated, imp.failed)}
            {imp.state === 'failed' && `${t.failed} ${imp.error ?? ''}`}
          </p>
          {(running || ended) && (
            <progress aria-label={t.progress} max={imp.totalRows} value={imp.state === 'done' ? imp.totalRows : imp.processedRows} />
          )}
          {imp.state === 'previewed' && <Preview imp={imp} />}
          <Failures failures={failures} total={imp.failed} />
          {imp.state === 'previewed' && <p class="hint">{t.noEvents}</p>}
        </>
      )}
      <div class="actions">
        {imp?.state === 'previewed' && (
          <button type="button" onClick={start} disabled={busy || imp.validRows === 0}>
            {t.importNow}
          </button>
        )}
        <button type="button" class="secondary" onClick={onClose}>
          {ended ? t.close : t.cancel}
        </button>
      </div>
    </section>
  );
}

function Preview({ imp }: { imp: ContactImport }) {
  const keys = imp.columns.slice(2);
  return (
    <div class="table-wrap">
      <table>
        <caption>{t.previewCaption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.row}</th>
            {imp.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {imp.preview.map((r) => (
            <tr key={r.row}>
              <td>{r.row}</td>
              <td class="phone">{r.phone}</td>
              <td>{r.name}</td>
              {keys.map((k) => (
                <td key={k}>{r.attributes[k] ?? ''}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Failures({ failures, total }: { failures: RowFailure[]; total: number }) {
  if (failures.length === 0) return <p>{t.failuresNone}</p>;
  return (
    <div class="table-wrap failures">
      {total > failures.length && <p class="hint">{t.failuresShown(failures.length, total)}</p>}
      <table>
        <caption>{t.failuresCaption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.row}</th>
            <th scope="col">{t.column}</th>
            <th scope="col">{t.value}</th>
            <th scope="col">{t.reason}</th>
          </tr>
        </thead>
        <tbody>
          {failures.flatMap((f) =>
            f.problems.map((p, i) => (
              <tr key={`${f.row}-${i}`}>
                <td data-label={t.row}>{f.row}</td>
                <td data-label={t.column}>{p.column || t.wholeRow}</td>
                <td data-label={t.value} class="value">
                  {p.value.length > 40 ? `${p.value.slice(0, 40)}…` : p.value}
                </td>
                <td data-label={t.reason}>{p.reason}</td>
              </tr>
            )),
          )}
        </tbody>
      </table>
    </div>
  );
}
