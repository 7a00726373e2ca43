// The one catalogue of client-facing texts (api.md §7: Argentine Spanish, shown as they are).
// Each code has its HTTP status; texts are short and say what to do.
import type { z } from 'zod';

type Text = string | ((p: Record<string, string | number>) => string);

export const catalogue = {
  // 400 / 413 / 415 / 404 of the HTTP layer
  validation: { status: 400, text: 'Revisá los datos enviados.' },
  invalid_json: { status: 400, text: 'El cuerpo no es JSON válido. Revisá la sintaxis y probá de nuevo.' },
  body_too_large: { status: 413, text: 'El cuerpo supera 1 MiB. Enviá menos datos por pedido.' },
  unsupported_media_type: { status: 415, text: 'Enviá el cuerpo como JSON con Content-Type: application/json.' },
  uri_too_long: { status: 414, text: 'La dirección es demasiado larga. Revisá el id o la ruta que armaste.' },
  route_not_found: { status: 404, text: 'Esa ruta no existe. Revisá el método y la dirección.' },
  method_not_allowed: { status: 405, text: 'Ese método no está permitido en esta ruta.' },
  // Answers of the HTTP server itself, before a route is chosen (decisions.md "Slow clients")
  request_timeout: { status: 408, text: 'El pedido no terminó de llegar a tiempo. Revisá tu conexión y enviá el pedido completo.' },
  headers_too_large: { status: 431, text: 'Los encabezados superan 16 KiB. Enviá menos encabezados o más cortos.' },
  bad_request: { status: 400, text: 'El pedido HTTP está mal formado. Revisá cómo lo arma tu cliente.' },
  // 400 problems of any request, found before validation (used as the `message` of one problem)
  text_unstorable: {
    status: 400,
    text: 'Este texto tiene un carácter que no podemos guardar (el carácter nulo \\u0000 o un sustituto UTF-16 suelto). Sacalo y probá de nuevo.',
  },
  json_too_deep: { status: 400, text: (p) => `El JSON anida más de ${p.max} niveles. Enviá una estructura más plana.` },
  unknown_field: { status: 400, text: 'Este campo no existe. Revisá cómo se escribe o sacalo del pedido.' },
  // 401 / 402
  unauthorized: { status: 401, text: 'Falta la clave de API o no es válida. Revisá el encabezado Authorization: Bearer etk_live_…' },
  unauthorized_app_token: {
    status: 401,
    text: 'Ese es el token de una app de IA (etk_app_…): sirve solo para el servidor MCP (/mcp). Para la API usá una clave de API: Authorization: Bearer etk_live_…',
  },
  admin_unauthorized: { status: 401, text: 'Falta el token de operador o no es válido. Revisá el encabezado Authorization.' },
  metrics_unauthorized: {
    status: 401,
    text: 'Falta el token de métricas o de operador, o no es válido. Revisá el encabezado Authorization: Bearer …',
  },
  plan_without_api: {
    status: 402,
    text: (p) => `Tu plan (${p.plan}) no incluye la API ni los webhooks. Pasá al plan escala o enterprise para usarlos.`,
  },
  contact_limit: {
    status: 402,
    text: (p) => `Llegaste al límite de ${p.limit} contactos de tu plan. Mejorá el plan o borrá contactos para agregar nuevos.`,
  },
  ai_app_limit: {
    status: 402,
    text: (p) => `Llegaste al máximo de ${p.limit} apps de IA conectadas de tu plan. Desconectá una que no uses o mejorá el plan.`,
  },
  ai_app_not_found: { status: 404, text: 'No encontramos esa app de IA conectada en la cuenta. Revisá el id.' },
  api_key_limit: {
    status: 402,
    text: (p) => `Llegaste al máximo de ${p.limit} claves de API de tu plan. Revocá una que no uses o mejorá el plan.`,
  },
  webhook_limit: {
    status: 402,
    text: (p) => `Llegaste al máximo de ${p.limit} URLs de webhook de tu plan. Borrá una o mejorá el plan.`,
  },
  // 404
  not_found: { status: 404, text: 'No encontramos ese recurso en tu cuenta.' },
  account_not_found: { status: 404, text: 'No existe esa cuenta.' },
  member_not_found: { status: 404, text: 'No existe ese miembro en la cuenta. Revisá el id.' },
  invite_not_found: {
    status: 404,
    text: 'Este enlace de invitación no sirve: ya se usó, venció o no existe. Pedile a quien administra la cuenta uno nuevo.',
  },
  member_email_taken: { status: 409, text: 'Ya hay un miembro con ese email. Usá otro email o editá ese miembro.' },
  last_owner: {
    status: 409,
    text: 'La cuenta tiene que conservar al menos un dueño activo. Nombrá a otro miembro dueño antes de cambiar o quitar a este.',
  },
  login_failed: { status: 401, text: 'Email o contraseña incorrectos.' },
  team_reply_by_required: { status: 400, text: 'Indicá quién responde: by con name (y un id si lo tenés).' },
  session_required: { status: 401, text: 'Tu sesión no es válida o venció. Ingresá de nuevo.' },
  login_throttled: {
    status: 429,
    text: (p) => `Demasiados intentos fallidos. Esperá ${p.minutes} minutos y probá de nuevo.`,
  },
  csrf_failed: {
    status: 403,
    text: 'Falta el encabezado X-Chasqui-CSRF o no coincide con tu sesión. Recargá la página y probá de nuevo.',
  },
  oauth_registration_throttled: {
    status: 429,
    text: (p) => `Demasiadas apps registradas desde tu dirección IP en la última hora. Probá de nuevo en ${p.minutes} minutos.`,
  },
  oauth_role_refused: { status: 403, text: 'Tu rol no permite conectar apps. Pedíselo a un dueño o administrador de la cuenta.' },
  oauth_interaction_not_found: {
    status: 404,
    text: 'Este pedido de conexión ya no existe o venció. Volvé a la app que querías conectar y probá de nuevo.',
  },
  role_forbidden: { status: 403, text: 'Tu rol en la cuenta no te permite hacer esto. Pedíselo a un dueño o administrador.' },
  owner_only: {
    status: 403,
    text: 'Solo un dueño de la cuenta puede cambiar, desactivar o quitar a un dueño, o nombrar a alguien dueño. Pedíselo a un dueño.',
  },
  contact_not_found: { status: 404, text: 'No encontramos ese contacto en tu cuenta.' },
  template_not_found: { status: 404, text: 'No encontramos esa plantilla en tu cuenta: puede que la hayan borrado. Revisá el id.' },
  message_not_found: { status: 404, text: 'No encontramos ese mensaje en tu cuenta. Revisá el id.' },
  campaign_not_found: { status: 404, text: 'No encontramos esa campaña en tu cuenta.' },
  pipeline_not_found: { status: 404, text: 'No encontramos ese embudo en tu cuenta.' },
  stage_not_found: { status: 404, text: 'No encontramos esa etapa en el embudo del caso.' },
  case_not_found: { status: 404, text: 'No encontramos ese caso en tu cuenta.' },
  conversation_not_found: { status: 404, text: 'No encontramos esa conversación en tu cuenta. Revisá el id.' },
  key_not_found: { status: 404, text: 'No existe esa clave de API en la cuenta.' },
  phone_number_not_found: { status: 404, text: 'No existe ese número en la cuenta.' },
  social_account_not_found: { status: 404, text: 'No existe esa cuenta social en la cuenta.' },
  webhook_not_found: { status: 404, text: 'No existe ese webhook en la cuenta.' },
  delivery_not_found: { status: 404, text: 'No existe esa entrega de webhook.' },
  job_not_found: {
    status: 404,
    text: (p) => `No existe esa tarea. Las tareas son ${p.names}.`,
  },
  dead_letter_not_found: {
    status: 404,
    text: 'No existe ese mensaje muerto: puede que ya lo hayan reintentado o descartado. Listalos con GET /admin/v1/dead-letters.',
  },
  dead_letter_not_retryable: {
    status: 409,
    text: 'No se puede reintentar ahora: la conversación ya tiene otra automatización o agente en curso, o el elemento cambió. Esperá a que termine o descartalo.',
  },
  // The reasons catalogue (src/classification)
  reason_not_found: { status: 404, text: 'No encontramos ese motivo en la cuenta. Revisá el id.' },
  reason_name_taken: { status: 409, text: (p) => `Ya hay un motivo llamado "${p.name}" en la cuenta. Elegí otro nombre o editá ese.` },
  reason_subreason_unknown: {
    status: 400,
    text: 'Ese id no es de un submotivo de este motivo (o está repetido). Sacalo para crear uno nuevo.',
  },
  // Automations: executions, the public and operator routes, the incoming webhook (src/automations)
  automation_not_found: { status: 404, text: 'No encontramos esa automatización en tu cuenta. Revisá el id.' },
  execution_not_found: { status: 404, text: 'No encontramos esa ejecución en la automatización. Revisá los ids.' },
  automation_hook_not_found: {
    status: 404,
    text: 'No hay ninguna automatización con ese webhook entrante. Revisá la dirección: puede que la hayan rotado.',
  },
  automation_not_active: {
    status: 409,
    text: 'La automatización no está activa. Activala desde la app (estado active) y probá de nuevo.',
  },
  automation_running: {
    status: 409,
    text: 'La conversación ya tiene una automatización en curso. Esperá a que termine o detenela desde la app.',
  },
  automation_not_webhook: {
    status: 409,
    text: 'Esta automatización no se dispara por webhook: no tiene webhook entrante. Cambiá su disparador a webhook primero.',
  },
  execution_not_running: { status: 409, text: 'La ejecución ya terminó: no hay nada que detener.' },
  automation_number_unknown: { status: 400, text: 'No existe ese número en la cuenta. Revisá el phoneNumberId en GET /me.' },
  automation_hook_phone: {
    status: 400,
    text: 'Enviá el teléfono del contacto en el campo phone, en formato internacional (por ejemplo +5491123456789).',
  },
  automation_hook_object: { status: 400, text: 'El cuerpo tiene que ser un objeto JSON con el campo phone.' },
  automation_hop_header: {
    status: 400,
    text: 'El encabezado Chasqui-Hop tiene que ser un número entero (0 o más). Sacalo si el pedido no viene de una automatización.',
  },
  automation_loop: {
    status: 508,
    text: (p) =>
      `La automatización se llamó a sí misma en bucle: este pedido es el salto ${p.hop} de una cadena de automatizaciones y se permiten ${p.max} saltos. Revisá el paso http que la vuelve a iniciar.`,
  },
  automation_start_rate: {
    status: 429,
    text: (p) =>
      `La automatización superó su límite de ${p.limit} inicios por minuto. Esperá un minuto y probá de nuevo; si necesitás más, pedí que suban el límite.`,
  },
  // AI agents: the operator routes and the public list (src/agents)
  agent_not_found: { status: 404, text: 'No encontramos ese agente de IA en tu cuenta. Revisá el id.' },
  agent_model_missing: {
    status: 409,
    text: (p) =>
      p.test
        ? 'No hay un modelo de lenguaje configurado en este servidor, así que el agente no puede responder la prueba. Configurá LLM_BASE_URL (y LLM_API_KEY y LLM_MODEL si tu proveedor los pide), reiniciá el servicio y probá de nuevo.'
        : p.review
          ? 'No hay un modelo de lenguaje configurado en este servidor, así que no podemos revisar la conversación. Configurá LLM_BASE_URL (y LLM_API_KEY y LLM_MODEL si tu proveedor los pide), reiniciá el servicio y volvé a correr la revisión.'
          : 'No hay un modelo de lenguaje configurado en este servidor, así que el agente no puede quedar activo. Configurá LLM_BASE_URL (y LLM_API_KEY y LLM_MODEL si tu proveedor los pide), reiniciá el servicio y volvé a activarlo. Mientras tanto podés guardarlo en pausa (status paused).',
  },
  agent_model_failed: {
    status: 502,
    text: 'El modelo de lenguaje no respondió después de tres intentos. Revisá que el servidor del modelo (LLM_BASE_URL) esté funcionando y que el modelo exista, y probá de nuevo.',
  },
  agent_test_conversation_not_found: {
    status: 404,
    text: 'No encontramos esa conversación de prueba para este agente. Revisá el conversationId o empezá una nueva sin él.',
  },
  agent_review_not_found: { status: 404, text: 'No encontramos esa revisión para este agente. Revisá los ids.' },
  agent_field_name: {
    status: 400,
    text: 'El nombre del campo empieza con una letra o _ y sigue con letras sin acento, números o _ (hasta 64 caracteres).',
  },
  agent_name_duplicate: {
    status: 400,
    text: (p) => `Ya hay otro con el nombre "${p.name}". Usá un nombre distinto para cada uno.`,
  },
  // WhatsApp Cloud API receiver and template sync (src/channel/cloud)
  cloud_signature_invalid: {
    status: 401,
    text: 'La firma X-Hub-Signature-256 no coincide. Revisá que el app secret cargado en el número sea el de la app de Meta.',
  },
  instagram_signature_invalid: {
    status: 401,
    text: 'La firma X-Hub-Signature-256 no coincide. Revisá que el app secret cargado en la cuenta social sea el de la app de Meta.',
  },
  instagram_verify_refused: {
    status: 403,
    text: 'El verify token no coincide con el de ninguna cuenta social de Instagram. Revisá el valor en la configuración del webhook de la app de Meta.',
  },
  cloud_verify_refused: {
    status: 403,
    text: 'El verify token no coincide con el de ningún número conectado. Revisá el valor en la configuración del webhook de la app de Meta.',
  },
  cloud_no_number: {
    status: 409,
    text: 'La cuenta no tiene números conectados a la API de WhatsApp Cloud. Conectá uno con provider cloud y probá de nuevo.',
  },
  cloud_sync_failed: { status: 502, text: (p) => `No pudimos traer las plantillas de WhatsApp: ${p.reason}` },
  cloud_template_refused: {
    status: 502,
    text: (p) => `WhatsApp no aceptó la plantilla para revisión: ${p.reason}. Revisá el nombre, el texto y los ejemplos y probá de nuevo.`,
  },
  // 409
  window_closed: {
    status: 409,
    text: 'El contacto no te escribió en las últimas 24 horas (o todavía no te escribió): el texto libre no está permitido. Usá una plantilla aprobada.',
  },
  template_not_approved: {
    status: 409,
    text: (p) => `La plantilla "${p.name}" todavía no está aprobada (estado ${p.status}). Esperá la aprobación o usá otra.`,
  },
  phone_number_unknown: { status: 409, text: 'No hay un número conectado con ese phoneNumberId. Revisá el id en GET /me.' },
  phone_number_disconnected: { status: 409, text: 'El número de envío está desconectado. Volvé a conectarlo desde la app.' },
  no_connected_number: { status: 409, text: 'Tu cuenta no tiene un número conectado. Conectá uno desde la app para enviar.' },
  contact_opted_out: { status: 409, text: 'El contacto pidió no recibir más mensajes.' },
  send_opted_out: {
    status: 409,
    text: 'El contacto pidió no recibir más mensajes (optedOut): no le enviamos plantillas. Si te vuelve a escribir, respondele con texto libre dentro de las 24 horas.',
  },
  conversation_no_phone: {
    status: 409,
    text: 'El contacto de esta conversación de WhatsApp no tiene teléfono: no se le puede escribir por acá.',
  },
  social_template: { status: 409, text: () => `${instagramReasons.template}.` },
  social_window_closed: {
    status: 409,
    text: 'El contacto no te escribió por Instagram en las últimas 24 horas: Instagram no deja escribirle hasta que vuelva a escribir (no hay plantillas en Instagram).',
  },
  social_secrets_sandbox: {
    status: 400,
    text: 'Una cuenta social del sandbox no tiene secretos de Instagram: sacá el campo instagram.',
  },
  social_account_unavailable: {
    status: 409,
    text: 'Esta conversación de Instagram no tiene una cuenta social conectada (se desconectó, se borró o nunca tuvo una): conectá la cuenta para responder por Instagram.',
  },
  case_closed: { status: 409, text: 'El caso ya está cerrado.' },
  case_closed_stage: {
    status: 409,
    text: 'El caso ya está cerrado: no se puede cambiar de etapa. Los casos nuevos se abren cuando el cliente vuelve a escribir.',
  },
  campaign_not_active: { status: 409, text: 'La campaña ya terminó o fue cancelada: no hay nada que detener.' },
  idempotency_in_progress: {
    status: 409,
    text: 'Hay un pedido con la misma Idempotency-Key que todavía se está procesando. Esperá su respuesta y probá de nuevo.',
  },
  conflict: { status: 409, text: 'El recurso cambió mientras lo procesábamos. Probá de nuevo.' },
  // 422
  idempotency_mismatch: {
    status: 422,
    text: 'Esa Idempotency-Key ya se usó con otro cuerpo. Usá una clave nueva para un pedido distinto.',
  },
  // 429
  rate_limited_requests: {
    status: 429,
    text: (p) => `Superaste el límite de ${p.limit} pedidos por minuto. Esperá un minuto y probá de nuevo.`,
  },
  rate_limited_messages: {
    status: 429,
    text: (p) => `Superaste el límite de ${p.limit} mensajes por minuto. Esperá un minuto antes de enviar más.`,
  },
  quota_api_calls: {
    status: 429,
    text: (p) => `Usaste las ${p.limit} llamadas a la API de este mes. Mejorá el plan o esperá al día 1.`,
  },
  number_throughput: {
    status: 429,
    text: (p) =>
      `${p.channel === 'instagram' ? 'La cuenta de Instagram ya envía' : 'El número ya envía'} al máximo de su nivel (${p.limit} mensajes por segundo). Probá de nuevo en unos segundos.`,
  },
  ip_blocked: {
    status: 429,
    text: 'Demasiados pedidos con claves inválidas desde tu dirección IP. Esperá un minuto y revisá la clave.',
  },
  // 5xx
  provider_rejected: {
    status: 502,
    text: (p) => `El proveedor del canal rechazó el mensaje: ${p.reason}`,
  },
  provider_temporary: {
    status: 502,
    text: (p) => `El proveedor del canal no pudo aceptar el mensaje por ahora (${p.reason}). Probá de nuevo en unos minutos.`,
  },
  // 409 from the provider (messages: ProviderError kinds window/template)
  provider_window_social: {
    status: 409,
    // Instagram's own reason says it all (and that there are no templates to fall back to).
    text: (p) => `${String(p.reason).charAt(0).toUpperCase()}${String(p.reason).slice(1)}.`,
  },
  provider_window: {
    status: 409,
    text: (p) => `El proveedor del canal no permite texto libre ahora (${p.reason}). Usá una plantilla aprobada.`,
  },
  provider_template: {
    status: 409,
    text: (p) => `El proveedor del canal no acepta la plantilla (${p.reason}). Revisala en la app.`,
  },
  // 400 problems of POST /messages and the sandbox that zod cannot express (used with invalid())
  send_text_or_template: { status: 400, text: 'Enviá text (texto libre) o template (plantilla aprobada): uno de los dos.' },
  send_not_both: { status: 400, text: 'Enviá text o template, no los dos a la vez.' },
  note_blank: { status: 400, text: 'La nota está vacía. Escribí lo que querés dejar anotado.' },
  text_blank: { status: 400, text: 'El texto está vacío. Escribí el mensaje que querés enviar.' },
  text_too_long: {
    status: 400,
    text: (p) =>
      `El texto tiene ${p.length} caracteres y ${p.channel} acepta hasta ${p.limit} por mensaje. Acortalo o repartilo en varios mensajes.`,
  },
  template_variable_too_long: {
    status: 400,
    text: (p) => `La variable ${p.name} tiene ${p.length} caracteres y una plantilla acepta hasta ${p.limit} por variable. Acortala.`,
  },
  text_too_long_bytes: {
    status: 400,
    text: (p) =>
      `El texto ocupa ${p.length} bytes y ${p.channel} acepta hasta ${p.limit} por mensaje (una letra con tilde o una ñ ocupa 2, un emoji 4). Acortalo o repartilo en varios mensajes.`,
  },
  inbound_from_or_socialchat: { status: 400, text: 'Enviá from (teléfono) o socialchat (usuario de la red social): uno de los dos.' },
  inbound_text_required: { status: 400, text: 'Un mensaje de tipo text necesita text.' },
  timestamp_future: { status: 400, text: 'La fecha no puede estar en el futuro. Mandá la hora en que el cliente escribió.' },
  // 400 problems of phone fields (lib/phone.ts, used with invalid())
  phone_length: { status: 400, text: 'El teléfono tiene que tener entre 6 y 32 caracteres, en formato internacional.' },
  phone_format: {
    status: 400,
    text: 'Revisá el número: tiene que estar en formato internacional, con código de país (por ejemplo +54 9 11 5555-5555).',
  },
  // 400 problems of the operator's phone numbers (acceptance sweep, used with invalid())
  phone_number_keep_default: {
    status: 400,
    text: 'La cuenta siempre tiene un número predeterminado. Para cambiarlo, mandá default: true en otro número.',
  },
  phone_number_cloud_required: {
    status: 400,
    text: 'Un número cloud necesita cloud: {phoneNumberId, wabaId, accessToken, appSecret, verifyToken}.',
  },
  social_instagram_required: {
    status: 400,
    text: 'Una cuenta social de Instagram necesita instagram: {igUserId, accessToken, appSecret, verifyToken}.',
  },
  social_instagram_taken: { status: 400, text: 'Esa cuenta de Instagram (igUserId) ya está conectada.' },
  phone_number_cloud_taken: { status: 400, text: 'Ese phoneNumberId de la API de WhatsApp Cloud ya está conectado.' },
  inbound_wamid_taken: {
    status: 409,
    text: 'Ese wamid ya es de otro mensaje. Cada mensaje del canal tiene su propio wamid: mandá uno nuevo o no lo mandes.',
  },
  inbound_timestamp_invalid: {
    status: 400,
    text: 'Mandá timestamp como fecha ISO 8601 (por ejemplo 2026-11-22T12:00:00.000Z) o como segundos Unix.',
  },
  // 400 problems of POST /contacts, Idempotency-Key and templates
  attribute_key_invalid: {
    status: 400,
    text: 'Las claves de atributos tienen de 1 a 64 caracteres: letras sin acento, números o _. Renombrá la clave.',
  },
  attributes_too_many: {
    status: 400,
    text: (p) => `Enviá como máximo ${p.max} atributos por pedido. Repartilos en varios pedidos.`,
  },
  attributes_contact_full: {
    status: 400,
    text: (p) => `Un contacto tiene como máximo ${p.max} atributos. Borrá los que no uses (con null) antes de agregar otros.`,
  },
  attribute_fields_limit: {
    status: 409,
    text: (p) =>
      `Tu cuenta llegó al máximo de campos de atributos (${p.max}): este pedido crea ${p.wanted} y quedan ${p.free} libres. Usá campos que ya existan.`,
  },
  idempotency_key_invalid: { status: 400, text: 'El encabezado Idempotency-Key tiene que tener entre 1 y 255 caracteres.' },
  template_variables_mismatch: {
    status: 400,
    text: (p) => `Cada {{variable}} del cuerpo tiene que estar en variables y al revés. Revisá: ${p.names}.`,
  },
  template_variable_duplicate: { status: 400, text: (p) => `La variable "${p.name}" está repetida. Dejá una sola.` },
  template_name_taken: {
    status: 409,
    text: (p) => `Ya existe una plantilla "${p.name}" en el idioma ${p.language}. Usá otro nombre o borrá la anterior.`,
  },
  delivery_skipped: {
    status: 409,
    text: 'Esa entrega no se envió porque se terminó la cuota mensual de entregas de webhook, y no se puede reenviar.',
  },
  // 400 problems of webhook URLs (used with invalid())
  webhook_url_scheme: { status: 400, text: 'La URL del webhook tiene que empezar con http:// o https://. Revisala.' },
  webhook_url_private: {
    status: 400,
    text: 'La URL del webhook apunta a una dirección privada o local. Usá una dirección pública de internet.',
  },
  webhook_url_unresolvable: { status: 400, text: 'No encontramos el servidor de la URL del webhook. Revisá el nombre del dominio.' },
  // 400 problems of pipelines and cases (used in zod refinements)
  pipeline_needs_open_stage: { status: 400, text: 'Agregá al menos una etapa de tipo open: ahí entran los casos nuevos.' },
  template_language_invalid: { status: 400, text: 'Usá un código de idioma como es_AR, es o en_US.' },
  currency_invalid: { status: 400, text: 'Usá un código de moneda de 3 letras, por ejemplo ARS o USD.' },
  // Automations: flows (problems of a flow when it is saved, automations.md "Triggers" and "Steps")
  flow_trigger_type: {
    status: 400,
    text: (p) => `No existe ese tipo de disparador. Usá uno de: ${p.types}.`,
  },
  flow_keyword_blank: {
    status: 400,
    text: 'Esta palabra clave queda vacía sin signos ni espacios, así que nunca coincidiría. Escribí al menos una letra o un número.',
  },
  flow_step_type: { status: 400, text: (p) => `No existe ese tipo de paso. Usá uno de: ${p.types}.` },
  flow_type_missing: { status: 400, text: (p) => `Falta type. Usá uno de: ${p.types}.` },
  flow_step_id_blank: { status: 400, text: 'El id del paso no puede quedar vacío ni ser solo espacios.' },
  flow_step_id_duplicate: {
    status: 400,
    text: (p) => `Otro paso ya usa el id "${p.id}". Cada paso necesita un id distinto.`,
  },
  flow_step_unknown: {
    status: 400,
    text: (p) => `No hay ningún paso con id "${p.id}". Revisá cómo se escribe o agregá ese paso.`,
  },
  flow_send_text_or_template: {
    status: 400,
    text: 'Un paso send lleva text (texto libre) o template (plantilla aprobada): uno de los dos, no ambos.',
  },
  flow_variable_name: {
    status: 400,
    text: 'El nombre de variable empieza con una letra o _ y sigue con letras sin acento, números o _ (hasta 64 caracteres).',
  },
  flow_condition_value: { status: 400, text: 'Esta comparación necesita value. Solo exists funciona sin value.' },
  flow_regex_too_long: {
    status: 400,
    text: (p) => `La expresión regular tiene más de ${p.max} caracteres. Acortala.`,
  },
  flow_regex_invalid: {
    status: 400,
    text: 'La expresión regular no es válida. Revisá paréntesis, corchetes y barras invertidas.',
  },
  flow_regex_unsupported: {
    status: 400,
    text: 'La expresión regular usa algo que no aceptamos: referencias hacia atrás como \\1, lookahead (?=…) o (?!…), lookbehind (?<=…) o (?<!…), o repeticiones de más de 1000. Reescribila sin eso.',
  },
  flow_http_url: {
    status: 400,
    text: 'La URL tiene que empezar con http:// o https://, o con una variable insertada tal cual {{{…}}} que la contenga.',
  },
  flow_http_url_private: {
    status: 400,
    text: 'La URL apunta a una dirección privada o local. Usá una dirección pública de internet.',
  },
  flow_http_url_raw_host: {
    status: 400,
    text: 'Una variable insertada tal cual {{{…}}} no puede ir en el servidor de la URL: usá {{…}} o ponela al principio con toda la dirección.',
  },
  flow_http_header_name: {
    status: 400,
    text: 'El nombre del encabezado lleva letras sin acento, números y signos como - _ . (sin espacios ni dos puntos). Revisalo.',
  },
  flow_http_headers_many: { status: 400, text: (p) => `Mandá como máximo ${p.max} encabezados.` },
  flow_template_not_found: {
    status: 400,
    text: 'No encontramos esa plantilla en la cuenta. Revisá el id en GET /templates.',
  },
  flow_stage_not_found: { status: 400, text: 'No encontramos esa etapa en los embudos de la cuenta. Revisá el id.' },
  agent_ref_not_found: { status: 400, text: 'No encontramos ese agente de IA en tu cuenta. Revisá el id.' },
  flow_cycle: {
    status: 400,
    text: (p) =>
      `${p.count === 1 ? `El paso ${p.ids} vuelve a sí mismo` : `Los pasos ${p.ids} forman un ciclo`} sin ask ni wait: la automatización se repetiría sin parar. Agregá un ask o un wait al ciclo, o cortalo con otro next.`,
  },
  // The MCP server (src/mcp): its HTTP answers and the refusals of its tools (mcp.md)
  mcp_not_acceptable: {
    status: 406,
    text: 'El cliente MCP tiene que aceptar application/json y text/event-stream: revisá el encabezado Accept (los clientes MCP lo mandan solos).',
  },
  mcp_invalid_request: {
    status: 400,
    text: 'Eso no es un pedido JSON-RPC 2.0: mandá un objeto con "jsonrpc": "2.0" y "method", o una lista no vacía de ellos.',
  },
  mcp_api_key: {
    status: 401,
    text: 'Esa es una clave de API (etk_live_…): /mcp pide el token de una app de IA conectada (etk_app_…). Conectá la app y usá el token que se muestra al conectarla.',
  },
  mcp_unauthorized: {
    status: 401,
    text: 'Falta el token de la app de IA o no es válido. Revisá el encabezado Authorization: Bearer etk_app_… (el token se muestra una sola vez al conectar la app).',
  },
  mcp_host_refused: {
    status: 403,
    text: 'Este servidor no atiende pedidos para ese nombre (encabezado Host). Usá la dirección pública del servicio (PUBLIC_URL).',
  },
  mcp_origin_refused: {
    status: 403,
    text: 'No aceptamos pedidos desde esa página web (encabezado Origin). Conectate desde una app de IA, no desde un navegador.',
  },
  mcp_rate_limited: {
    status: 429,
    text: (p) => `Tu app de IA superó el límite de ${p.limit} llamadas a herramientas por minuto. Esperá un minuto y probá de nuevo.`,
  },
  mcp_invalid_arguments: { status: 400, text: (p) => `Revisá los argumentos: ${p.problems}` },
  database_unavailable: {
    status: 503,
    text: 'El servicio no puede llegar a su base de datos en este momento. Probá de nuevo en unos segundos.',
  },
  // Contact CSV imports (operator.md "Contact imports"): the file, then the reasons of a row that fails
  contact_import_content_type: { status: 415, text: 'Enviá el archivo como CSV en UTF-8 con Content-Type: text/csv.' },
  contact_import_too_large: {
    status: 413,
    text: (p) => `El archivo supera ${p.max} MiB. Dividilo en archivos más chicos e importalos uno por uno.`,
  },
  contact_import_not_utf8: {
    status: 400,
    text: 'El archivo no está en UTF-8. Guardalo como «CSV UTF-8» desde tu planilla y probá de nuevo.',
  },
  contact_import_nul: {
    status: 400,
    text: 'El archivo tiene el carácter nulo (\\u0000): no parece un CSV de texto. Revisá que subiste el archivo correcto.',
  },
  contact_import_empty: {
    status: 400,
    text: 'El archivo no tiene filas de contactos. Agregá una fila por contacto debajo del encabezado.',
  },
  contact_import_header: {
    status: 400,
    text: 'La primera fila tiene que ser el encabezado phone,name y después una columna por atributo. Corregí el encabezado.',
  },
  contact_import_header_key: {
    status: 400,
    text: (p) =>
      `La columna ${p.column} («${p.key}») no es un nombre de atributo válido: de 1 a 64 letras sin acento, números o _. Renombrala.`,
  },
  contact_import_header_repeated: {
    status: 400,
    text: (p) => `La columna «${p.key}» está repetida en el encabezado. Dejá una sola.`,
  },
  contact_import_malformed: {
    status: 400,
    text: (p) => `El CSV está mal formado cerca de la línea ${p.line}. Revisá las comillas de esa línea y probá de nuevo.`,
  },
  contact_import_not_found: { status: 404, text: 'No encontramos esa importación en tu cuenta. Revisá el id.' },
  contact_import_started: {
    status: 409,
    text: 'Esta importación ya se inició. Para importar otra vez, subí el archivo de nuevo.',
  },
  import_row_columns: {
    status: 400,
    text: (p) => `La fila tiene ${p.got} columnas y el encabezado ${p.want}. Revisá las comas de la fila.`,
  },
  import_row_repeated: {
    status: 400,
    text: (p) => `Este teléfono ya está en la fila ${p.row}. Dejá una sola fila por contacto.`,
  },
  import_row_raced: {
    status: 409,
    text: 'Este contacto se creó por otro camino mientras importábamos. Importá esta fila de nuevo.',
  },
  // The console's built app (src/console/static.ts)
  console_not_built: { status: 503, text: 'La consola no está compilada. Corré npm run build y reiniciá el servidor.' },
  internal: { status: 500, text: 'Ocurrió un error inesperado de nuestro lado. Probá de nuevo; si sigue, escribinos con el requestId.' },
} as const satisfies Record<string, { status: number; text: Text }>;

