// The release as `npm run test:k8s` talks to it: notifyctl and requests from pods inside its network, a tenant made the
// operator's way, and traffic to the gateway's Service that records every answer it got.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { image, kubectl, runPod } from './kube.ts';

export const toolbox = image('toolbox');

export interface Tenant {
  readonly organizationId: string;
  readonly projectId: string;
  readonly apiKey: string;
}

/** One release of the chart: its name, its namespace and how a client inside it reaches its services. */
export class Release {
  /** The labels of a pod that the NetworkPolicies let reach auth-svc's and dispatch-svc's gRPC ports. */
  readonly grpcClient: Record<string, string>;
  /** The labels of a pod of the release, which its dev servers admit. */
  readonly member: Record<string, string>;
  readonly name: string;
  readonly namespace: string;
  /** The Secret holding the release's tokens: the chart's own, or the operator's `secrets.existingSecret`. */
  readonly secret: string;
  /** The CA of the servers' certificates when the release has grpcTls on. */
  readonly grpcCa?: string;

  constructor(options: { name: string; namespace: string; secret?: string; grpcCa?: string }) {
    this.name = options.name;
    this.namespace = options.namespace;
    this.secret = options.secret ?? `${options.name}-secrets`;
    this.grpcCa = options.grpcCa;
    const name = options.name;
    this.member = { 'app.kubernetes.io/instance': name };
    this.grpcClient = { ...this.member, 'notify.io/grpc-client': 'true' };
  }

  component(name: string): string {
    return `${this.name}-${name}`;
  }

  host(name: string): string {
    return `${this.component(name)}.${this.namespace}.svc.cluster.local`;
  }

