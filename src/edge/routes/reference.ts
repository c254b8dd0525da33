// The API's machine-readable contract and its reference page, both served by the edge itself:
// GET /openapi.json (the OpenAPI 3.1 document built from the code, src/edge/openapi/document.ts)
// and GET /docs, rendered by Swagger UI from the `swagger-ui-dist` package, whose files are served
// from node_modules by this process (no CDN: the page works offline and on a locked-down host).
// The page runs no inline script (its start-up script is a file of ours under /docs/), so it works
// under the Content-Security-Policy it is served with. Unauthenticated, like /public/corridors, and
// limited per client address by the same guard.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { errorResponse } from '../errors.ts';
import type { HttpResponse, Route } from '../http-types.ts';
import { openApiText } from '../openapi/document.ts';
import type { EdgeEnv } from './common.ts';

/** The Swagger UI files the page needs, with their content types; nothing else is served. */
const assetTypes: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** Swagger UI draws with inline style attributes and data: images; scripts only from here. */
const pageSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Payouts and onramp API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
`;

/** Starts Swagger UI on the document this service serves; "Try it out" calls this same origin. */
const startScript = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  defaultModelsExpandDepth: 0,
  validatorUrl: null,
});
`;

const cached = (contentType: string, body: string | Uint8Array, extra: Readonly<Record<string, string>> = {}): HttpResponse => ({
  status: 200,
  headers: { 'content-type': contentType, 'cache-control': 'public, max-age=3600', ...extra },
  body,
});

/** The directory of the installed swagger-ui-dist, or null when it is not installed. */
function swaggerUiDirectory(): string | null {
  try {
    return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  } catch {
    return null;
  }
}

export function referenceRoutes(env: EdgeEnv): Route[] {
  const guard = env.publicGuard === undefined ? {} : { guard: env.publicGuard };
  // Built once: the document only changes with the code.
  const documentText = openApiText();
  const assets = new Map<string, Uint8Array>();
  const directory = swaggerUiDirectory();
  const asset = (name: string): HttpResponse => {
    const type = assetTypes[name];
    if (type === undefined) return errorResponse('not_found', 'No such file');
    if (directory === null) return errorResponse('service_unavailable', 'The reference page is not installed (swagger-ui-dist)');
    let bytes = assets.get(name);
    if (bytes === undefined) {
      bytes = readFileSync(join(directory, name));
      assets.set(name, bytes);
    }
    return cached(type, bytes);
  };
  return [
    { method: 'GET', pattern: '/openapi.json', ...guard, bodyBytesMax: 0, handler: () => Promise.resolve(cached('application/json; charset=utf-8', documentText)) },
    {
      method: 'GET', pattern: '/docs', ...guard, bodyBytesMax: 0,
      handler: () => Promise.resolve(cached('text/html; charset=utf-8', pageHtml, { 'content-security-policy': pageSecurityPolicy })),
    },
    {
      method: 'GET', pattern: '/docs/:asset', ...guard, bodyBytesMax: 0,
      handler: (request) => Promise.resolve(request.params['asset'] === 'start.js' ? cached('text/javascript; charset=utf-8', startScript) : asset(request.params['asset'] ?? '')),
    },
  ];
}