export type ErrorCode = keyof typeof catalogue;

/** Spanish descriptions of the channel provider's numeric codes (GET /messages/{id} `error`). */
const providerCodes: Record<number, string> = {
  131026: 'No se pudo entregar el mensaje: el número no tiene WhatsApp o no puede recibirlo.',
  131050: 'El destinatario dejó de aceptar mensajes de marketing de tu empresa.',
  131047: 'Pasaron más de 24 horas desde el último mensaje del contacto: usá una plantilla.',
  131049: 'El proveedor no entregó el mensaje de marketing para cuidar la experiencia del destinatario. Probá más adelante.',
  131030: 'El número de destino no está habilitado para recibir mensajes de esta cuenta.',
  131031: 'La cuenta de WhatsApp Business está bloqueada. Revisala en el administrador de Meta.',
  131042: 'Hay un problema con el método de pago de la cuenta de WhatsApp Business.',
  131051: 'El tipo de mensaje no es compatible.',
  131056: 'Demasiados mensajes al mismo número en poco tiempo. Esperá antes de volver a enviar.',
  132001: 'La plantilla no existe en el proveedor o no está aprobada en ese idioma.',
  132015: 'La plantilla está pausada por baja calidad.',
  132016: 'La plantilla está deshabilitada por baja calidad.',
  131000: 'El proveedor tuvo un error al procesar el mensaje. Probá de nuevo.',
};

