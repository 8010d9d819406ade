// Metric names in PromQL expressions and in Prometheus' text exposition format, to check that dashboards and alerts
// only ask for series that exist.

const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** Names of the metrics an expression selects (functions, keywords, label names and Grafana variables excluded). */
export function metricNames(expression: string): string[] {
  const stripped = expression
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // string literals
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // range durations, $__rate_interval included
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match;
    if (!name || call || keywords.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** Every series name in a /metrics page (histogram _bucket/_sum/_count included). */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)/.exec(line);
    if (match?.[1]) names.add(match[1]);
  }
  return names;
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every PromQL expression of a Grafana dashboard, with the title of the panel it draws. */
export function dashboardExpressions(dashboard: {
  panels?: Panel[];
  templating?: { list?: { query?: unknown; definition?: string }[] };
}): { where: string; expr: string }[] {
  const found: { where: string; expr: string }[] = [];
  const visit = (panels: Panel[] | undefined): void => {
    for (const panel of panels ?? []) {
      for (const target of panel.targets ?? []) if (target.expr) found.push({ where: panel.title ?? '?', expr: target.expr });
      visit(panel.panels);
    }
  };
  visit(dashboard.panels);
  for (const variable of dashboard.templating?.list ?? []) {
    const query = typeof variable.query === 'object' && variable.query ? (variable.query as { query?: string }).query : undefined;
    const inner = /label_values\((.*),\s*\w+\)$/.exec(query ?? '')?.[1];
    if (inner) found.push({ where: `variable ${variable.definition}`, expr: inner });
  }
  return found;
}
