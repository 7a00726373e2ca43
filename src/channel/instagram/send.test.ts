// The Instagram send module against the fake Instagram Graph API (test/fakes/instagram.ts):
// social.md "Outbound" — `POST {INSTAGRAM_API_URL}/{igUserId}/messages` `{recipient: {id},
// message: {text}}` with the access token; a comment's private reply uses `recipient: {comment_id}`.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeInstagram, igErrors, signInstagramWebhook, startFakeInstagram } from '../../../test/fakes/instagram.js';
import { instagramReason } from '../../http/messages.es-AR.js';
import { verifySignature } from '../cloud/signature.js';
import { ProviderError } from '../types.js';
import { instagramTemplateReason } from './errors.js';
import { closeInstagramSend, type InstagramSendOptions, sendInstagram } from './send.js';

const IG_USER = '17841400000000001';
const TOKEN = 'IGAA-test-token';
let ig: FakeInstagram;
let opts: InstagramSendOptions;

beforeAll(async () => {
  ig = await startFakeInstagram();
  opts = { baseUrl: ig.url, igUserId: IG_USER, accessToken: TOKEN, timeoutMs: 2_000 };
});
afterAll(async () => {
  await closeInstagramSend();
  await ig.close();
});
beforeEach(() => {
  ig.reset();
  ig.tokens.clear();
  ig.tokens.set(IG_USER, TOKEN);
});

/** The ProviderError a send throws (fails the test when it resolves or throws something else). */
async function refusal(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe('sendInstagram: the request Instagram gets (social.md "Outbound")', () => {
  it('a direct message is POST {INSTAGRAM_API_URL}/{igUserId}/messages {recipient: {id}, message: {text}} with the access token as a bearer', async () => {
    const sent = await sendInstagram(opts, { userId: 'IGSID-1' }, 'Hola, ¿en qué te ayudo?');
    const [call] = ig.sends();
    expect(ig.sends()).toHaveLength(1);
    expect(call!.method).toBe('POST');
    expect(call!.path).toBe(`/v22.0/${IG_USER}/messages`);
    expect(call!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.query).toEqual({});
    expect(call!.body).toEqual({ recipient: { id: 'IGSID-1' }, message: { text: 'Hola, ¿en qué te ayudo?' } });
    expect(sent).toEqual({ mid: ig.mids[0] });
  });

  it('"that flow\'s first send is a private reply to the comment (Meta\'s private-reply form, recipient: {comment_id})"', async () => {
    const sent = await sendInstagram(opts, { commentId: '18000000000000042' }, 'Te escribimos por privado');
    const [call] = ig.sends();
    expect(call!.path).toBe(`/v22.0/${IG_USER}/messages`);
    expect(call!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(call!.body).toEqual({ recipient: { comment_id: '18000000000000042' }, message: { text: 'Te escribimos por privado' } });
    expect(sent.mid).toBe(ig.mids[0]);
  });

  it("the answer's message_id is the mid (the id Instagram's webhooks use), one per send", async () => {
    const a = await sendInstagram(opts, { userId: 'IGSID-1' }, 'uno');
    const b = await sendInstagram(opts, { userId: 'IGSID-1' }, 'dos');
    expect([a.mid, b.mid]).toEqual(ig.mids);
    expect(a.mid).not.toBe(b.mid);
  });

  it('a base URL with a trailing slash still reaches /{igUserId}/messages once', async () => {
    await sendInstagram({ ...opts, baseUrl: `${ig.url}/` }, { userId: 'IGSID-1' }, 'hola');
    expect(ig.sends()[0]!.path).toBe(`/v22.0/${IG_USER}/messages`);
  });

  it('a 2xx without message_id is a temporary failure (the message may have left: never guessed)', async () => {
    ig.queue({ status: 200, raw: '{"recipient_id":"IGSID-1"}' });
    const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'hola'));
    expect(e.kind).toBe('temporary');
    expect(e.reason).toBe('Instagram no devolvió el id del mensaje');
  });

  it("a text over Instagram's 1000 bytes is refused before any request, with the size in the reason", async () => {
    const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'ñ'.repeat(501)));
    expect(ig.sends()).toHaveLength(0);
    expect(e.kind).toBe('rejected');
    expect(e.reason).toBe('el texto ocupa 1002 bytes e Instagram acepta hasta 1000: acortalo');
  });
});

