// A bare SMTP client for the receiver's tests: one command at a time, each reply read whole, and a message's content
// streamed from any source with backpressure, so a test can send 200 MB without holding it or time a greeting.
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export class SmtpDialog {
  readonly #socket: Socket;
  /** Received text not yet made into reply lines. */
  #pending = '';
  #lines: string[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  /** When the socket connected, and when the greeting had arrived (performance.now()). */
  readonly connectedAt: number;
  greetedAt: number | undefined;
  greeting = '';

  private constructor(socket: Socket, connectedAt: number) {
    this.#socket = socket;
    this.connectedAt = connectedAt;
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => {
      this.#pending += text;
      const lines = this.#pending.split('\r\n');
      this.#pending = lines.pop()!;
      this.#lines.push(...lines);
      this.#wake?.();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.#ended = true;
      this.#wake?.();
    });
  }

  /** Connects (from `localAddress` when given: any 127.x address is this host's loopback too) and reads the greeting. */
  static async open(port: number, localAddress?: string): Promise<SmtpDialog> {
    const startedAt = performance.now();
    const socket = connect({ host: '127.0.0.1', port, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const dialog = new SmtpDialog(socket, startedAt);
    dialog.greeting = await dialog.reply();
    dialog.greetedAt = performance.now();
    return dialog;
  }

  /** The next whole reply (a multi-line one joined with newlines), or '' once the server has closed. */
  async reply(): Promise<string> {
    const lines: string[] = [];
    for (;;) {
      const line = this.#lines.shift();
      if (line === undefined) {
        if (this.#ended) return lines.join('\n');
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
        continue;
      }
      lines.push(line);
      if (!/^\d{3}-/.test(line)) return lines.join('\n');
    }
  }

  async command(line: string): Promise<string> {
    this.#socket.write(`${line}\r\n`);
    return this.reply();
  }

  /** Sends a message's content and its final dot (dot-stuffing is the caller's: no test sends a line starting with a dot). */
  async data(content: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<string> {
    await this.send(content);
    return this.endData();
  }

  /** Sends content with backpressure, so that a test can stream more than it would hold. */
  async send(content: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<void> {
    for await (const chunk of content) {
      if (!this.#socket.write(chunk)) await new Promise<void>((resolve) => this.#socket.once('drain', resolve));
    }
  }

  /** Ends the message with its final dot: the reply to it. */
  async endData(): Promise<string> {
    this.#socket.write('\r\n.\r\n');
    return this.reply();
  }

  /** Writes raw bytes: for a client that sends a command a byte at a time. */
  write(bytes: string | Buffer): void {
    this.#socket.write(bytes);
  }

  get closed(): boolean {
    return this.#ended;
  }

  close(): void {
    this.#socket.destroy();
  }
}
