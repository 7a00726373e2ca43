// The protected resource's metadata (RFC 9728), public: where an MCP client learns how to get a
// token for /mcp. Served at the root well-known path and at the path RFC 9728 §3.1 derives from
// the resource URL (…/oauth-protected-resource/mcp), which some clients ask first.
import type { RoutesFn } from '../http/schemas.js';
import { protectedResourceMetadata } from './apps.js';

export const mcpMetadataRoutes: RoutesFn = (app, s) => {
  for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    app.get(path, { schema: { hide: true } }, async (_req, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return protectedResourceMetadata(s);
    });
  }
};
