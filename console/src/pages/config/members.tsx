// Miembros (console.md "Configuración"; docs/console.md "Members"): who is in the account, and for
// owners and admins `Invitar miembro` (Email, Nombre, Rol, Invitar → the link shown once), a role
// per member (`Rol`, `Cambiar rol`), `Desactivar` / `Activar` and `Eliminar`. An admin sees owners
// but no control on them and cannot name one: the server refuses it (403) and the page does not
// offer it. Your own row has no controls (you would lock yourself out).
import { useLayoutEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../../api/client';
import type { Role } from '../../sections';
import { Field } from '../../ui/field';
import { messageOf, useLoad } from './load';
import { grantable, type Member, MemberRow, ROLE_NAMES } from './member-row';
import { ShownOnce, useFocusBack } from './once';
import { Outcome, Part, Pending, useAction } from './rows';
import { configTexts as t } from './texts';

interface Props {
  base: string;
  role: Role;
  memberId: string;
  onDenied: () => void;
}

export function MembersSection({ base, role, memberId, onDenied }: Props) {
  const members = useLoad<{ data: Member[] }>(`${base}/members`, onDenied);
  const action = useAction();
  const [inviting, setInviting] = useState(false);
  const [link, setLink] = useState<{ url: string; email: string } | null>(null);
  const [errors, setErrors] = useState<{ email?: string; name?: string; role?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const opener = useFocusBack(inviting || link !== null);
  useLayoutEffect(() => {
    if (inviting) document.getElementById('invite-email')?.focus();
  }, [inviting]);

  const invite = async (e: SubmitEvent) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const email = String(form.get('email') ?? '').trim();
    const name = String(form.get('name') ?? '').trim();
    setBusy(true);
    setErrors({});
    try {
      const res = await call<{ member: Member; inviteUrl: string }>('POST', `${base}/members`, {
        email,
        role: String(form.get('role')),
        ...(name ? { name } : {}),
      });
      setLink({ url: res.inviteUrl, email: res.member.email });
      setInviting(false);
      members.reload();
    } catch (err) {
      const f = err instanceof ApiError ? err.fields : {};
      const known = f.email || f.name || f.role;
      setErrors(known ? { email: f.email, name: f.name, role: f.role } : { form: messageOf(err) });
      document.getElementById(f.name && !f.email ? 'invite-name' : 'invite-email')?.focus();
    } finally {
      setBusy(false);
    }
  };

  const list = members.data?.data ?? [];
  return (
    <Part id="miembros" title="Miembros">
      {!members.data && <Pending error={members.error} loading={t.loading} />}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="rows">
            <caption class="visually-hidden">Miembros</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Email</th>
                <th scope="col">Rol</th>
                <th scope="col">Estado</th>
                <th scope="col">Última vez</th>
                <th scope="col">
                  <span class="visually-hidden">Acciones</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <MemberRow
                  key={m.id}
                  base={base}
                  member={m}
                  actor={role}
                  self={m.id === memberId}
                  action={action}
                  onChanged={members.reload}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome action={action} />
      {role === 'admin' && <p class="hint">{t.adminsAndOwners}</p>}
      {link ? (
        <ShownOnce
          id="invite-link"
          label="Enlace de invitación"
          value={link.url}
          note={t.inviteOnce(link.email)}
          onDone={() => setLink(null)}
        />
      ) : inviting ? (
        <form class="inline-form" onSubmit={invite}>
          <Field
            id="invite-email"
            name="email"
            label="Email"
            type="email"
            required
            maxLength={320}
            autoComplete="off"
            error={errors.email}
          />
          <Field id="invite-name" name="name" label="Nombre" maxLength={200} autoComplete="off" error={errors.name} />
          <div class="field">
            <label for="invite-role">Rol</label>
            <select id="invite-role" name="role" aria-describedby="invite-role-hint" defaultValue="agent">
              {grantable(role).map((r) => (
                <option key={r} value={r}>
                  {ROLE_NAMES[r]}
                </option>
              ))}
            </select>
            <p id="invite-role-hint" class="hint">
              {t.rolesHint}
            </p>
            {errors.role && <p class="field-error">{errors.role}</p>}
          </div>
          {errors.form && (
            <p role="alert" class="form-error">
              {errors.form}
            </p>
          )}
          <div class="actions">
            <button type="submit" disabled={busy}>
              Invitar
            </button>
            <button type="button" class="secondary" onClick={() => setInviting(false)}>
              Cancelar
            </button>
          </div>
        </form>
      ) : (
        <button type="button" ref={opener} onClick={() => setInviting(true)}>
          Invitar miembro
        </button>
      )}
    </Part>
  );
}
