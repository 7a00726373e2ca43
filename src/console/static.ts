// The console's built app (console/ → dist/console-app by `npm run build`, docs/console-app.md):
// /console/assets/* with hashed names, cached for a year; every other /console/… page (client-side
// routes: /console/login, /console/invite/<token>, /console/conversaciones…) answers index.html,
// never cached; /console/api/… is the console's API and never the page. Only 'self' may be loaded.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';

/** src/console/ and dist/console/ both sit two levels under the package root. */
const APP_DIR = fileURLToPath(new URL('../../dist/console-app/', import.meta.url));

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export async function consoleApp(app: FastifyInstance): Promise<void> {
  await app.register(async (web) => {
    web.addHook('onSend', async (_req, reply) => {
      reply.header('Content-Security-Policy', CSP);
      reply.header('X-Content-Type-Options', 'nosniff');
      // An invite link carries its token in the path: no Referer anywhere.
      reply.header('Referrer-Policy', 'no-referrer');
    });
    await web.register(fastifyStatic, {
      root: `${APP_DIR}assets`,
      prefix: '/console/assets/',
      decorateReply: false,
      index: false,
      // Names carry the content's hash: a new build is a new name.
      cacheControl: true,
      maxAge: '365d',
      immutable: true,
      schemaHide: true,
    });
    const page = async (req: FastifyRequest, reply: FastifyReply) => {
      if (/^\/console\/api(\/|$|\?)/.test(req.url)) throw new ApiError('route_not_found');
      // Read on each request (≈0.5 KB): a rebuild is picked up by the next page load.
      const html = await readFile(`${APP_DIR}index.html`, 'utf8').catch(() => null);
      if (html === null) throw new ApiError('console_not_built');
      return reply.header('Cache-Control', 'no-cache').type('text/html; charset=utf-8').send(html);
    };
    web.get('/console', { schema: { hide: true } }, page);
    web.get('/console/*', { schema: { hide: true } }, page);
  });
}
