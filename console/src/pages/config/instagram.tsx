// Instagram (console.md "Configuración"; operator.md "Social accounts"): the connected accounts with
// their state; `Desconectar` (asked twice: messages stop both ways) / `Conectar` through PATCH
// …/social-accounts/{id}, and `Eliminar` (asked twice; its conversations and messages stay)
// through DELETE. Connecting one stays the operator's (it takes Instagram's ids and secrets).
import { useState } from 'preact/hooks';
import { call } from '../../api/client';
import { useLoad } from './load';
import { useFocusBack } from './once';
import { type Action, Confirm, Outcome, Part, Pending, useAction } from './rows';
import { formatTime, configTexts as t } from './texts';

interface SocialAccount {
  id: string;
  name: string;
  provider: 'sandbox' | 'instagram';
  status: 'connected' | 'disconnected';
  igUserId: string | null;
  createdAt: string;
}

export function InstagramSection({ base, onDenied }: { base: string; onDenied: () => void }) {
  const accounts = useLoad<{ data: SocialAccount[] }>(`${base}/social-accounts`, onDenied);
  const action = useAction();
  const list = accounts.data?.data ?? [];
  return (
    <Part id="instagram" title="Instagram">
      {!accounts.data && <Pending error={accounts.error} loading={t.loading} />}
      {accounts.data && list.length === 0 && <p class="hint">{t.instagramEmpty}</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="rows">
            <caption class="visually-hidden">Instagram</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Cuenta</th>
                <th scope="col">Estado</th>
                <th scope="col">Conectada</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((a) => (
                <SocialRow key={a.id} base={base} account={a} action={action} onChanged={accounts.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome action={action} />
    </Part>
  );
}

function SocialRow({
  base,
  account: a,
  action,
  onChanged,
}: {
  base: string;
  account: SocialAccount;
  action: Action;
  onChanged: () => void;
}) {
  const [asking, setAsking] = useState<'disconnect' | 'remove' | null>(null);
  const backFromDisconnect = useFocusBack(asking === 'disconnect');
  const backFromRemove = useFocusBack(asking === 'remove');
  const path = `${base}/social-accounts/${a.id}`;
  const rowId = `social-${a.id}`;
  const done = () => setAsking(null);
  return (
    <tr>
      <th scope="row" id={rowId}>
        {a.name}
      </th>
      <td data-label="Cuenta">{a.provider === 'instagram' ? `Instagram ${a.igUserId ?? ''}`.trim() : t.sandbox}</td>
      <td data-label="Estado">{a.status === 'connected' ? 'Conectada' : 'Desconectada'}</td>
      <td data-label="Conectada">{formatTime(a.createdAt)}</td>
      <td>
        {asking === 'disconnect' ? (
          <Confirm
            question={t.disconnectSocialAsk(a.name)}
            yes="Sí, desconectar"
            busy={action.busy}
            onYes={() =>
              action.run(() => call('PATCH', path, { status: 'disconnected' }), t.socialDisconnected(a.name), onChanged).then(done)
            }
            onNo={done}
          />
        ) : asking === 'remove' ? (
          <Confirm
            question={t.removeSocialAsk(a.name)}
            yes="Sí, eliminar"
            busy={action.busy}
            onYes={() => action.run(() => call('DELETE', path), t.socialRemoved(a.name), onChanged).then(done)}
            onNo={done}
          />
        ) : (
          <div class="actions">
            {a.status === 'connected' ? (
              <button
                type="button"
                class="secondary"
                ref={backFromDisconnect}
                aria-describedby={rowId}
                onClick={() => setAsking('disconnect')}
              >
                Desconectar
              </button>
            ) : (
              <button
                type="button"
                class="secondary"
                aria-describedby={rowId}
                disabled={action.busy}
                onClick={() => action.run(() => call('PATCH', path, { status: 'connected' }), t.socialConnected(a.name), onChanged)}
              >
                Conectar
              </button>
            )}
            <button type="button" class="secondary" ref={backFromRemove} aria-describedby={rowId} onClick={() => setAsking('remove')}>
              Eliminar
            </button>
          </div>
        )}
      </td>
    </tr>
  );
}
