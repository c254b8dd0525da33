// The portal's pages and assets, served by the edge itself: nothing is fetched from anywhere else
// at run time (no CDN), and the Content-Security-Policy says so to the browser — scripts, styles
// and requests from this origin only, no inline script or style, no framing. The pages are one
// HTML shell (web/portal/app.html) that portal.js fills in from the JSON API; see docs/portal.md.
//
// Files are read once, at start, from web/portal/ (resolved from this module, so the same from
// src/ and from the production build's dist/). Each answer carries a strong ETag; the shell is
// revalidated at every load (no-cache), the script and the stylesheet may be reused for 5 minutes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { HttpResponse, RequestContext, Route } from '../edge/http-types.ts';

export const contentSecurityPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const securityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': contentSecurityPolicy,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly cacheControl: string;
  readonly etag: string;
}

const assetsDirectory = new URL('../../web/portal/', import.meta.url);

function loadAsset(name: string, contentType: string, cacheControl: string): Asset {
  const body = readFileSync(new URL(name, assetsDirectory));
  return { body, contentType, cacheControl, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

function serve(asset: Asset, request: RequestContext): HttpResponse {
  const headers = { ...securityHeaders, 'cache-control': asset.cacheControl, etag: asset.etag };
  if (request.headers['if-none-match'] === asset.etag) return { status: 304, headers };
  return { status: 200, headers: { ...headers, 'content-type': asset.contentType }, body: asset.body };
}

/** The page paths: each answers the shell, and portal.js draws the page its path names. */
export const portalPagePaths = ['/portal', '/portal/webhooks', '/portal/deliveries', '/portal/transactions', '/portal/transactions/:id', '/portal/unmatched', '/portal/keys', '/portal/corridors'] as const;

export function pageRoutes(): Route[] {
  const shell = loadAsset('app.html', 'text/html; charset=utf-8', 'no-cache');
  const script = loadAsset('portal.js', 'text/javascript; charset=utf-8', 'public, max-age=300');
  const styles = loadAsset('portal.css', 'text/css; charset=utf-8', 'public, max-age=300');
  return [
    ...portalPagePaths.map((pattern): Route => ({ method: 'GET', pattern, handler: async (request) => serve(shell, request) })),
    { method: 'GET', pattern: '/portal/assets/portal.js', handler: async (request) => serve(script, request) },
    { method: 'GET', pattern: '/portal/assets/portal.css', handler: async (request) => serve(styles, request) },
  ];
}
