// One member in Miembros: the name as the row's header, email, `Rol` (+ `Cambiar rol`), state,
// last seen, and `Desactivar` / `Activar` and `Eliminar` (asked first) — or no control: on your
// own row, and on an owner's when an admin looks (only an owner touches an owner).
import { useState } from 'preact/hooks';
import { call } from '../../api/client';
import type { Role } from '../../sections';
import { useFocusBack } from './once';
import { type Action, Confirm } from './rows';
import { formatTime, configTexts as t } from './texts';

export interface Member {
  id: string;
  email: string;
  name: string;
  role: Role;
  status: 'active' | 'invited' | 'disabled';
  lastSeenAt: string | null;
}

export const ROLE_NAMES: Record<Role, string> = { owner: 'Dueño', admin: 'Administrador', agent: 'Agente' };
const STATUS_NAMES: Record<Member['status'], string> = { active: 'Activo', invited: 'Invitado', disabled: 'Desactivado' };

/** The roles `actor` may give: an owner any, an admin admin or agent. */
export const grantable = (actor: Role): Role[] => (actor === 'owner' ? ['owner', 'admin', 'agent'] : ['admin', 'agent']);

export function MemberRow({
  base,
  member: m,
  actor,
  self,
  action,
  onChanged,
}: {
  base: string;
  member: Member;
  actor: Role;
  self: boolean;
  action: Action;
  onChanged: () => void;
}) {
  const [role, setRole] = useState<Role>(m.role);
  const [confirming, setConfirming] = useState(false);
  const remover = useFocusBack(confirming);
  const path = `${base}/members/${m.id}`;
  const nameId = `member-${m.id}`;
  // An admin leaves owners alone; nobody disables or removes themselves here.
  const manageable = !self && (actor === 'owner' || m.role !== 'owner');
  const patch = (body: object, done: string) => action.run(() => call('PATCH', path, body), done, onChanged);

  return (
    <tr>
      <th scope="row" id={nameId}>
        {m.name}
        {self && <span class="hint"> (vos)</span>}
      </th>
      <td class="email" data-label="Email">
        {m.email}
      </td>
      <td data-label="Rol">
        {manageable ? (
          <div class="row-control">
            <select aria-label="Rol" aria-describedby={nameId} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {grantable(actor).map((r) => (
                <option key={r} value={r}>
                  {ROLE_NAMES[r]}
                </option>
              ))}
            </select>
            {role !== m.role && (
              <button
                type="button"
                aria-describedby={nameId}
                disabled={action.busy}
                onClick={() => patch({ role }, t.roleChanged(m.name, ROLE_NAMES[role]))}
              >
                Cambiar rol
              </button>
            )}
          </div>
        ) : (
          ROLE_NAMES[m.role]
        )}
      </td>
      <td data-label="Estado">{STATUS_NAMES[m.status]}</td>
      <td data-label="Última vez">{formatTime(m.lastSeenAt)}</td>
      <td>
        {self ? null : !manageable ? (
          <span class="hint">{t.ownersByOwners}</span>
        ) : confirming ? (
          <Confirm
            question={t.removeAsk(m.name)}
            yes="Sí, eliminar"
            busy={action.busy}
            onYes={() => action.run(() => call('DELETE', path), t.removed(m.name), onChanged)}
            onNo={() => setConfirming(false)}
          />
        ) : (
          <div class="actions">
            {m.status === 'disabled' ? (
              <button
                type="button"
                class="secondary"
                aria-describedby={nameId}
                disabled={action.busy}
                onClick={() => patch({ status: 'active' }, t.enabled(m.name))}
              >
                Activar
              </button>
            ) : (
              <button
                type="button"
                class="secondary"
                aria-describedby={nameId}
                disabled={action.busy}
                onClick={() => patch({ status: 'disabled' }, t.disabled(m.name))}
              >
                Desactivar
              </button>
            )}
            <button type="button" class="secondary" ref={remover} aria-describedby={nameId} onClick={() => setConfirming(true)}>
              Eliminar
            </button>
          </div>
        )}
      </td>
    </tr>
  );
}
