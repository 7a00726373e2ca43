// Actividad's words (voseo): each audit action, actor and target as people read them, and what
// changed in one short line. The action codes are src/audit/trail.ts's AUDIT_ACTIONS.
import type { AuditLine } from './activity';

export const activityTexts = {
  hint: 'Quién hizo cada cambio de seguridad de la cuenta: claves, apps de IA, webhooks, números, miembros e ingresos. Se guarda 400 días.',
  allActions: 'Todas',
  empty: 'Todavía no hay actividad.',
};

export const actionNames: Record<string, string> = {
  'api_key.created': 'Creó una clave de API',
  'api_key.revoked': 'Revocó una clave de API',
  'ai_app.connected': 'Conectó una app de IA',
  'ai_app.disconnected': 'Desconectó una app de IA',
  'webhook.created': 'Agregó un webhook',
  'webhook.updated': 'Cambió un webhook',
  'webhook.secret_rotated': 'Renovó el secreto de un webhook',
  'webhook.deleted': 'Eliminó un webhook',
  'phone_number.connected': 'Conectó un número',
  'phone_number.updated': 'Cambió un número',
  'social_account.connected': 'Conectó una cuenta de Instagram',
  'social_account.updated': 'Cambió una cuenta de Instagram',
  'social_account.deleted': 'Eliminó una cuenta de Instagram',
  'member.invited': 'Invitó a un miembro',
  'member.added': 'Agregó a un miembro',
  'member.updated': 'Cambió a un miembro',
  'member.disabled': 'Desactivó a un miembro',
  'member.removed': 'Eliminó a un miembro',
  'login.succeeded': 'Ingresó a la consola',
  'login.failed': 'Intento de ingreso fallido',
  'account.plan_changed': 'Cambió el plan',
  'account.limits_changed': 'Cambió los límites',
  'secrets.rotated': 'Renovó la clave de los secretos',
  'contact.erased': 'Borró los datos de un contacto',
  'contact.exported': 'Exportó los datos de un contacto',
  'dead_letter.retried': 'Reintentó un mensaje muerto',
  'dead_letter.discarded': 'Descartó un mensaje muerto',
};

const TARGETS: Record<string, string> = {
  api_key: 'Clave de API',
  ai_app: 'App de IA',
  webhook: 'Webhook',
  phone_number: 'Número',
  social_account: 'Cuenta de Instagram',
  member: 'Miembro',
  account: 'La cuenta',
  contact: 'Contacto',
  dead_letter: 'Mensaje muerto',
};

export function actorName(a: AuditLine['actor']): string {
  if (a.type === 'operator') return 'Quien administra el servidor';
  if (a.type === 'system') return 'Chasqui';
  if (a.type === 'api_key') return `Clave «${a.name ?? '—'}»`;
  if (a.type === 'ai_app') return `App de IA «${a.name ?? '—'}»`;
  return a.name ?? '—';
}

/** The target's kind and, when the line names it, what it is called (a name, a host, a phone). */
export function targetName(l: AuditLine): string {
  if (!l.target) return '—';
  const c = l.changes;
  const label = [c.name, c.host, c.phone].find((v) => typeof v === 'string');
  const kind = TARGETS[l.target.type] ?? l.target.type;
  return label ? `${kind} «${label}»` : kind;
}

/** The fields a line's `changes` may name, as people read them (others are shown as written). */
const FIELDS: Record<string, string> = {
  prefix: 'prefijo',
  events: 'eventos',
  enabled: 'activo',
  role: 'rol',
  status: 'estado',
  limits: 'límites',
  provider: 'proveedor',
  reason: 'motivo',
  via: 'cómo',
  default: 'predeterminado',
  agentId: 'agente',
  throughputPerSecond: 'velocidad',
  secretsReplaced: 'secretos cambiados',
  previousSecretUntil: 'el anterior firma hasta',
  password: 'contraseña',
  queue: 'cola',
  attempts: 'intentos',
  again: 'de nuevo',
};

const show = (v: unknown): string => {
  if (v === null || v === undefined) return '—';
  if (v === true) return 'sí';
  if (v === false) return 'no';
  if (Array.isArray(v)) return v.join(', ') || '—';
  return String(v);
};

/** What changed, in one line: "rol: agent → admin · estado: active → disabled". */
export function changesText(changes: Record<string, unknown>): string {
  return Object.entries(changes)
    .filter(([k]) => !['name', 'host', 'phone'].includes(k) || isFromTo(changes[k]))
    .map(([key, v]) => {
      const k = FIELDS[key] ?? key;
      if (isFromTo(v)) return `${k}: ${show(v.from)} → ${show(v.to)}`;
      if (v && typeof v === 'object' && !Array.isArray(v)) return `${k}: ${changesText(v as Record<string, unknown>)}`;
      return `${k}: ${show(v)}`;
    })
    .join(' · ');
}

function isFromTo(v: unknown): v is { from: unknown; to: unknown } {
  return !!v && typeof v === 'object' && 'from' in v && 'to' in v;
}