  async #secretValue(secret: string, key: string): Promise<string> {
    const { stdout } = await kubectl(['-n', this.namespace, 'get', 'secret', secret, '-o', `jsonpath={.data.${key}}`]);
    return Buffer.from(stdout, 'base64').toString();
  }

  /**
   * notifyctl in the toolbox image, inside the release's network, as NOTES.txt tells an operator to run it; `files`
   * are written to /tmp first (from the pod's environment) for the options that read one. Returns its --json output.
   */
  async notifyctl(args: readonly string[], files: Record<string, string> = {}): Promise<Record<string, unknown>> {
    const env: Record<string, string> = {
      AUTH_SVC_ADDR: `dns:///${this.host('auth-svc')}:50051`,
      DISPATCH_SVC_ADDR: `dns:///${this.host('dispatch-svc')}:50052`,
      ADMIN_TOKEN: await this.#secretValue(this.secret, 'ADMIN_TOKEN'),
    };
    const allFiles = { ...files, ...(this.grpcCa ? { 'grpc-ca.crt': this.grpcCa } : {}) };
    if (this.grpcCa) env.GRPC_TLS_CA_FILE = '/tmp/grpc-ca.crt';
    const writes = Object.entries(allFiles).map(([name, content], index) => {
      env[`FILE_${index}`] = content;
      return `printf '%s' "$FILE_${index}" > /tmp/${name} && `;
    });
    const script = `${writes.join('')}exec notifyctl "$@" --json`;
    const name = `notifyctl-${randomUUID().slice(0, 8)}`;
    const pod = { name, namespace: this.namespace, image: toolbox, args: ['sh', '-c', script, 'notifyctl', ...args], env, labels: this.grpcClient };
    const result = await runPod(pod);
    assert.equal(result.code, 0, `notifyctl ${args.join(' ')}: ${result.stdout}${result.stderr}`);
    // The pod's log holds stderr too (the key's "shown once" warning): the JSON document is the lines from a brace
    // at the start of one to the closing one at the start of another.
    const document = result.stdout.match(/^[{[][\s\S]*^[}\]]$/m)?.[0];
    assert.ok(document, `notifyctl ${args.join(' ')} printed no JSON: ${result.stdout}`);
    return JSON.parse(document) as Record<string, unknown>;
  }

  /** A GET from inside the release (a pod with its instance label), where the dev servers admit requests. */
  async fetchInside(url: string): Promise<string> {
    const script = `fetch(${JSON.stringify(url)}).then(async (r) => { if (!r.ok) throw new Error(String(r.status)); process.stdout.write(await r.text()); })`;
    const name = `fetch-${randomUUID().slice(0, 8)}`;
    const result = await runPod({ name, namespace: this.namespace, image: toolbox, args: ['node', '-e', script], labels: this.member });
    assert.equal(result.code, 0, `GET ${url}: ${result.stdout}${result.stderr}`);
    return result.stdout;
  }

  async serviceUrl(name: string, port: string): Promise<string> {
    const { stdout } = await kubectl([
      '-n',
      this.namespace,
      'get',
      'service',
      this.component(name),
      '-o',
      `jsonpath={.spec.clusterIP}:{.spec.ports[?(@.name=="${port}")].port}`,
    ]);
    return `http://${stdout}`;
  }

  /** The subjects of the mails in the dev mail sink whose recipient contains `text`. */
  async sinkSubjects(text: string): Promise<string[]> {
    const sink = await this.serviceUrl('mail-sink', 'http');
    const found = JSON.parse(await this.fetchInside(`${sink}/api/v1/search?query=${encodeURIComponent(`to:${text}`)}&limit=5000`)) as {
      messages: { Subject: string }[];
    };
    return found.messages.map((message) => message.Subject);
  }

  /** An organization, project, active template `welcome` and API key, made with notifyctl as an operator would. */
  async createTenant(): Promise<Tenant> {
    const plan = await this.notifyctl(['plan', 'create', '--name', 'smoke', '--monthly-quota', '0']);
    const org = await this.notifyctl(['org', 'create', '--name', 'smoke-test', '--plan', String(plan.id)]);
    const project = await this.notifyctl(['project', 'create', '--org', String(org.id), '--name', 'smoke-test']);
    const projectId = String(project.id);
    await this.notifyctl(
      [
        'template',
        'put',
        '--project',
        projectId,
        '--slug',
        'welcome',
        '--subject',
        'Hello {{ name }}',
        '--html-file',
        '/tmp/welcome.html',
        '--text-file',
        '/tmp/welcome.txt',
        '--activate',
      ],
      { 'welcome.html': '<p>Hello {{ name }}</p>', 'welcome.txt': 'Hello {{ name }}' },
    );
    // Its own send rate, so that the tests' load is never answered 429 (the chart's default is 120/min per key).
    const key = await this.notifyctl(['key', 'create', '--project', projectId, '--name', 'helm-test', '--rate', '1000/s']);
    return { organizationId: String(org.id), projectId, apiKey: String(key.apiKey) };
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends through the gateway's Service as an integrator's client would: each send has an Idempotency-Key and is retried
 * with it while the answer is a 503 with Retry-After or no answer at all. Every other answer that is not 202 is kept in
 * `unexpected`, and the send given up.
 */
export class Traffic {
  readonly ids: number[] = [];
  readonly unexpected: string[] = [];
  /** Sends that got no answer once (a connection refused or reset); each was retried. */
  unanswered = 0;
  /** In every recipient's address and the messages' tag, so that the sink and the list find this traffic's mails. */
  readonly run = randomUUID().slice(0, 8);
  readonly #headers: Record<string, string>;
  readonly gateway: string;
  /** The index of the next message sent by `keepSending` or `sendBatches`, shared by every loop of this traffic. */
  #sent = 0;

  constructor(gateway: string, tenant: Tenant) {
    this.gateway = gateway;
    this.#headers = { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': tenant.organizationId, 'content-type': 'application/json' };
  }

  #message(name: string) {
    return { template: 'welcome', to: `${name}@example.com`, channel: 'email', data: { name }, tags: [this.run] };
  }

  /** One message, `day2-<run>-<index>@example.com`; resolves once it is accepted (or given up). */
  async send(index: number): Promise<void> {
    const key = randomUUID();
    const name = `day2-${this.run}-${index}`;
    const body = JSON.stringify(this.#message(name));
    for (let attempt = 0; attempt < 120; attempt++) {
      const response = await fetch(`${this.gateway}/api/v1/send/`, { method: 'POST', headers: { ...this.#headers, 'idempotency-key': key }, body }).catch(
        () => undefined,
      );
      if (response?.status === 202) {
        this.ids.push(((await response.json()) as { message_id: number }).message_id);
        return;
      }
      if (!response) this.unanswered++;
      else if (response.status !== 503 || !response.headers.get('retry-after')) {
        this.unexpected.push(`send ${index}: ${response.status} retry-after=${response.headers.get('retry-after')} ${await response.text()}`);
        return;
      }
      await pause(500);
    }
    this.unexpected.push(`send ${index} was not accepted within a minute`);
  }

  /** Sends one message after another, `intervalMs` apart, until `stop` is set; resolves when the last one ended. */
  async keepSending(stop: { stopped: boolean }, intervalMs: number): Promise<void> {
    while (!stop.stopped) {
      await this.send(this.#sent++);
      await pause(intervalMs);
    }
  }

  /** `count` messages in batches of 500 (`batch-<run>-<n>@example.com`), a second apart: at most 500 a second. */
  async sendBatches(count: number): Promise<void> {
    for (let first = 0; first < count; first += 500, await pause(1_000)) {
      const messages = Array.from({ length: Math.min(500, count - first) }, () => this.#message(`batch-${this.run}-${this.#sent++}`));
      const response = await fetch(`${this.gateway}/api/v1/send/batch/`, { method: 'POST', headers: this.#headers, body: JSON.stringify({ messages }) });
      assert.equal(response.status, 200, await response.clone().text());
      const { results } = (await response.json()) as { results: { status: number; message_id?: number }[] };
      for (const result of results) {
        if (result.status === 202 && result.message_id) this.ids.push(result.message_id);
        else this.unexpected.push(`batch item: ${JSON.stringify(result)}`);
      }
    }
  }

  /** The status of every message of this traffic (its tag), read page by page from the list. */
  async statuses(): Promise<Map<number, string>> {
    const statuses = new Map<number, string>();
    let cursor: string | null = '';
    while (cursor !== null) {
      const query = `tag=${this.run}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await fetch(`${this.gateway}/api/v1/messages/?${query}`, { headers: this.#headers });
      assert.equal(response.status, 200, await response.clone().text());
      const page = (await response.json()) as { results: { message_id: number; status: string }[]; next: string | null };
      for (const message of page.results) statuses.set(message.message_id, message.status);
      cursor = page.next;
    }
    return statuses;
  }

  /** Waits until every accepted message reads `sent`; returns those that did not, with their last status. */
  async notSent(timeoutMs: number): Promise<[number, string | undefined][]> {
    let statuses = new Map<number, string>();
    const pending = () => this.ids.filter((id) => statuses.get(id) !== 'sent');
    for (const started = Date.now(); Date.now() - started < timeoutMs; await pause(2_000)) {
      statuses = await this.statuses().catch(() => statuses);
      if (pending().length === 0) break;
    }
    return pending().map((id) => [id, statuses.get(id)]);
  }
}
