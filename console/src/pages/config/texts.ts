// The Configuración page's own words (voseo). The server's error texts are shown verbatim.
export const configTexts = {
  title: 'Configuración',
  loading: 'Cargando…',
  keysEmpty: 'Todavía no hay claves. Creá una para usar la API.',
  keyOnce: 'No la vas a poder ver de nuevo.',
  copied: 'Copiada.',
  copyFailed: 'No pudimos copiarla: seleccioná el texto y copialo a mano.',
  revokeAsk: (name: string) => `¿Revocar «${name}»? Las llamadas con esta clave van a responder 401.`,
  revoked: 'Revocada',
  active: 'Activa',
  webhooksEmpty: 'Todavía no hay webhooks. Agregá una URL para recibir los eventos.',
  eventsHint: 'Si no marcás ninguno, la URL recibe todos los eventos.',
  allEvents: 'todos',
  secretOnce: 'Este es el secreto para verificar las firmas. No lo vas a poder ver de nuevo.',
  testQueued: 'Enviamos un evento de prueba (message.received con test: true).',
  redeliverQueued: 'Reenviamos la entrega.',
  deleteAsk: (url: string) => `¿Eliminar el webhook ${url}? Deja de recibir eventos.`,
  deliveriesEmpty: 'Todavía no hay entregas.',
  pending: 'pendiente',
  noAnswer: 'sin respuesta',
  unlimited: 'sin límite',
  perMinuteHint: 'Topes por minuto (no se acumulan: se cuentan en cada minuto).',
  nextVersion: 'Esta parte llega en la próxima versión de la consola; mientras tanto, usá la API.',
  ownersOnly: 'Solo los dueños de la cuenta ven los miembros.',
};

/** Plan ids (src/limits/plans.ts) as people read them. */
export const planNames: Record<string, string> = {
  free_trial: 'Prueba gratis',
  crecimiento: 'Crecimiento',
  escala: 'Escala',
  enterprise: 'Enterprise',
};

export const formatTime = (iso: string | null): string =>
  iso ? new Date(iso).toLocaleString('es-AR', { dateStyle: 'short', timeStyle: 'medium' }) : '—';
