// Reading a service's Prometheus page (/metrics on its operations port), for tests and the bench.

/** The value of a series (by name and some of its labels) on the /metrics of the service at `port`, undefined when it has none. */
export async function metricValue(port: number, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && wanted.every((pair) => candidate.includes(pair)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}
