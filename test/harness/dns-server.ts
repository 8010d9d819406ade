// A real DNS server on UDP 127.0.0.1 that answers TXT questions from a table (RFC 1035 4.1), enough for node:dns
// (c-ares) and so for the code under test to look records up for real: notifyctl's `domain check` and dispatch-svc's
// domain verifier (DNS_RESOLVER) are pointed at it, and a test publishes or changes records in its table.
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

/** Each name (lower case, no trailing dot) with its TXT records, each record as its character-strings. */
export type TxtTable = Map<string, (readonly string[])[]>;

/** The question's name (lower case) and where the question section ends. */
function readQuestion(query: Buffer): { name: string; end: number } {
  const labels: string[] = [];
  let offset = 12;
  while (query[offset]! > 0) {
    const length = query[offset]!;
    labels.push(query.subarray(offset + 1, offset + 1 + length).toString('ascii'));
    offset += 1 + length;
  }
  return { name: labels.join('.').toLowerCase(), end: offset + 1 + 4 };
}

/** The answer to `query`: each record a TXT RR of its strings, or NXDOMAIN when the name has none. */
function answer(query: Buffer, records: TxtTable): Buffer {
  const { name, end } = readQuestion(query);
  const found = records.get(name);
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  header.writeUInt16BE(0x8180 | (query.readUInt16BE(2) & 0x0100) | (found ? 0 : 3), 2); // response, RD copied, RA, NXDOMAIN
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(found?.length ?? 0, 6);
  const answers = (found ?? []).map((strings) => {
    const rdata = Buffer.concat(strings.map((text) => Buffer.concat([Buffer.from([Buffer.byteLength(text)]), Buffer.from(text, 'ascii')])));
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // the question's name
    fixed.writeUInt16BE(16, 2); // TXT
    fixed.writeUInt16BE(1, 4); // IN
    fixed.writeUInt32BE(60, 6);
    fixed.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([fixed, rdata]);
  });
  return Buffer.concat([header, query.subarray(12, end), ...answers]);
}

/** A value as a TXT record's character-strings: at most 255 octets each (RFC 1035 3.3). */
export function txtRecord(value: string): string[] {
  const strings: string[] = [];
  for (let start = 0; start < value.length; start += 255) strings.push(value.slice(start, start + 255));
  return strings;
}

export class DnsServer {
  readonly #socket: Socket;
  /** What it answers from; a test changes it at will. */
  readonly records: TxtTable;
  /** The names asked, in order. */
  readonly asked: string[] = [];

  private constructor(socket: Socket, records: TxtTable) {
    this.#socket = socket;
    this.records = records;
    socket.on('message', (query, peer) => {
      this.asked.push(readQuestion(query).name);
      socket.send(answer(query, this.records), peer.port, peer.address);
    });
  }

  /** Listens on a free UDP port of 127.0.0.1. */
  static async start(records: TxtTable = new Map()): Promise<DnsServer> {
    const socket = createSocket('udp4');
    const server = new DnsServer(socket, records);
    await new Promise<void>((ready) => socket.bind(0, '127.0.0.1', ready));
    return server;
  }

  /** `127.0.0.1:<port>`, as node:dns's setServers and DNS_RESOLVER take it. */
  get address(): string {
    return `127.0.0.1:${(this.#socket.address() as AddressInfo).port}`;
  }

  /** Publishes one TXT record at `name`, replacing what it had. */
  publishTxt(name: string, value: string): void {
    this.records.set(name.toLowerCase(), [txtRecord(value)]);
  }

  close(): Promise<void> {
    return new Promise<void>((done) => this.#socket.close(() => done()));
  }
}
