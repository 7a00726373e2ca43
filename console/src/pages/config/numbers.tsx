// Números (console.md "Configuración"; operator.md "Channel numbers"): each number's state, whether
// it is the default, its throughput tier and the AI agent that answers on it; through PATCH
// …/phone-numbers/{pnId}: `Agente` (+ `Cambiar agente`), `Hacer predeterminado`, and
// `Desconectar` (asked twice) / `Conectar`. Connecting a new number stays the operator's (it takes
// Meta's ids and secrets).
import { useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useLoad } from './load';
import { useFocusBack } from './once';
import { type Action, Confirm, Outcome, Part, Pending, useAction } from './rows';
import { configTexts as t } from './texts';

interface PhoneNumber {
  id: string;
  phone: string;
  name: string | null;
  provider: string;
  status: 'connected' | 'disconnected';
  default: boolean;
  throughputPerSecond: number;
  agentId: string | null;
}

interface Agent {
  id: string;
  name: string;
  status: 'active' | 'paused';
}

export function NumbersSection({ base, onDenied, onChange }: { base: string; onDenied: () => void; onChange: () => void }) {
  const numbers = useLoad<{ data: PhoneNumber[] }>(`${base}/phone-numbers`, onDenied);
  const agents = useLoad<{ data: Agent[] }>(`${base}/agents`, onDenied);
  const action = useAction();
  const changed = () => {
    numbers.reload();
    onChange();
  };
  const list = numbers.data?.data ?? [];
  return (
    <Part id="numeros" title="Números">
      {!numbers.data && <Pending error={numbers.error} loading={t.loading} />}
      {numbers.data && list.length === 0 && <p class="hint">{t.numbersEmpty}</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="rows">
            <caption class="visually-hidden">Números</caption>
            <thead>
              <tr>
                <th scope="col">Número</th>
                <th scope="col">Estado</th>
                <th scope="col">Velocidad</th>
                <th scope="col">Agente de IA</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((n) => (
                <NumberRow key={n.id} base={base} number={n} agents={agents.data?.data ?? []} action={action} onChanged={changed} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome action={action} />
      <p class="hint">{t.numbersHint}</p>
    </Part>
  );
}

function NumberRow({
  base,
  number: n,
  agents,
  action,
  onChanged,
}: {
  base: string;
  number: PhoneNumber;
  agents: Agent[];
  action: Action;
  onChanged: () => void;
}) {
  const [agentId, setAgentId] = useState(n.agentId ?? '');
  const [confirming, setConfirming] = useState(false);
  const disconnect = useFocusBack(confirming);
  const path = `${base}/phone-numbers/${n.id}`;
  const rowId = `number-${n.id}`;
  const phone = `+${n.phone}`;
  const patch = (body: object, done: string) => action.run(() => call('PATCH', path, body), done, onChanged);
  const agentName = (id: string) => agents.find((a) => a.id === id)?.name ?? t.noAgent;

  return (
    <tr>
      <th scope="row">
        <span id={rowId}>{phone}</span>
        {n.name && <span class="sub">{n.name}</span>}
      </th>
      <td data-label="Estado">
        <div class="row-control">
          <span>{n.status === 'connected' ? 'Conectado' : 'Desconectado'}</span>
          {n.default ? (
            <span class="badge">Predeterminado</span>
          ) : (
            <button
              type="button"
              class="secondary"
              aria-describedby={rowId}
              disabled={action.busy}
              onClick={() => patch({ default: true }, t.madeDefault(phone))}
            >
              Hacer predeterminado
            </button>
          )}
        </div>
      </td>
      <td data-label="Velocidad">{t.perSecond(n.throughputPerSecond)}</td>
      <td data-label="Agente de IA">
        <div class="row-control">
          <select aria-label="Agente" aria-describedby={rowId} value={agentId} onChange={(e) => setAgentId(e.currentTarget.value)}>
            <option value="">{t.noAgent}</option>
            {agents.map((a) => (
              <option key={a.id} value={a.id}>
                {a.status === 'paused' ? `${a.name} (pausado)` : a.name}
              </option>
            ))}
          </select>
          {agentId !== (n.agentId ?? '') && (
            <button
              type="button"
              aria-describedby={rowId}
              disabled={action.busy}
              onClick={() => patch({ agentId: agentId || null }, t.agentChanged(phone, agentName(agentId)))}
            >
              Cambiar agente
            </button>
          )}
        </div>
      </td>
      <td>
        {confirming ? (
          <Confirm
            question={t.disconnectNumberAsk(phone)}
            yes="Sí, desconectar"
            busy={action.busy}
            onYes={() => patch({ status: 'disconnected' }, t.numberDisconnected(phone)).then(() => setConfirming(false))}
            onNo={() => setConfirming(false)}
          />
        ) : (
          <div class="actions">
            {n.status === 'connected' ? (
              <button type="button" class="secondary" ref={disconnect} aria-describedby={rowId} onClick={() => setConfirming(true)}>
                Desconectar
              </button>
            ) : (
              <button
                type="button"
                class="secondary"
                aria-describedby={rowId}
                disabled={action.busy}
                onClick={() => patch({ status: 'connected' }, t.numberConnected(phone))}
              >
                Conectar
              </button>
            )}
          </div>
        )}
      </td>
    </tr>
  );
}
