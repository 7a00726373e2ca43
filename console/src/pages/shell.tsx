// The signed-in console: a header (account, member, Salir), the navigation of the sections the
// member's role allows, and the open section. Without a session → the login page.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, setCsrf } from '../api/client';
import { BASE, Link, navigate } from '../router';
import { type Role, sections, sectionsFor } from '../sections';
import { texts } from '../texts';
import { pages } from './registry';
import { DeniedPage } from './section';

interface Me {
  member: { id: string; email: string; name: string; role: Role };
  account: { id: string; name: string; plan: string };
  csrf: string;
}

export function Shell({ slug: path }: { slug: string }) {
  const [slug = '', ...rest] = path.split('/');
  const sub = rest.length > 0 && rest.join('/') !== '' ? rest.join('/') : null;
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    call<Me>('GET', `${BASE}/api/me`)
      .then((m) => {
        setCsrf(m.csrf);
        setMe(m);
      })
      .catch((e: unknown) => {
        // No session (401), or a server without the console's API (404): log in first.
        if (e instanceof ApiError && (e.status === 401 || e.status === 404)) navigate(`${BASE}/login`, true);
        else setError(e instanceof ApiError ? e.message : texts.offline);
      });
  }, []);

  const allowed = me ? sectionsFor(me.member.role) : [];
  useEffect(() => {
    // An unknown path goes to the first allowed section; a known one the role lacks says so.
    if (me && !sections.some((s) => s.slug === slug)) navigate(`${BASE}/${allowed[0]!.slug}`, true);
  }, [me, slug]);

  if (!me)
    return (
      <main class="auth">
        <p role={error ? 'alert' : 'status'}>{error || 'Cargando…'}</p>
      </main>
    );

  const logout = async () => {
    try {
      await call('POST', `${BASE}/api/logout`);
    } finally {
      setCsrf('');
      navigate(`${BASE}/login?aviso=sesion-cerrada`, true);
    }
  };
  const denied = allowed.some((s) => s.slug === slug) ? undefined : sections.find((s) => s.slug === slug);
  const section = denied ?? allowed.find((s) => s.slug === slug) ?? allowed[0]!;
  const Page = pages[section.slug];

  return (
    <div class="shell">
      <a class="skip" href="#contenido">
        Saltar al contenido
      </a>
      <header class="topbar">
        <p class="brand">Chasqui</p>
        <p class="who">
          <span class="account">{me.account.name}</span>
          <span class="member">{me.member.name}</span>
        </p>
        <button type="button" class="secondary" onClick={logout}>
          Salir
        </button>
      </header>
      <nav class="sections" aria-label="Secciones">
        <ul>
          {allowed.map((s) => (
            <li key={s.slug}>
              <Link href={`${BASE}/${s.slug}`} aria-current={s.slug === section.slug ? 'page' : undefined}>
                {s.name}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="contenido" class="content">
        {denied ? (
          <DeniedPage section={denied} />
        ) : (
          Page && <Page accountId={me.account.id} role={me.member.role} memberId={me.member.id} sub={sub} />
        )}
      </main>
    </div>
  );
}
