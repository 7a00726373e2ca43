// Configuración (console.md "Pages"): Claves de API, Webhooks, Números, Instagram, Apps de IA,
// Miembros, Actividad (owners only) and Uso y plan, over the operator account routes with the session. A role the server
// answers 403 to sees only a plain "no permiso" text.
import { useRef, useState } from 'preact/hooks';
import { useFocusOnChange } from '../../focus';
import type { Role } from '../../sections';
import { texts } from '../../texts';
import { ActivitySection } from './activity';
import { AiAppsSection } from './ai-apps';
import { InstagramSection } from './instagram';
import { KeysSection } from './keys';
import { useLoad } from './load';
import { MembersSection } from './members';
import { NumbersSection } from './numbers';
import { configTexts as t } from './texts';
import { type AccountView, UsageSection } from './usage';
import { WebhooksSection } from './webhooks';
import './config.css';

export function ConfigPage({ accountId, role, memberId }: { accountId: string; role: Role; memberId: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, 'configuracion');
  const [denied, setDenied] = useState(role === 'agent');
  const [version, setVersion] = useState(0);
  const base = `/admin/v1/accounts/${encodeURIComponent(accountId)}`;
  const onDenied = () => setDenied(true);
  const onChange = () => setVersion((v) => v + 1);
  // Once denied, nothing more is loaded (an empty path loads nothing).
  const path = (rest: string) => (denied ? '' : `${base}${rest}`);
  const account = useLoad<AccountView>(path(''), onDenied, version);
  const keys = useLoad<{ data: { revokedAt: string | null }[] }>(path('/keys'), onDenied, version);
  const hooks = useLoad<{ data: unknown[] }>(path('/webhooks'), onDenied, version);

  const title = (
    <h1 ref={heading} tabIndex={-1}>
      {t.title}
    </h1>
  );
  if (denied)
    return (
      <>
        {title}
        <p>{texts.denied}</p>
      </>
    );
  const counts = {
    keys: keys.data?.data.filter((k) => !k.revokedAt).length ?? 0,
    webhooks: hooks.data?.data.length ?? 0,
  };
  return (
    <div class="config">
      {title}
      <KeysSection base={base} onDenied={onDenied} onChange={onChange} />
      <WebhooksSection base={base} onDenied={onDenied} onChange={onChange} />
      <NumbersSection base={base} onDenied={onDenied} onChange={onChange} />
      <InstagramSection base={base} onDenied={onDenied} />
      <AiAppsSection base={base} onDenied={onDenied} onChange={onChange} />
      <MembersSection base={base} role={role} memberId={memberId} onDenied={onDenied} />
      {role === 'owner' && <ActivitySection base={base} onDenied={onDenied} version={version} />}
      <UsageSection account={account.error ? null : account.data} counts={counts} />
      {account.error && (
        <p role="alert" class="form-error">
          {account.error}
        </p>
      )}
    </div>
  );
}
