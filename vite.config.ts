// The console's build (docs/console-app.md): console/ → dist/console-app/, served at /console by
// src/console/static.ts. Hashed file names under assets/ (cached for a year); index.html is not cached.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('./console', import.meta.url));
export const consoleOutDir = fileURLToPath(new URL('./dist/console-app', import.meta.url));

/**
 * The output folder is not emptied before a build (a server or a test may be reading it while
 * `npm start` rebuilds the same sources: same names, same bytes); assets of older builds are
 * removed after the new ones are written.
 */
function pruneOldAssets(): Plugin {
  const written = new Set<string>();
  return {
    name: 'chasqui-prune-old-assets',
    apply: 'build',
    writeBundle(_options, bundle) {
      for (const name of Object.keys(bundle)) written.add(name);
    },
    closeBundle() {
      const dir = join(consoleOutDir, 'assets');
      for (const file of readdirSync(dir)) if (!written.has(`assets/${file}`)) rmSync(join(dir, file), { force: true });
    },
  };
}

export default defineConfig({
  root,
  base: '/console/',
  plugins: [preact(), pruneOldAssets()],
  logLevel: 'warn',
  // `npx vite`: the console with hot reload, its API calls passed to `npm run dev` on :3000.
  server: {
    proxy: { '/console/api': 'http://127.0.0.1:3000', '/admin/v1': 'http://127.0.0.1:3000', '/docs': 'http://127.0.0.1:3000' },
  },
  build: {
    outDir: consoleOutDir,
    emptyOutDir: false,
    assetsDir: 'assets',
    // One small bundle; no inline scripts or data: URLs (the Content-Security-Policy allows only 'self').
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
