// Routing: exact segments and `:param` segments; the most specific matching pattern owns the path
// (static segments beat params, left to right). The app answers an unknown path 404 and a known
// path with another method 405 with `Allow` (http-app.ts). Query strings are decoded here too.
import type { HttpMethod, Route } from './http-types.ts';

type Segment = { readonly kind: 'static'; readonly value: string } | { readonly kind: 'param'; readonly name: string };

export interface PathGroup {
  /** Pattern shape with params blanked, e.g. `/transaction/:`; one group per shape. */
  readonly shape: string;
  /** The first registered pattern of this shape (what the access log names). */
  readonly pattern: string;
  readonly segments: readonly Segment[];
  readonly hasParams: boolean;
  /** '1' per static segment, '0' per param: a higher string is a more specific pattern. */
  readonly specificity: string;
  readonly routes: Map<string, Route>;
  /** Value of the `Allow` header. */
  allow: string;
}

/** Path groups by segment count: a path is only compared with the patterns of its own length. */
export type RouteTable = ReadonlyMap<number, readonly PathGroup[]>;

const paramNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
const methods: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** uWS reports methods in lower case; upper-casing a string goes through ICU, a lookup does not. */
export const upperCaseMethods: ReadonlyMap<string, string> = new Map(methods.map((method) => [method.toLowerCase(), method]));

function parsePattern(pattern: string): Segment[] {
  if (!pattern.startsWith('/')) throw new Error(`route pattern must start with '/': ${pattern}`);
  if (pattern === '/') return [];
  const names = new Set<string>();
  return pattern.slice(1).split('/').map((part): Segment => {
    if (part.startsWith(':')) {
      const name = part.slice(1);
      if (!paramNamePattern.test(name) || names.has(name)) throw new Error(`bad parameter '${part}' in ${pattern}`);
      names.add(name);
      return { kind: 'param', name };
    }
    if (part.length === 0 || part.includes('?') || part.includes('*')) throw new Error(`bad segment in ${pattern}`);
    return { kind: 'static', value: part };
  });
}

export function compileRoutes(routes: readonly Route[]): RouteTable {
  const groups = new Map<string, PathGroup>();
  for (const route of routes) {
    if (!methods.includes(route.method)) throw new Error(`unsupported method ${String(route.method)}`);
    if (route.bodyBytesMax !== undefined && (!Number.isInteger(route.bodyBytesMax) || route.bodyBytesMax < 0)) {
      throw new Error(`bodyBytesMax of ${route.method} ${route.pattern} must be a non-negative integer`);
    }
    const segments = parsePattern(route.pattern);
    const shape = '/' + segments.map((s) => (s.kind === 'static' ? s.value : ':')).join('/');
    let group = groups.get(shape);
    if (group === undefined) {
      const specificity = segments.map((s) => (s.kind === 'static' ? '1' : '0')).join('');
      const hasParams = segments.some((s) => s.kind === 'param');
      group = { shape, pattern: route.pattern, segments, hasParams, specificity, routes: new Map(), allow: '' };
      groups.set(shape, group);
    }
    if (group.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.pattern}`);
    group.routes.set(route.method, route);
  }
  const table = new Map<number, PathGroup[]>();
  for (const group of groups.values()) {
    const allowed = new Set(group.routes.keys());
    if (allowed.has('GET')) allowed.add('HEAD');
    allowed.add('OPTIONS');
    group.allow = methods.filter((method) => allowed.has(method)).join(', ');
    const sameLength = table.get(group.segments.length);
    if (sameLength === undefined) table.set(group.segments.length, [group]);
    else sameLength.push(group);
  }
  return table;
}

function matchesPath(group: PathGroup, pathSegments: readonly string[]): boolean {
  const segments = group.segments;
  for (let index = 0; index < segments.length; index += 1) {
    const segment = segments[index];
    const part = pathSegments[index] ?? '';
    if (segment === undefined || (segment.kind === 'static' ? segment.value !== part : part.length === 0)) return false;
  }
  return true;
}

export function matchGroup(table: RouteTable, pathSegments: readonly string[]): PathGroup | null {
  const candidates = table.get(pathSegments.length);
  if (candidates === undefined) return null;
  let best: PathGroup | null = null;
  for (const group of candidates) {
    if (matchesPath(group, pathSegments) && (best === null || group.specificity > best.specificity)) best = group;
  }
  return best;
}

/** Params and query of requests that have none (shared, frozen: handlers only read them). */
const noEntries: Readonly<Record<string, string>> = Object.freeze(Object.create(null) as Record<string, string>);

export function decodeParams(group: PathGroup, pathSegments: readonly string[]): Readonly<Record<string, string>> | null {
  if (!group.hasParams) return noEntries;
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [index, segment] of group.segments.entries()) {
    if (segment.kind !== 'param') continue;
    try {
      params[segment.name] = decodeURIComponent(pathSegments[index] ?? '');
    } catch {
      return null;
    }
  }
  return params;
}

type QueryParse = { readonly ok: true; readonly query: Readonly<Record<string, string>> } | { readonly ok: false; readonly reason: string };

const emptyQuery: QueryParse = { ok: true, query: noEntries };

/** The query's length was checked by the router (414): here only its parameters. */
export function parseQuery(raw: string, countMax: number): QueryParse {
  if (raw.length === 0) return emptyQuery;
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  let count = 0;
  for (const [name, value] of new URLSearchParams(raw)) {
    count += 1;
    if (count > countMax) return { ok: false, reason: 'Too many query parameters' };
    if (name in query) return { ok: false, reason: `Query parameter '${name.slice(0, 64)}' given more than once` };
    query[name] = value;
  }
  return { ok: true, query };
}

