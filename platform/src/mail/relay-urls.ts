// SMTP relay lists, as SMTP_URL and a project's own relay (notifyctl project update --smtp-url) give them: one or more
// smtp:// or smtps:// URLs, comma-separated, tried in that order. A URL may hold the relay's credentials, so what is
// shown or logged of a relay is only its address (`host:port`).

/** The port a relay URL without one connects to: nodemailer's, 465 for implicit TLS and 587 for submission. */
function defaultPort(protocol: string): number {
  return protocol === 'smtps:' ? 465 : 587;
}

/** `host:port` of a relay URL: what metrics, logs and notifyctl name it by (never its credentials). */
export function relayAddress(relayUrl: string): string {
  const url = new URL(relayUrl);
  return `${url.hostname}:${Number(url.port) || defaultPort(url.protocol)}`;
}

/**
 * The relays of a comma-separated list, in order. Throws an Error that names a faulty entry by its position only (the
 * text could hold a password).
 */
export function parseRelayUrls(raw: string): string[] {
  const entries = raw.split(',').map((entry) => entry.trim());
  const relays: string[] = [];
  for (const [index, entry] of entries.entries()) {
    const position = entries.length === 1 ? 'the relay' : `relay ${index + 1}`;
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new Error(`${position} must be a URL`);
    }
    if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error(`${position} must use smtp or smtps`);
    if (!url.hostname) throw new Error(`${position} must name a host`);
    if (relays.some((relay) => relay === entry)) throw new Error(`${position} is listed twice`);
    relays.push(entry);
  }
  return relays;
}

/** The context a project's relay list is sealed under with NOTIFY_DATA_KEY: a list sealed for one project never opens as another's. */
export const projectRelaySealContext = (projectId: number): string => `smtp-url:${projectId}`;