/**
 * The `error` of a message the provider never answered for 24 h (messages/reconcile.ts, docs/cloud.md
 * "Reconciliation"): ours, `code: null`. It may have gone out: the text says so.
 */
export const sendInDoubtText =
  'El proveedor no confirmó el envío en 24 horas: puede que el mensaje no haya salido. Revisá la conversación antes de enviarlo de nuevo.';

export const providerCodeText = (code: number | null): string =>
  code === null
    ? 'El proveedor no pudo entregar el mensaje.'
    : (providerCodes[code] ?? `El proveedor no pudo entregar el mensaje (código ${code}).`);

/**
 * Reasons the channel provider refused or failed a send (ProviderError.reason): shown inside the
 * provider_* texts above, so they start in lower case and read as the end of a sentence.
 */
const providerReasons = {
  unexpected: 'el proveedor no respondió como esperábamos',
  cloud_not_connected:
    'el número no tiene completa su conexión con la API de WhatsApp Cloud (phoneNumberId y accessToken). Volvé a conectarlo con esos datos.',
  cloud_no_wamid: 'Meta no devolvió el id del mensaje',
  sandbox_rejected: 'el número de destino no acepta mensajes (número de prueba del sandbox terminado en 0002).',
  graph_timeout: 'Meta no respondió a tiempo',
  graph_unreachable: 'no pudimos conectarnos con Meta',
  graph_failed: 'falló la conexión con Meta',
  graph_window: 'pasaron más de 24 horas desde el último mensaje del contacto',
  graph_template_refused: (p) => `Meta la rechazó: ${p.text}`,
  graph_status: (p) => `Meta respondió con estado ${p.status}`,
  graph_text_code: (p) => `${p.text} (código ${p.code})`,
  secret_key_missing: (p) =>
    `no pudimos abrir la credencial guardada del número: está cifrada con la clave "${p.keyId}", que no está entre las claves con que arrancó el servidor. Agregá esa clave a SECRETS_KEYS y reiniciá, o volvé a cargar la credencial`,
  // Ours, not the provider's: the send never reached it (ThroughputBusy, channel/paced.ts).
  number_throughput: (p) =>
    `no salió: ${p.channel === 'instagram' ? 'la cuenta de Instagram' : 'el número'} ya enviaba al máximo de su nivel (${p.limit} mensajes por segundo)`,
} as const satisfies Record<string, Text>;

