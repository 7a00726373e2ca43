// The read-only parts of Configuración (console.md): Números, Instagram, Apps de IA and, for
// owners, Miembros — each a plain table; changing them is for the next version (or the API).
import type { ComponentChildren, JSX } from 'preact';
import { useLoad } from './load';
import { formatTime, configTexts as t } from './texts';

type Cell = string | number | null;

function Table({ title, head, rows, empty }: { title: string; head: string[]; rows: Cell[][]; empty: string }) {
  if (rows.length === 0) return <p class="hint">{empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">{title}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {r.map((c, j) => (
                <td key={j}>{c ?? '—'}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Part({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
      <p class="hint">{t.nextVersion}</p>
    </section>
  );
}

export function NumbersSection({
  numbers,
}: {
  numbers: { id: string; phone: string; name: string | null; provider: string; status: string }[] | null;
}) {
  return (
    <Part id="numeros" title="Números">
      {numbers && (
        <Table
          title="Números"
          head={['Número', 'Nombre', 'Proveedor', 'Estado']}
          rows={numbers.map((p) => [`+${p.phone}`, p.name, p.provider, p.status])}
          empty="Todavía no hay números conectados."
        />
      )}
    </Part>
  );
}

interface Named {
  id: string;
  name: string;
}

function Loaded<T extends Named>({ path, onDenied, render }: { path: string; onDenied: () => void; render: (d: T[]) => JSX.Element }) {
  const res = useLoad<{ data: T[] }>(path, onDenied);
  if (res.error)
    return (
      <p role="alert" class="form-error">
        {res.error}
      </p>
    );
  return res.data ? render(res.data.data) : <p class="hint">{t.loading}</p>;
}

export function InstagramSection({ base, onDenied }: { base: string; onDenied: () => void }) {
  return (
    <Part id="instagram" title="Instagram">
      <Loaded<Named & { status: string; igUserId: string | null }>
        path={`${base}/social-accounts`}
        onDenied={onDenied}
        render={(d) => (
          <Table
            title="Instagram"
            head={['Nombre', 'Estado']}
            rows={d.map((s) => [s.name, s.status])}
            empty="Todavía no hay cuentas de Instagram."
          />
        )}
      />
    </Part>
  );
}

export function AiAppsSection({ base, onDenied }: { base: string; onDenied: () => void }) {
  return (
    <Part id="apps" title="Apps de IA">
      <Loaded<Named & { prefix: string; createdAt: string }>
        path={`${base}/ai-apps`}
        onDenied={onDenied}
        render={(d) => (
          <Table
            title="Apps de IA"
            head={['Nombre', 'Prefijo', 'Conectada']}
            rows={d.map((a) => [a.name, `${a.prefix}…`, formatTime(a.createdAt)])}
            empty="Todavía no hay apps de IA conectadas."
          />
        )}
      />
    </Part>
  );
}

export function MembersSection({ base, onDenied }: { base: string; onDenied: () => void }) {
  return (
    <Part id="miembros" title="Miembros">
      <Loaded<Named & { email: string; role: string; status: string; lastSeenAt: string | null }>
        path={`${base}/members`}
        onDenied={onDenied}
        render={(d) => (
          <Table
            title="Miembros"
            head={['Nombre', 'Email', 'Rol', 'Estado', 'Última vez']}
            rows={d.map((m) => [m.name, m.email, m.role, m.status, formatTime(m.lastSeenAt)])}
            empty="Todavía no hay miembros."
          />
        )}
      />
    </Part>
  );
}