describe("sendInstagram: Meta's errors become ProviderErrors with the catalogue's Spanish reason", () => {
  const cases: { name: string; error: (typeof igErrors)[keyof typeof igErrors]; kind: ProviderError['kind']; reason: string }[] = [
    {
      name: '"Instagram\'s 24-hour window applies the same way": code 10 / 2534022 is the window (409 kind)',
      error: igErrors.window,
      kind: 'window',
      reason:
        'pasaron más de 24 horas desde el último mensaje del contacto en Instagram, que no deja escribirle hasta que vuelva a escribir (no hay plantillas en Instagram)',
    },
    {
      name: "code 10 / 2018278 (Messenger's form of the window) is the window too",
      error: igErrors.windowMessenger,
      kind: 'window',
      reason:
        'pasaron más de 24 horas desde el último mensaje del contacto en Instagram, que no deja escribirle hasta que vuelva a escribir (no hay plantillas en Instagram)',
    },
    {
      name: 'code 100 / 2534014: the user is not found for this account',
      error: igErrors.userNotFound,
      kind: 'rejected',
      reason: 'Instagram no encontró a ese usuario para esta cuenta',
    },
    {
      name: 'code 551: the user cannot be messaged now',
      error: igErrors.userUnavailable,
      kind: 'rejected',
      reason: 'el usuario de Instagram no puede recibir mensajes ahora (puede haber bloqueado la cuenta o desactivado su perfil)',
    },
    {
      name: 'code 190 (expired token): the operator renews the token',
      error: igErrors.tokenExpired,
      kind: 'auth',
      reason:
        'Instagram rechazó el token de acceso de la cuenta social (venció o fue revocado). Generá un token nuevo y actualizalo en la conexión de la cuenta.',
    },
    {
      name: 'code 10 without the window subcode: the token lacks the messaging permission',
      error: igErrors.permission,
      kind: 'auth',
      reason:
        'el token de la cuenta social no tiene permiso para enviar mensajes de Instagram. Dale el permiso instagram_business_manage_messages y actualizalo en la conexión de la cuenta.',
    },
    ...(['appRateLimit', 'userRateLimit', 'pageRateLimit', 'apiRateLimit'] as const).map((k) => ({
      name: `code ${igErrors[k].code}: a rate limit, temporary`,
      error: igErrors[k],
      kind: 'temporary' as const,
      reason: 'la cuenta llegó a su límite de llamadas a Instagram',
    })),
    {
      name: 'code 1: an unknown Meta error, temporary',
      error: igErrors.unknown,
      kind: 'temporary',
      reason: 'Instagram tuvo un error desconocido',
    },
    {
      name: 'code 2: Instagram unavailable, temporary',
      error: igErrors.serviceDown,
      kind: 'temporary',
      reason: 'el servicio de Instagram no está disponible',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      ig.queue({ error: c.error });
      const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'hola'));
      expect({ kind: e.kind, reason: e.reason, code: e.code }).toEqual({ kind: c.kind, reason: c.reason, code: c.error.code });
    });
  }

  it('a token Instagram does not know for the account is an auth refusal (190, OAuthException)', async () => {
    const e = await refusal(sendInstagram({ ...opts, accessToken: 'otro-token' }, { userId: 'IGSID-1' }, 'hola'));
    expect(ig.sends()[0]!.headers.authorization).toBe('Bearer otro-token');
    expect(e.kind).toBe('auth');
    expect(e.code).toBe(190);
    expect(e.reason).toBe(instagramReason('token'));
  });

  it('"a private reply is allowed once per comment": the second reply to the same comment is refused', async () => {
    await sendInstagram(opts, { commentId: 'C-1' }, 'primera');
    const e = await refusal(sendInstagram(opts, { commentId: 'C-1' }, 'segunda'));
    expect(ig.sends()).toHaveLength(2);
    expect(e.kind).toBe('rejected');
    expect(e.code).toBe(10900);
    expect(e.reason).toBe('ese comentario ya tiene su respuesta privada: Instagram permite una sola por comentario');
  });

  it('the window error on a private reply says the comment is past its 7 days', async () => {
    ig.queue({ error: igErrors.window });
    const e = await refusal(sendInstagram(opts, { commentId: 'C-2' }, 'hola'));
    expect(e.kind).toBe('window');
    expect(e.reason).toBe('pasaron más de 7 días desde el comentario y Instagram ya no deja responderlo en privado');
  });

  it('"not found" on a private reply names the comment, not the user', async () => {
    ig.queue({ error: igErrors.userNotFound });
    const e = await refusal(sendInstagram(opts, { commentId: 'C-3' }, 'hola'));
    expect(e.reason).toBe('Instagram no encontró el comentario (puede que lo hayan borrado)');
  });

  it("an unknown code keeps Instagram's own words and its code", async () => {
    ig.queue({ error: { status: 400, code: 100, message: '(#100) Param message[text] must be a valid string' } });
    const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'hola'));
    expect(e.kind).toBe('rejected');
    expect(e.reason).toBe('Instagram lo rechazó: (#100) Param message[text] must be a valid string (código 100)');
  });

  it("a 5xx without Meta's error body is temporary, with the status in the reason", async () => {
    ig.queue({ status: 502, raw: '<html>Bad Gateway</html>' });
    const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'hola'));
    expect(e.kind).toBe('temporary');
    expect(e.code).toBeNull();
    expect(e.reason).toBe('Instagram respondió con estado 502');
  });

  it('no answer within timeoutMs is temporary ("Instagram no respondió a tiempo"), never retried', async () => {
    ig.queue({ delayMs: 1_000 });
    const started = Date.now();
    const e = await refusal(sendInstagram({ ...opts, timeoutMs: 150 }, { userId: 'IGSID-1' }, 'hola'));
    expect(Date.now() - started).toBeLessThan(900);
    expect(e.kind).toBe('temporary');
    expect(e.reason).toBe('Instagram no respondió a tiempo');
    expect(ig.sends()).toHaveLength(1);
  });

  it('a connection cut before the answer is temporary ("no pudimos conectarnos con Instagram")', async () => {
    ig.queue({ drop: true });
    const e = await refusal(sendInstagram(opts, { userId: 'IGSID-1' }, 'hola'));
    expect(e.kind).toBe('temporary');
    expect(e.reason).toBe('no pudimos conectarnos con Instagram');
  });
});

describe("the social channel has no templates; webhooks are signed like WhatsApp's", () => {
  it('"templates do not exist there (a template send on socialchat fails the step with a clear Spanish reason)"', () => {
    expect(instagramTemplateReason()).toBe(
      'Instagram no tiene plantillas: en el canal social solo se envía texto, dentro de las 24 horas desde el último mensaje del contacto',
    );
  });

  it('signInstagramWebhook gives the X-Hub-Signature-256 the receiver checks (HMAC-SHA256 of the raw body with the app secret)', () => {
    const raw = JSON.stringify({ object: 'instagram', entry: [] });
    const header = signInstagramWebhook('app-secret', raw);
    expect(header).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifySignature(Buffer.from(raw), header, 'app-secret')).toBe(true);
    expect(verifySignature(Buffer.from(raw), header, 'other-secret')).toBe(false);
  });
});
