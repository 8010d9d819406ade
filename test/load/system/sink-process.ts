// The local SMTP sink (cli/src/local/smtp-sink.ts) in a process of its own, for the bench's scale-out scenario
// (sink.ts): it holds every recipient for a while before accepting it, like a slow relay, and answers how many mails
// it has stored. Arguments: the folder the .eml files go to, and the port to listen on.
import { setTimeout as sleep } from 'node:timers/promises';
import { startSmtpSink } from '@notify/cli/local';
import { silentLogger } from '../../harness/logger.ts';

const [dir, port] = process.argv.slice(2);
if (!dir || !port) throw new Error('usage: sink-process.ts <mail folder> <port>');
const send = (message: Record<string, unknown>): void => void process.send?.(message);

let delayMs = 0;
const sink = await startSmtpSink({
  host: '127.0.0.1',
  port: Number(port),
  dir,
  logger: silentLogger('smtp-sink'),
  reply: () => (delayMs > 0 ? sleep(delayMs).then(() => undefined) : undefined),
});

process.on('message', (message: { type: string; id?: number; ms?: number }) => {
  if (message.type === 'delay') {
    delayMs = message.ms ?? 0;
    send({ id: message.id, delayMs });
  } else if (message.type === 'received') {
    send({ id: message.id, received: sink.received() });
  } else if (message.type === 'close') {
    void sink.close().then(() => process.exit(0));
  }
});
// The bench going away without a word must not leave the sink behind.
process.on('disconnect', () => void sink.close().then(() => process.exit(0)));
send({ type: 'ready', port: sink.port });
