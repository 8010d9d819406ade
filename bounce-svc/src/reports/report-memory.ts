// How much of the process's memory reports may take, wherever they come from: one report at most maxBytes (announced
// with SIZE), all reports being received and read at once at most maxHeldBytes. Past either limit the rest of the
// message is read and dropped as it arrives, so the client still gets its reply after its final dot, and a client
// that streams gigabytes costs no more memory than one chunk at a time.
import { setImmediate } from 'node:timers/promises';
import type { SMTPServerDataStream } from 'smtp-server';

/** What reading one message off the DATA stream came to. */
export type Intake =
  | { kind: 'message'; raw: Buffer }
  /** Over maxBytes: refused for good (552). */
  | { kind: 'too-large' }
  /** Within maxBytes, but other reports held the memory: the client is to try again later (451). */
  | { kind: 'no-room' };

export class ReportMemory {
  readonly #maxBytes: number;
  readonly #maxHeldBytes: number;
  /** Bytes of reports held now, all sessions together. */
  #held = 0;

  constructor(limits: { maxBytes: number; maxHeldBytes: number }) {
    this.#maxBytes = limits.maxBytes;
    this.#maxHeldBytes = limits.maxHeldBytes;
  }

  /**
   * Reads the message to the end of DATA and runs `use` with what came of it; the message's bytes count as held
   * until `use` has settled. Rejects when the stream fails (the client left in the middle of its message).
   */
  async receive<T>(stream: SMTPServerDataStream, use: (intake: Intake) => Promise<T>): Promise<T> {
    let chunks: Buffer[] = [];
    let kept = 0;
    let refusal: 'too-large' | 'no-room' | undefined;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (refusal !== undefined) continue;
        refusal = this.#refusal(kept, chunk.length);
        if (refusal !== undefined) {
          this.#held -= kept;
          kept = 0;
          chunks = [];
          continue;
        }
        chunks.push(chunk);
        kept += chunk.length;
        this.#held += chunk.length;
      }
      if (refusal !== undefined) return await use({ kind: refusal });
      // Joining a large message takes milliseconds (most of it the kernel mapping fresh pages): the greetings and
      // replies other clients are due go first.
      await setImmediate();
      const raw = Buffer.concat(chunks, kept);
      chunks = [];
      return await use({ kind: 'message', raw });
    } finally {
      this.#held -= kept;
    }
  }

  #refusal(kept: number, more: number): 'too-large' | 'no-room' | undefined {
    if (kept + more > this.#maxBytes) return 'too-large';
    if (this.#held + more > this.#maxHeldBytes) return 'no-room';
    return undefined;
  }
}
