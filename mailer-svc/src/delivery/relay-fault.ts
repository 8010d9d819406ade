// Whether a failed send is the relay's fault, and whether the relay could have taken the message anyway. Only a
// failure before the message was offered (`unreached`: refused, unreachable, timed out connecting or waiting for the
// greeting, greeting or EHLO refused, TLS or authentication failed) lets the same attempt go on to the next relay: the
// relay never had the message, so no copy can arrive twice. A session that broke later (`lost`: reset, closed, a
// socket timeout) may have ended after the relay accepted the message's data, its reply lost on the way, so that
// attempt is deferred as before rather than risk a duplicate; both count against the relay's circuit. A 4xx or 5xx
// reply to MAIL FROM, RCPT TO or DATA is about the message, not the relay: undefined.
// nodemailer names a broken connection `CONN` whatever stage it broke in, so the stages are told apart by its codes.

export type RelayFault = 'unreached' | 'lost';

interface SmtpErrorFields {
  code?: unknown;
  originalCode?: unknown;
  responseCode?: unknown;
  command?: unknown;
  message?: unknown;
}

/** System errors of a socket that never connected. */
const notConnected = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL']);
const messageCommands = new Set(['MAIL FROM', 'RCPT TO', 'DATA']);
/** nodemailer's texts for the two timeouts that end a connection before its greeting. */
const beforeGreetingTimeouts = ['Connection timeout', 'Greeting never received'];

export function relayFault(error: unknown): RelayFault | undefined {
  const fields: SmtpErrorFields = typeof error === 'object' && error !== null ? (error as SmtpErrorFields) : {};
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const command = typeof fields.command === 'string' ? fields.command : '';
  const message = typeof fields.message === 'string' ? fields.message : '';
  if (messageCommands.has(command)) return undefined;
  if (code === 'EDNS' || code === 'ETLS' || code === 'EAUTH') return 'unreached';
  if (code === 'ESOCKET' || code === 'ECONNECTION') {
    if (typeof fields.originalCode === 'string' && notConnected.has(fields.originalCode)) return 'unreached';
    return command === 'EHLO' || command === 'LHLO' ? 'unreached' : 'lost';
  }
  if (code === 'ETIMEDOUT') return beforeGreetingTimeouts.some((text) => message.startsWith(text)) ? 'unreached' : 'lost';
  if (code === 'EPROTOCOL') return command === 'CONN' && message.startsWith('Invalid greeting') ? 'unreached' : 'lost';
  // A refusal of the session itself (a 4xx or 5xx to the greeting, EHLO, STARTTLS or AUTH).
  if (typeof fields.responseCode === 'number' && fields.responseCode >= 400) return 'unreached';
  return undefined;
}