export type ProviderReason = keyof typeof providerReasons;

export function providerReason(code: ProviderReason, params: Record<string, string | number> = {}): string {
  const t: Text = providerReasons[code];
  return typeof t === 'function' ? t(params) : t;
}

/** Graph error codes that say "try again later": throughput, pair rate limit, Graph service trouble. */
export const graphTemporaryReasons: Readonly<Record<number, string>> = {
  1: 'Meta tuvo un error desconocido',
  2: 'el servicio de Meta no está disponible',
  4: 'la app llegó a su límite de llamadas a Meta',
  80007: 'la cuenta de WhatsApp llegó a su límite de llamadas a Meta',
  130429: 'se alcanzó el límite de envíos por segundo del número en Meta',
  131000: 'Meta tuvo un error interno',
  131016: 'el servicio de WhatsApp no está disponible',
  131056: 'se enviaron demasiados mensajes seguidos a este mismo contacto',
  133004: 'el servidor de WhatsApp no está disponible',
};

/** Graph error codes of account problems: what the operator has to fix (the API answers 502 with it). */
export const graphAccountReasons: Readonly<Record<number, string>> = {
  0: 'Meta no aceptó el token de acceso del número. Generá un token nuevo en la app de Meta y actualizalo en la conexión del número.',
  3: 'la app de Meta no tiene permiso para enviar. Dale el permiso whatsapp_business_messaging al token del número.',
  10: 'la app de Meta no tiene permiso para enviar. Dale el permiso whatsapp_business_messaging al token del número.',
  190: 'Meta rechazó el token de acceso del número (venció o fue revocado). Generá un token de sistema nuevo y actualizalo en la conexión del número.',
  368: 'Meta bloqueó temporalmente la cuenta de WhatsApp por incumplir sus políticas. Revisá los avisos en el Administrador de WhatsApp.',
  131031: 'Meta bloqueó la cuenta de WhatsApp Business. Revisá el estado de la cuenta y sus avisos en el Administrador de WhatsApp.',
  131042: 'la cuenta de WhatsApp Business tiene un problema de pago. Agregá o revisá el método de pago en el Administrador de WhatsApp.',
  131045: 'el número no está registrado en la API de WhatsApp Cloud. Registralo desde la app de Meta y probá de nuevo.',
  133010: 'el número no está registrado en la API de WhatsApp Cloud. Registralo desde la app de Meta y probá de nuevo.',
};

