// Agentes de IA's own words (voseo). The server's error texts are shown verbatim.
export const agentTexts = {
  title: 'Agentes de IA',
  loading: 'Cargando…',
  empty: 'Todavía no hay agentes. Creá uno y después escribile sus instrucciones.',
  intro:
    'Un agente contesta con un modelo de lenguaje las conversaciones de los números que lo usan: sigue sus instrucciones, junta los datos de su objetivo y pasa a una persona cuando corresponde.',
  status: { active: 'Activo', paused: 'Pausado' } as Record<string, string>,
  version: (v: string) => `Versión ${v}`,
  numbers: (list: string[]) => (list.length ? `Números: ${list.join(', ')}` : 'Ningún número lo usa'),
  noNumbers:
    'Ningún número usa este agente. Asignáselo a un número con la API (PATCH …/phone-numbers/{id} con agentId) o desde Configuración cuando esté.',
  back: 'Volver a Agentes de IA',
  saved: (v: string) => `Guardamos la configuración (versión ${v}).`,
  activated: 'El agente está activo: contesta en los números que lo usan.',
  paused: 'El agente está pausado: no contesta hasta que lo actives.',
  created: 'Creamos el agente, pausado. Escribí sus instrucciones y activalo.',
  linesHint: 'Una por línea.',
  phrasesHint: 'Una por línea. Si el cliente escribe una de estas, pasa a una persona sin preguntarle al modelo.',
  modelHint: 'Vacío: el modelo del servidor (LLM_MODEL).',
  goalHint: 'Qué tiene que conseguir el agente. Vacío y sin datos: sin objetivo.',
  fieldsEmpty: 'Sin datos para juntar.',
  line: (n: number, text: string) => `Línea ${n}: ${text}`,
  chatHint:
    'Probá al agente como si fueras un cliente: corre el modelo con su configuración guardada, no envía nada a nadie y no emite eventos.',
  chatEmpty: 'Escribí un mensaje para empezar.',
  you: 'Vos',
  agent: 'Agente',
  decision: 'Decisión',
  noReply: '(el agente no contestó nada)',
  goalReached: (data: string) => `objetivo cumplido${data ? ` — ${data}` : ''}`,
  handOff: (reason: string) => `pasar a una persona${reason ? ` — ${reason}` : ''}`,
  restart: 'Empezar de nuevo',
  reviewsOff: 'Este agente no revisa sus conversaciones (no tiene criterios de revisión).',
  reviewsEmpty: 'Todavía no hay revisiones: aparecen cuando termina una conversación del agente.',
  endedBy: { goal: 'objetivo', handoff: 'pase a persona', idle: 'sin mensajes' } as Record<string, string>,
  reviewStatus: { pending: 'pendiente', done: 'hecha', failed: 'falló' } as Record<string, string>,
  rerun: 'Revisamos la conversación de nuevo.',
  criterion: (name: string, result: string | null, score: number | null) =>
    `${name}: ${score !== null ? `${score}/5` : result === 'success' ? 'cumple' : result === 'failure' ? 'no cumple' : 'no se sabe'}`,
};

export const formatTime = (iso: string | null): string =>
  iso ? new Date(iso).toLocaleString('es-AR', { dateStyle: 'short', timeStyle: 'short' }) : '—';
