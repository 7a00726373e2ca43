// Actividad (console.md "Configuración"; docs/privacy.md "Audit trail"): owners only. The account's
// audit trail, newest first (when, who, what, on what), a filter by action and `Ver más` for the
// next page (GET …/audit?limit&after&action).
import { useEffect, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { activityTexts as a, actionNames, actorName, changesText, targetName } from './activity-texts';
import { messageOf } from './load';
import { Part, Pending } from './rows';
import { formatTime, configTexts as t } from './texts';

export interface AuditLine {
  id: string;
  at: string;
  actor: { type: string; id: string | null; name: string | null };
  action: string;
  target: { type: string; id: string } | null;
  changes: Record<string, unknown>;
}

interface Page {
  data: AuditLine[];
  nextCursor: string | null;
}

const PAGE = 25;

export function ActivitySection({ base, onDenied, version }: { base: string; onDenied: () => void; version: number }) {
  const [action, setAction] = useState('');
  const [lines, setLines] = useState<AuditLine[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  const query = (after: string | null) =>
    `${base}/audit?limit=${PAGE}${action ? `&action=${encodeURIComponent(action)}` : ''}${after ? `&after=${after}` : ''}`;

  useEffect(() => {
    let live = true;
    setLines(null);
    call<Page>('GET', query(null))
      .then((p) => {
        if (!live) return;
        setLines(p.data);
        setNext(p.nextCursor);
        setError('');
      })
      .catch((e: unknown) => {
        if (!live) return;
        if ((e as { status?: number }).status === 403) onDenied();
        else setError(messageOf(e));
      });
    return () => {
      live = false;
    };
  }, [base, action, version]);

  const more = async () => {
    if (!next) return;
    try {
      const p = await call<Page>('GET', query(next));
      setLines((old) => [...(old ?? []), ...p.data]);
      setNext(p.nextCursor);
    } catch (e) {
      setError(messageOf(e));
    }
  };

  return (
    <Part id="actividad" title="Actividad">
      <p class="hint">{a.hint}</p>
      <div class="field">
        <label for="activity-action">Acción</label>
        <select id="activity-action" value={action} onChange={(e) => setAction((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">{a.allActions}</option>
          {Object.entries(actionNames).map(([code, name]) => (
            <option key={code} value={code}>
              {name}
            </option>
          ))}
        </select>
      </div>
      {!lines && <Pending error={error} loading={t.loading} />}
      {lines && lines.length === 0 && <p class="hint">{a.empty}</p>}
      {lines && lines.length > 0 && (
        <div class="table-wrap">
          <table class="rows">
            <caption class="visually-hidden">Actividad</caption>
            <thead>
              <tr>
                <th scope="col">Cuándo</th>
                <th scope="col">Quién</th>
                <th scope="col">Qué</th>
                <th scope="col">Sobre qué</th>
              </tr>
            </thead>
            <tbody>
              {lines.map((l) => (
                <tr key={l.id}>
                  <th scope="row">{formatTime(l.at)}</th>
                  <td data-label="Quién">{actorName(l.actor)}</td>
                  <td data-label="Qué">{actionNames[l.action] ?? l.action}</td>
                  <td data-label="Sobre qué">
                    {targetName(l)}
                    {changesText(l.changes) && <span class="hint activity-changes">{changesText(l.changes)}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {lines && error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {next && (
        <button type="button" class="secondary" onClick={more}>
          Ver más
        </button>
      )}
    </Part>
  );
}