/**
 * Reasons an Instagram send (the social channel, socialchat) was refused or failed
 * (ProviderError.reason): like providerReasons, lower case, the end of a sentence. Instagram has no
 * templates, so nothing here tells the caller to use one.
 */
const instagramReasons = {
  timeout: 'Instagram no respondió a tiempo',
  unreachable: 'no pudimos conectarnos con Instagram',
  failed: 'falló la conexión con Instagram',
  no_mid: 'Instagram no devolvió el id del mensaje',
  status: (p) => `Instagram respondió con estado ${p.status}`,
  text_code: (p) => `Instagram lo rechazó: ${p.text} (código ${p.code})`,
  text_too_long: (p) => `el texto ocupa ${p.bytes} bytes e Instagram acepta hasta ${p.max}: acortalo`,
  window:
    'pasaron más de 24 horas desde el último mensaje del contacto en Instagram, que no deja escribirle hasta que vuelva a escribir (no hay plantillas en Instagram)',
  comment_window: 'pasaron más de 7 días desde el comentario y Instagram ya no deja responderlo en privado',
  comment_replied: 'ese comentario ya tiene su respuesta privada: Instagram permite una sola por comentario',
  comment_not_found: 'Instagram no encontró el comentario (puede que lo hayan borrado)',
  user_not_found: 'Instagram no encontró a ese usuario para esta cuenta',
  user_unavailable: 'el usuario de Instagram no puede recibir mensajes ahora (puede haber bloqueado la cuenta o desactivado su perfil)',
  token:
    'Instagram rechazó el token de acceso de la cuenta social (venció o fue revocado). Generá un token nuevo y actualizalo en la conexión de la cuenta.',
  permission:
    'el token de la cuenta social no tiene permiso para enviar mensajes de Instagram. Dale el permiso instagram_business_manage_messages y actualizalo en la conexión de la cuenta.',
  rate_limit: 'la cuenta llegó a su límite de llamadas a Instagram',
  unknown: 'Instagram tuvo un error desconocido',
  unavailable: 'el servicio de Instagram no está disponible',
  secret_key_missing: (p) =>
    `no pudimos abrir el token guardado de la cuenta social: está cifrado con la clave "${p.keyId}", que no está entre las claves con que arrancó el servidor. Agregá esa clave a SECRETS_KEYS y reiniciá, o volvé a cargar el token`,
  template:
    'Instagram no tiene plantillas: en el canal social solo se envía texto, dentro de las 24 horas desde el último mensaje del contacto',
} as const satisfies Record<string, Text>;

