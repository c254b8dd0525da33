// A partner portal client for tests, speaking HTTP as the portal's own pages do: sign in (the
// session cookie and the CSRF token it hands back), then JSON calls with both.
export interface PortalSession {
  readonly cookie: string;
  readonly csrfToken: string;
  readonly setCookie: string;
}

export interface PortalAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: Record<string, unknown>;
}

async function answer(response: Response): Promise<PortalAnswer> {
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, text, json };
}

export async function portalLogin(baseUrl: string, email: string, password: string, headers: Record<string, string> = { 'x-portal-request': '1' }): Promise<PortalAnswer> {
  return answer(
    await fetch(`${baseUrl}/portal/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ email, password }),
      signal: AbortSignal.timeout(30_000),
    }),
  );
}

export async function portalSignIn(baseUrl: string, email: string, password: string): Promise<PortalSession> {
  const signedIn = await portalLogin(baseUrl, email, password);
  if (signedIn.status !== 200) throw new Error(`sign-in of ${email}: HTTP ${signedIn.status} ${signedIn.text}`);
  const setCookie = signedIn.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0] ?? '', csrfToken: String(signedIn.json['csrfToken']), setCookie };
}

export async function portalCall(
  baseUrl: string,
  session: PortalSession | null,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly csrf?: string | null } = {},
): Promise<PortalAnswer> {
  const headers: Record<string, string> = {};
  if (session !== null) headers['cookie'] = session.cookie;
  const csrf = options.csrf === undefined ? session?.csrfToken : options.csrf;
  if (method !== 'GET' && csrf !== undefined && csrf !== null) headers['x-csrf-token'] = csrf;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return answer(
    await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(30_000),
    }),
  );
}
