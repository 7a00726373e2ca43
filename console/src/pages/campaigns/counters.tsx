// A campaign's state and its counters (recipients, sent, delivered, read, failed) as a term list.
import { statusNames } from './texts';
import type { Campaign } from './types';

export function StatusBadge({ status }: { status: string }) {
  return <span class={`cmp-status cmp-${status}`}>{statusNames[status] ?? status}</span>;
}

/** The counters; with a label, a named region (the campaign's page: its live numbers). */
export function Counters({ c, label }: { c: Campaign; label?: string }) {
  const rows: [string, number][] = [
    ['Destinatarios', c.recipients],
    ['Enviados', c.sent],
    ['Entregados', c.delivered],
    ['Leídos', c.read],
    ['Fallidos', c.failed],
  ];
  const list = (
    <dl class="cmp-counters">
      {rows.map(([name, n]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{n.toLocaleString('es-AR')}</dd>
        </div>
      ))}
    </dl>
  );
  return label ? <section aria-label={label}>{list}</section> : list;
}