export type InstagramReason = keyof typeof instagramReasons;

export function instagramReason(code: InstagramReason, params: Record<string, string | number> = {}): string {
  const t: Text = instagramReasons[code];
  return typeof t === 'function' ? t(params) : t;
}

/**
 * Why an execution failed (its `error` and the `automation.failed` event). A refused send uses
 * the refusal's own text instead.
 */
export const executionErrors = {
  stepsQuota: (limit: number | string) =>
    `Se agotaron los pasos de automatización del mes (${limit}). Mejorá el plan o esperá al día 1 para que sigan.`,
  httpQuota: (limit: number | string) =>
    `Se agotaron los pedidos HTTP de automatización del mes (${limit}). Mejorá el plan o esperá al día 1.`,
  interrupted: (step: string) =>
    `El paso "${step}" quedó interrumpido: el servicio se reinició mientras lo hacía y no lo repetimos para no enviar dos veces.`,
  noAnswer: 'El contacto no respondió a tiempo y el paso no tiene timeoutNext.',
  noOption: 'El contacto no eligió ninguna de las opciones después de preguntarle tres veces.',
  http: (step: string, reason: string) => `El pedido HTTP del paso "${step}" falló (${reason}) y el paso no tiene onError.`,
  stepMissing: (step: string) => `La automatización cambió y el paso "${step}" ya no existe.`,
  agentGone: 'El agente de IA de este paso ya no existe: elegí otro agente en la automatización o sacá el paso.',
  agentPaused: 'El agente de IA de este paso está en pausa: activalo para que tome las conversaciones.',
  agentBusy: 'Otro agente de IA ya atiende esta conversación.',
  unexpected: 'Un error inesperado detuvo la ejecución. Revisá el registro de pasos y probá de nuevo.',
  ourFailure:
    'La ejecución se detuvo por un error de nuestro lado que se repitió en cada intento. Quien opera el servicio puede reintentarla.',
};

