// A scripted visitor of the web panel over plain HTTP: keeps its cookies, reads the forms' CSRF tokens, and never
// follows redirects by itself, so a test sees every 303 and Set-Cookie the panel answers with.

export interface PanelResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Every Set-Cookie header of the response, as sent. */
  readonly setCookies: readonly string[];
}

export class PanelVisitor {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly cookies = new Map<string, string>();

  /** `headers` go with every request (X-Forwarded-For of the visitor, Accept-Language...). */
  constructor(baseUrl: string, headers: Record<string, string> = {}) {
    this.#baseUrl = baseUrl;
    this.#headers = headers;
  }

  async #request(path: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<PanelResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(`${this.#baseUrl}${path}`, {
      method: init.method,
      redirect: 'manual',
      headers: { ...this.#headers, ...(cookie ? { cookie } : {}), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    const setCookies = response.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair = ''] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      // An expired or emptied cookie is gone, as a browser would have it.
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: response.status, headers: response.headers, text: await response.text(), setCookies };
  }

  get(path: string, headers: Record<string, string> = {}): Promise<PanelResponse> {
    return this.#request(path, { method: 'GET', headers });
  }

  /** `form` as fields, or as pairs when a field repeats (checkboxes). */
  post(path: string, form: Record<string, string> | [string, string][], headers: Record<string, string> = {}): Promise<PanelResponse> {
    return this.#request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** Opens the sign-in form (for its token and cookie) and posts the credentials. */
  async signIn(email: string, password: string, headers: Record<string, string> = {}): Promise<PanelResponse> {
    const form = await this.get('/panel/sign-in', headers);
    return this.post('/panel/sign-in', { _csrf: csrfTokenOf(form.text), email, password, next: '/panel/' }, headers);
  }
}

/** The value of the first hidden `_csrf` field of a page. */
export function csrfTokenOf(html: string): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error('no CSRF token on this page');
  return token;
}
