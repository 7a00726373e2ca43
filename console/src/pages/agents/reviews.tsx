// An advanced agent's reviews (GET …/agents/{agentId}/reviews, newest first): the table
// `Revisiones` with why the stretch ended, the summary, the criteria and the data extracted, and
// `Volver a revisar` per row (POST …/reviews/{reviewId}/rerun: one model call, then the row again).
import { useEffect, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { Feedback } from '../../ui/feedback';
import { messageOf } from '../config/load';
import { formatTime, agentTexts as t } from './texts';

interface Review {
  id: string;
  conversationId: string;
  endedBy: string;
  status: string;
  summary: string | null;
  criteria: { name: string; result: string | null; score: number | null }[] | null;
  extracted: Record<string, string | null> | null;
  error: string | null;
  createdAt: string;
}

export function Reviews({ path, enabled }: { path: string; enabled: boolean }) {
  const [rows, setRows] = useState<Review[] | null>(null);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    call<{ data: Review[] }>('GET', `${path}/reviews?limit=20`)
      .then((r) => live && setRows(r.data))
      .catch((e: unknown) => live && setError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [path, tick]);

  const rerun = async (id: string) => {
    setBusy(id);
    setError('');
    setStatus('');
    try {
      await call('POST', `${path}/reviews/${id}/rerun`);
      setStatus(t.rerun);
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(null);
      setTick((n) => n + 1);
    }
  };

  return (
    <div class="reviews">
      {!enabled && <p class="hint">{t.reviewsOff}</p>}
      <button type="button" class="secondary" onClick={() => setTick((n) => n + 1)}>
        Actualizar
      </button>
      <Feedback status={status} error={error} />
      {rows?.length === 0 && <p class="hint">{t.reviewsEmpty}</p>}
      {rows && rows.length > 0 && (
        <div class="table-scroll">
          <table>
            <caption class="sr-hidden">Revisiones</caption>
            <thead>
              <tr>
                <th scope="col">Fecha</th>
                <th scope="col">Terminó por</th>
                <th scope="col">Estado</th>
                <th scope="col">Resumen</th>
                <th scope="col">Criterios</th>
                <th scope="col">Datos</th>
                <th scope="col">Acciones</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td>{formatTime(r.createdAt)}</td>
                  <td>{t.endedBy[r.endedBy] ?? r.endedBy}</td>
                  <td>
                    {t.reviewStatus[r.status] ?? r.status}
                    {r.error && <span class="exec-error">{r.error}</span>}
                  </td>
                  <td class="detail">{r.summary ?? '—'}</td>
                  <td>{r.criteria?.map((c) => t.criterion(c.name, c.result, c.score)).join(' · ') || '—'}</td>
                  <td class="detail">
                    {Object.entries(r.extracted ?? {})
                      .filter(([, v]) => v !== null)
                      .map(([k, v]) => `${k}: ${v}`)
                      .join(' · ') || '—'}
                  </td>
                  <td>
                    <button type="button" class="secondary" disabled={busy !== null} onClick={() => rerun(r.id)}>
                      Volver a revisar
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
