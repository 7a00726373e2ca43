// Apps de IA (console.md "Configuración"; docs/mcp.md "Connected AI apps"): the connected apps, when
// each was connected and last called /mcp (`lastUsedAt`, to the minute), and `Desconectar` (asked twice) through DELETE
// …/ai-apps/{appId}: its token answers 401 from the next call on.
import { useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useLoad } from './load';
import { useFocusBack } from './once';
import { type Action, Confirm, Outcome, Part, Pending, useAction } from './rows';
import { formatTime, configTexts as t } from './texts';

interface AiApp {
  id: string;
  name: string;
  prefix: string | null;
  oauthClientId: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export function AiAppsSection({ base, onDenied, onChange }: { base: string; onDenied: () => void; onChange: () => void }) {
  const apps = useLoad<{ data: AiApp[] }>(`${base}/ai-apps`, onDenied);
  const action = useAction();
  const list = apps.data?.data ?? [];
  const changed = () => {
    apps.reload();
    onChange();
  };
  return (
    <Part id="apps" title="Apps de IA">
      {!apps.data && <Pending error={apps.error} loading={t.loading} />}
      {apps.data && list.length === 0 && <p class="hint">{t.appsEmpty}</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="rows">
            <caption class="visually-hidden">Apps de IA</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Prefijo</th>
                <th scope="col">Conectada</th>
                <th scope="col">Último uso</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((a) => (
                <AppRow key={a.id} base={base} app={a} action={action} onChanged={changed} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome action={action} />
    </Part>
  );
}

function AppRow({ base, app: a, action, onChanged }: { base: string; app: AiApp; action: Action; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const opener = useFocusBack(confirming);
  const rowId = `app-${a.id}`;
  return (
    <tr>
      <th scope="row" id={rowId}>
        {a.name}
      </th>
      <td data-label="Prefijo">{a.prefix ? <code>{a.prefix}…</code> : 'conectada con OAuth'}</td>
      <td data-label="Conectada">{formatTime(a.createdAt)}</td>
      <td data-label="Último uso">{a.lastUsedAt ? formatTime(a.lastUsedAt) : t.neverUsed}</td>
      <td>
        {confirming ? (
          <Confirm
            question={t.disconnectAppAsk(a.name)}
            yes="Sí, desconectar"
            busy={action.busy}
            onYes={() =>
              action
                .run(() => call('DELETE', `${base}/ai-apps/${a.id}`), t.appDisconnected(a.name), onChanged)
                .then(() => setConfirming(false))
            }
            onNo={() => setConfirming(false)}
          />
        ) : (
          <button type="button" class="secondary" ref={opener} aria-describedby={rowId} onClick={() => setConfirming(true)}>
            Desconectar
          </button>
        )}
      </td>
    </tr>
  );
}