/** Why the review of an agent's stretch failed (the review's `error`; no event is emitted). */
export const reviewErrors = {
  modelFailed:
    'El modelo de lenguaje no respondió después de tres intentos, así que la conversación no se revisó. Revisá que el servidor del modelo (LLM_BASE_URL) funcione y volvé a correr la revisión.',
  modelMissing:
    'No hay un modelo de lenguaje configurado en este servidor, así que la conversación no se revisó. Configurá LLM_BASE_URL, reiniciá el servicio y volvé a correr la revisión.',
};

/** An agent's stretch (docs/agents.md "Stretches"): handoff reasons, notes and the idle end. */
export const agentTexts = {
  phraseHandoff: 'El cliente pidió hablar con una persona',
  maxTurns: (n: number) => `El agente llegó a su máximo de ${n} turnos en esta conversación`,
  modelFailed: 'El agente no pudo responder',
  ourFailure: 'El agente no pudo seguir por un error de nuestro lado que se repitió en cada intento',
  teamStepped: 'Intervino el equipo',
  agentOff: 'El agente quedó en pausa o se borró',
};

/** Why an http step's request did not succeed (inside executionErrors.http and the step log). */
export const httpStepReasons = {
  status: (code: number) => `respondió ${code}`,
  timeout: (ms: number) => `no respondió en ${ms} ms`,
  refused: 'la dirección es privada o local y no está permitida',
  url: 'la URL no es válida',
  origin: 'una variable insertada tal cual ({{{…}}}) cambió el esquema o el servidor de la URL',
  headerLineBreak: (name: string) => `el valor del encabezado ${name} tiene un salto de línea y no se mandó`,
  headerKeyMissing: (name: string, keyId: string) =>
    `el valor del encabezado ${name} está cifrado con la clave "${keyId}", que no está entre las claves con que arrancó el servidor: agregá esa clave a SECRETS_KEYS y reiniciá, o volvé a escribir el encabezado`,
  network: 'no se pudo conectar',
  loop: (hop: number | string, max: number) =>
    `la automatización se llamó a sí misma en bucle: se rechazó el salto ${hop} (se permiten ${max} saltos); revisá que este paso no vuelva a iniciar la automatización`,
};

