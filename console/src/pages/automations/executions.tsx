// An automation's executions (GET …/executions, newest first): the table `Ejecuciones`, each row
// with `Ver pasos` (its step log, GET …/executions/{id}) and, while running, `Cancelar`.
// Read again on the stream's automation and conversation events, and with `Actualizar`.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { call } from '../../api/client';
import { subscribe } from '../../api/live';
import { Feedback } from '../../ui/feedback';
import { messageOf } from '../config/load';
import { formatTime, autoTexts as t } from './texts';

interface Execution {
  id: string;
  status: string;
  error: string | null;
  currentStepId: string | null;
  test: boolean;
  startedAt: string;
  endedAt: string | null;
}
interface StepLog {
  stepId: string;
  type: string;
  startedAt: string;
  endedAt: string | null;
  outcome: string | null;
  detail: Record<string, unknown> | null;
}

const LIVE = ['automation.completed', 'automation.failed', 'conversation.updated', 'message.received', 'message.sent'];

export function Executions({ path, version }: { path: string; version: number }) {
  const [rows, setRows] = useState<Execution[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const [status, setStatus] = useState('');
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    call<{ data: Execution[] }>('GET', `${path}/executions?limit=20`)
      .then((r) => live && setRows(r.data))
      .catch((e: unknown) => live && setError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [path, version, tick]);
  useEffect(() => {
    const offs = LIVE.map((k) => subscribe(k, () => setTick((n) => n + 1)));
    return () => {
      for (const off of offs) off();
    };
  }, []);

  const cancel = async (id: string) => {
    setError('');
    try {
      await call('POST', `${path}/executions/${id}/cancel`);
      setStatus(t.cancelled);
    } catch (e) {
      setError(messageOf(e));
    }
    setTick((n) => n + 1);
  };

  return (
    <div class="executions">
      <button type="button" class="secondary" onClick={() => setTick((n) => n + 1)}>
        Actualizar
      </button>
      <Feedback status={status} error={error} />
      {rows?.length === 0 && <p class="hint">{t.execEmpty}</p>}
      {rows && rows.length > 0 && (
        <div class="table-scroll">
          <table>
            <caption class="sr-hidden">Ejecuciones</caption>
            <thead>
              <tr>
                <th scope="col">Inicio</th>
                <th scope="col">Estado</th>
                <th scope="col">Paso</th>
                <th scope="col">Acciones</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id}>
                  <td>{formatTime(e.startedAt)}</td>
                  <td>
                    {t.execStatus[e.status] ?? e.status}
                    {e.test && ` (${t.test})`}
                    {e.error && <span class="exec-error">{e.error}</span>}
                  </td>
                  <td>
                    <code>{e.currentStepId ?? '—'}</code>
                  </td>
                  <td>
                    <div class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={open === e.id}
                        onClick={() => setOpen(open === e.id ? null : e.id)}
                      >
                        Ver pasos
                      </button>
                      {e.status === 'running' && (
                        <button type="button" class="secondary" onClick={() => cancel(e.id)}>
                          Cancelar
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {open && <StepLogTable path={`${path}/executions/${open}`} version={tick} />}
    </div>
  );
}

const detailText = (d: Record<string, unknown> | null): string =>
  d
    ? Object.entries(d)
        .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' · ')
    : '';

function StepLogTable({ path, version }: { path: string; version: number }) {
  const [steps, setSteps] = useState<StepLog[] | null>(null);
  const [error, setError] = useState('');
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    let live = true;
    call<{ steps: StepLog[] }>('GET', path)
      .then((r) => live && setSteps(r.steps))
      .catch((e: unknown) => live && setError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [path, version]);
  useLayoutEffect(() => heading.current?.focus(), [path]);
  return (
    <div class="step-log">
      <h3 ref={heading} tabIndex={-1}>
        Pasos de la ejecución
      </h3>
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
      {steps?.length === 0 && <p class="hint">{t.stepsEmpty}</p>}
      {steps && steps.length > 0 && (
        <div class="table-scroll">
          <table>
            <caption class="sr-hidden">Pasos de la ejecución</caption>
            <thead>
              <tr>
                <th scope="col">Paso</th>
                <th scope="col">Tipo</th>
                <th scope="col">Resultado</th>
                <th scope="col">Hora</th>
                <th scope="col">Detalle</th>
              </tr>
            </thead>
            <tbody>
              {steps.map((s, i) => (
                <tr key={i}>
                  <td>
                    <code>{s.stepId}</code>
                  </td>
                  <td>{s.type}</td>
                  <td>{s.outcome ?? '…'}</td>
                  <td>{formatTime(s.startedAt)}</td>
                  <td class="detail">{detailText(s.detail)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
