// The classification of nodemailer's failures, on errors shaped as its SMTP connection makes them (smtp-connection's
// _formatError: code, originalCode, response, responseCode, command). relays.test.ts sees the same against real servers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { relayFault } from './relay-fault.ts';

const smtpError = (message: string, fields: Record<string, unknown>): Error => Object.assign(new Error(message), fields);

test('a relay that never had the message is unreached: refused, unresolved, timed out before its greeting, greeting or login refused', () => {
  assert.equal(relayFault(smtpError('connect ECONNREFUSED 127.0.0.1:2525', { code: 'ESOCKET', originalCode: 'ECONNREFUSED', command: 'CONN' })), 'unreached');
  assert.equal(relayFault(smtpError('getaddrinfo ENOTFOUND relay.invalid', { code: 'EDNS', originalCode: 'ENOTFOUND', command: 'CONN' })), 'unreached');
  assert.equal(relayFault(smtpError('Connection timeout', { code: 'ETIMEDOUT', command: 'CONN' })), 'unreached');
  assert.equal(relayFault(smtpError('Greeting never received', { code: 'ETIMEDOUT', command: 'CONN' })), 'unreached');
  assert.equal(
    relayFault(smtpError('Invalid greeting. response=554 go away', { code: 'EPROTOCOL', response: '554 go away', responseCode: 554, command: 'CONN' })),
    'unreached',
  );
  assert.equal(relayFault(smtpError('Invalid login: 535 5.7.8 bad credentials', { code: 'EAUTH', responseCode: 535, command: 'AUTH PLAIN' })), 'unreached');
  assert.equal(relayFault(smtpError('Server terminates connection', { code: 'ECONNECTION', responseCode: 421, command: 'EHLO' })), 'unreached');
});

test('a session that broke once it had started is lost: the relay may have taken the message', () => {
  assert.equal(relayFault(smtpError('Connection closed unexpectedly', { code: 'ECONNECTION', command: 'CONN' })), 'lost');
  assert.equal(relayFault(smtpError('read ECONNRESET', { code: 'ESOCKET', originalCode: 'ECONNRESET', command: 'CONN' })), 'lost');
  assert.equal(relayFault(smtpError('Timeout', { code: 'ETIMEDOUT', command: 'CONN' })), 'lost');
  assert.equal(relayFault(smtpError('Server closed the connection: 421 shutting down', { code: 'ECONNECTION', responseCode: 421, command: 'CONN' })), 'lost');
});

test('a reply about the message, or a message nodemailer cannot send, is not the relay at fault', () => {
  assert.equal(
    relayFault(smtpError('Recipient command failed: 550 5.1.1 no such user', { code: 'EENVELOPE', responseCode: 550, command: 'RCPT TO' })),
    undefined,
  );
  assert.equal(relayFault(smtpError('Mail command failed: 451 4.7.1 slow down', { code: 'EENVELOPE', responseCode: 451, command: 'MAIL FROM' })), undefined);
  assert.equal(relayFault(smtpError('Message failed: 552 too big', { code: 'EMESSAGE', responseCode: 552, command: 'DATA' })), undefined);
  assert.equal(relayFault(smtpError('Empty message', { code: 'EMESSAGE', command: 'API' })), undefined);
});
