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
  // Miembros
  rolesHint: 'Dueño: todo, también los miembros. Administrador: todo menos los dueños. Agente: la bandeja de entrada.',
  inviteOnce: (email: string) =>
    `Mandale este enlace a ${email}: con él elige su contraseña. Sirve una vez, durante 7 días. No lo vas a poder ver de nuevo.`,
  adminsAndOwners: 'Los dueños solo los cambia otro dueño.',
  ownersByOwners: 'Solo un dueño lo cambia',
  roleChanged: (name: string, role: string) => `${name} ahora es ${role}.`,
  disabled: (name: string) => `Desactivaste a ${name}: su sesión terminó y no puede ingresar.`,
  enabled: (name: string) => `Activaste a ${name}.`,
  removeAsk: (name: string) => `¿Eliminar a ${name}? Deja de tener acceso; lo que hizo queda con su nombre.`,
  removed: (name: string) => `Eliminaste a ${name}.`,
  // Números
  numbersEmpty: 'Todavía no hay números conectados.',
  numbersHint:
    'Para conectar un número nuevo o cambiar su velocidad, pedíselo a quien administra el servidor de Chasqui. Velocidad: los mensajes por segundo que Meta le permite enviar.',
  perSecond: (n: number) => `${n.toLocaleString('es-AR')}/s`,
  noAgent: 'Ninguno',
  agentChanged: (phone: string, agent: string) => `El agente de ${phone} ahora es: ${agent}.`,
  madeDefault: (phone: string) => `${phone} es ahora el número predeterminado.`,
  disconnectNumberAsk: (phone: string) =>
    `¿Desconectar ${phone}? No vas a poder enviar mensajes desde este número hasta que lo conectes de nuevo.`,
  numberDisconnected: (phone: string) => `Desconectaste ${phone}.`,
  numberConnected: (phone: string) => `Conectaste ${phone}.`,
  // Instagram
  instagramEmpty: 'Todavía no hay cuentas de Instagram. Para conectar una, pedíselo a quien administra el servidor de Chasqui.',
  sandbox: 'Prueba (sandbox)',
  disconnectSocialAsk: (name: string) =>
    `¿Desconectar «${name}»? Dejás de recibir y de enviar sus mensajes hasta que la conectes de nuevo.`,
  removeSocialAsk: (name: string) => `¿Eliminar «${name}»? Sus conversaciones y mensajes quedan, pero no vas a poder responderlas.`,
  socialDisconnected: (name: string) => `Desconectaste «${name}».`,
  socialConnected: (name: string) => `Conectaste «${name}».`,
  socialRemoved: (name: string) => `Eliminaste «${name}».`,
  // Apps de IA
  appsEmpty: 'Todavía no hay apps de IA conectadas.',
  neverUsed: 'todavía no la usó',
  disconnectAppAsk: (name: string) => `¿Desconectar «${name}»? Su token deja de funcionar desde la próxima llamada.`,
  appDisconnected: (name: string) => `Desconectaste «${name}»: su token ya no funciona.`,
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
