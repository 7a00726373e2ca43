// Uso y plan: the plan's name and each quota and maximum of GET /me as a bar (`<meter>` named
// "Contactos: 12 de 1000"), "sin límite" when the limit is null; the per-minute caps, which GET
// /me counts nowhere, as their limit.
import { planNames, configTexts as t } from './texts';

export interface AccountView {
  plan: string;
  limits: Record<string, number | null>;
  usage: Record<string, number>;
  phoneNumbers: { id: string; phone: string; name: string | null; provider: string; status: string; default: boolean }[];
}

/** [limit key, label, used] — used from the account's usage, or counted from a list. */
const QUOTAS: readonly [string, string, (a: AccountView, c: Counts) => number][] = [
  ['apiCallsPerMonth', 'Llamadas a la API este mes', (a) => a.usage.apiCalls ?? 0],
  ['webhookDeliveriesPerMonth', 'Entregas de webhooks este mes', (a) => a.usage.webhookDeliveries ?? 0],
  ['automationStepsPerMonth', 'Pasos de automatizaciones este mes', (a) => a.usage.automationSteps ?? 0],
  ['automationHttpRequestsPerMonth', 'Pedidos HTTP de automatizaciones este mes', (a) => a.usage.automationHttpRequests ?? 0],
  ['contacts', 'Contactos', (a) => a.usage.contacts ?? 0],
  ['apiKeys', 'Claves de API', (_a, c) => c.keys],
  ['webhookUrls', 'URLs de webhook', (_a, c) => c.webhooks],
  ['aiApps', 'Apps de IA conectadas', (a) => a.usage.aiApps ?? 0],
];
const CAPS: readonly [string, string][] = [
  ['requestsPerMinute', 'Pedidos a la API por minuto'],
  ['messagesPerMinute', 'Mensajes por minuto'],
  ['mcpCallsPerMinute', 'Llamadas de apps de IA por minuto'],
];

export interface Counts {
  keys: number;
  webhooks: number;
}

const n = (v: number) => v.toLocaleString('es-AR');

export function UsageSection({ account, counts }: { account: AccountView | null; counts: Counts }) {
  return (
    <section aria-labelledby="uso">
      <h2 id="uso">Uso y plan</h2>
      {!account ? (
        <p class="hint">{t.loading}</p>
      ) : (
        <>
          <p>
            Plan: <strong>{planNames[account.plan] ?? account.plan}</strong>
          </p>
          <ul class="quotas">
            {QUOTAS.map(([key, label, used]) => {
              const limit = account.limits[key] ?? null;
              const value = used(account, counts);
              const text = limit === null ? `${label}: ${n(value)} (${t.unlimited})` : `${label}: ${n(value)} de ${n(limit)}`;
              return (
                <li key={key}>
                  <span id={`q-${key}`}>{text}</span>
                  {limit !== null && (
                    <meter min={0} max={Math.max(limit, 1)} value={Math.min(value, limit)} high={limit * 0.8} aria-label={text} />
                  )}
                </li>
              );
            })}
          </ul>
          <p class="hint">{t.perMinuteHint}</p>
          <ul class="caps">
            {CAPS.map(([key, label]) => {
              const limit = account.limits[key] ?? null;
              return <li key={key}>{`${label}: ${limit === null ? t.unlimited : `hasta ${n(limit)}`}`}</li>;
            })}
          </ul>
        </>
      )}
    </section>
  );
}
