// A webhook's delivery log: the table `Entregas`, one row per attempt (event kind, status code,
// attempt, time) and `Reenviar` per row; the last 20 deliveries, each read with its attempts.
import { useEffect, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { messageOf } from './load';
import { formatTime, configTexts as t } from './texts';

interface Delivery {
  id: string;
  event: string;
  status: string;
  attempts: number;
}
interface Attempt {
  attempt: number;
  statusCode: number | null;
  error: string | null;
  at: string;
}
interface Row {
  key: string;
  delivery: Delivery;
  attempt: Attempt | null;
}

const PAGE = 20;

export function Deliveries({
  path,
  version,
  onRedelivered,
  onStatus,
  onError,
}: {
  path: string;
  version: number;
  onRedelivered: () => void;
  onStatus: (text: string) => void;
  onError: (text: string) => void;
}) {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let live = true;
    (async () => {
      const list = await call<{ data: Delivery[] }>('GET', `${path}/deliveries?limit=${PAGE}`);
      const details = await Promise.all(
        list.data.map((d) => call<Delivery & { attemptLog: Attempt[] }>('GET', `${path}/deliveries/${d.id}`)),
      );
      const out: Row[] = [];
      for (const d of details) {
        const attempts = [...d.attemptLog].sort((a, b) => b.at.localeCompare(a.at));
        if (attempts.length === 0) out.push({ key: d.id, delivery: d, attempt: null });
        for (const a of attempts) out.push({ key: `${d.id}-${a.attempt}-${a.at}`, delivery: d, attempt: a });
      }
      out.sort((a, b) => (b.attempt?.at ?? '9').localeCompare(a.attempt?.at ?? '9'));
      if (live) setRows(out);
    })().catch((e: unknown) => live && onError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [path, version, tick]);

  const redeliver = async (d: Delivery) => {
    try {
      await call('POST', `${path}/deliveries/${d.id}/redeliver`);
      onStatus(t.redeliverQueued);
      onRedelivered();
    } catch (e) {
      onError(messageOf(e));
    }
  };

  return (
    <div class="deliveries">
      <button type="button" class="secondary" onClick={() => setTick((n) => n + 1)}>
        Actualizar
      </button>
      {rows && rows.length === 0 && <p class="hint">{t.deliveriesEmpty}</p>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>Entregas</caption>
            <thead>
              <tr>
                <th scope="col">Evento</th>
                <th scope="col">Código</th>
                <th scope="col">Intento</th>
                <th scope="col">Hora</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.key}>
                  <td>{r.delivery.event}</td>
                  <td>{r.attempt ? (r.attempt.statusCode ?? t.noAnswer) : t.pending}</td>
                  <td>{r.attempt?.attempt ?? '—'}</td>
                  <td>{formatTime(r.attempt?.at ?? null)}</td>
                  <td>
                    {r.delivery.status !== 'skipped' && (
                      <button type="button" class="secondary" onClick={() => redeliver(r.delivery)}>
                        Reenviar
                      </button>
                    )}
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