/** The keyring of sealed secrets (docs/privacy.md "Secrets sealed at rest"). */
export const secretTexts = {
  // The keyring's problems name the entry by its position, never its text (it may be a key). The
  // caller puts where it was read in front: "SECRETS_KEYS: …" or the key file's path.
  empty: 'no tiene ninguna clave. Generá una con `openssl rand -base64 32` y escribila como k1:<la clave>.',
  noId: (n: number) => `la clave número ${n} no tiene id: escribila como id:clave (por ejemplo k1:<la clave>).`,
  badId: (n: number) => `el id de la clave número ${n} solo puede tener letras, números, - y _ (hasta 32 caracteres).`,
  notBase64: (n: number) =>
    `la clave número ${n} no está en base64. Generá una con \`openssl rand -base64 32\` y escribila después del id y los dos puntos.`,
  wrongLength: (n: number, bytes: number) =>
    `la clave número ${n} tiene ${bytes} bytes y tiene que tener 32. Generá una con \`openssl rand -base64 32\`.`,
  duplicate: (id: string) => `repite el id de clave "${id}": cada clave necesita su propio id.`,
  requiredInProduction:
    'Falta SECRETS_KEYS: con NODE_ENV=production el servidor no arranca sin la clave que cifra las credenciales guardadas. Generá una con `openssl rand -base64 32` y configurala como SECRETS_KEYS=k1:<la clave> (guardala aparte de las copias de la base: sin ella no se pueden abrir).',
  requiredInProductionWithFile: (file: string) =>
    `Falta SECRETS_KEYS: con NODE_ENV=production el servidor no arranca sin ella. Las credenciales de esta base ya están cifradas con la clave de ${file}: configurá SECRETS_KEYS con el contenido de ese archivo (la línea local:…) y guardala aparte de las copias de la base. No generes una clave nueva: con otra no se pueden abrir.`,
  keyMissing: (keyId: string) =>
    `La credencial guardada está cifrada con la clave "${keyId}", que no está entre las claves con que arrancó el servidor. Agregá esa clave a SECRETS_KEYS y reiniciá, o volvé a cargar la credencial.`,
};

/** Graph error codes of template refusals (the subject, "la plantilla", is the caller's text). */
export const graphTemplateReasons: Readonly<Record<number, string>> = {
  132000: 'la cantidad de variables no coincide con la plantilla aprobada en Meta: enviá todas las variables',
  132001: 'no existe en Meta con ese nombre e idioma: sincronizá las plantillas y revisá el idioma',
  132005: 'el texto con las variables supera el largo permitido: acortá los valores',
  132007: 'el contenido no cumple las políticas de Meta',
  132012: 'el formato de las variables no coincide con la plantilla aprobada en Meta',
  132015: 'está pausada en Meta por baja calidad: revisala en el Administrador de WhatsApp o usá otra',
  132016: 'está deshabilitada en Meta: usá otra plantilla',
};

export function textFor(code: ErrorCode, params: Record<string, string | number> = {}): string {
  const t: Text = catalogue[code].text;
  return typeof t === 'function' ? t(params) : t;
}

/** Names of JSON types in the validation messages below. */
const typeNames: Record<string, string> = {
  string: 'un texto',
  number: 'un número',
  int: 'un número entero',
  boolean: 'verdadero o falso',
  object: 'un objeto',
  array: 'una lista',
  null: 'null',
  undefined: 'nada',
};

/** The Spanish `message` of one zod issue (a problem of a validation 400); undefined: zod's own. */
export function validationMessage(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined) return 'Falta este campo obligatorio.';
      return `Tiene que ser ${typeNames[iss.expected] ?? iss.expected}.`;
    case 'too_small':
      if (iss.origin === 'string') return `Tiene que tener al menos ${iss.minimum} caracteres.`;
      if (iss.origin === 'array') return `Tiene que tener al menos ${iss.minimum} elementos.`;
      return `Tiene que ser mayor o igual a ${iss.minimum}.`;
    case 'too_big':
      if (iss.origin === 'string') return `Tiene que tener como máximo ${iss.maximum} caracteres.`;
      if (iss.origin === 'array') return `Tiene que tener como máximo ${iss.maximum} elementos.`;
      return `Tiene que ser menor o igual a ${iss.maximum}.`;
    case 'invalid_format':
      if (iss.format === 'uuid' || iss.format === 'guid') return 'Tiene que ser un UUID.';
      if (iss.format === 'url') return 'Tiene que ser una URL http o https.';
      if (iss.format === 'datetime') return 'Tiene que ser una fecha ISO 8601 (por ejemplo 2026-11-22T12:00:00.000Z).';
      return 'El formato no es válido.';
    case 'invalid_value':
      return `Tiene que ser uno de: ${iss.values.map((v) => String(v)).join(', ')}.`;
    case 'unrecognized_keys':
      return `Campos desconocidos: ${iss.keys.join(', ')}. Sacalos del pedido.`;
    case 'invalid_key':
      return 'Clave no válida.';
    case 'invalid_union':
      return 'El valor no tiene una forma válida.';
    case 'not_multiple_of':
      return `Tiene que ser múltiplo de ${iss.divisor}.`;
    default:
      return undefined;
  }
}

/** Labels of the variables a WhatsApp template sync finds (GET /templates shows them). */
export const variableLabels = {
  body: (n: string) => `Variable ${n}`,
  header: (n: string) => `Encabezado ${n}`,
  button: (n: number, text?: string) => `Botón ${n}${text ? ` (${text})` : ''}`,
};

/**
 * The authorization server's error page (oauth/provider.ts renderError): what a person reads when
 * an app's connection request cannot go back to the app. By OAuth error code; the code and the
 * library's own English description are shown below it as the technical detail for support.
 */
export const oauthPageTexts: Record<string, string> = {
  invalid_client:
    'No reconocemos la app que querías conectar: su registro no existe, venció o no se pudo leer. Volvé a la app y agregá el conector de nuevo; si sigue pasando, avisale a quien hizo la app.',
  invalid_client_metadata: 'No pudimos leer los datos de la app que querías conectar. Avisale a quien hizo la app.',
  invalid_redirect_uri: 'La app pidió volver a una dirección que no registró. Volvé a la app y agregá el conector de nuevo.',
  invalid_request: 'El pedido de conexión de la app está incompleto o mal armado. Volvé a la app y probá de nuevo.',
  invalid_scope: 'La app pidió permisos que Chasqui no da. Avisale a quien hizo la app.',
  invalid_target: 'La app pidió conectarse a un servidor que no es este. Revisá la dirección del conector: tiene que terminar en /mcp.',
  access_denied: 'La conexión fue cancelada. Si fue sin querer, volvé a la app y probá de nuevo.',
  unauthorized_client: 'Esta app no puede conectarse de esta forma. Avisale a quien hizo la app.',
  unsupported_response_type: 'Esta app pide conectarse de una forma que Chasqui no admite. Avisale a quien hizo la app.',
  server_error: 'Algo falló de nuestro lado. Probá de nuevo en unos minutos.',
  temporarily_unavailable: 'El servicio está ocupado. Probá de nuevo en unos minutos.',
};
/** The page's text for an error code we have no sentence for. */
export const oauthPageFallback = 'No pudimos completar la conexión. Volvé a la app que querías conectar y probá de nuevo.';
