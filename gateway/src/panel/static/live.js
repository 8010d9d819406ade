// Follows a message while its page is open: polls the page's small status document and updates the state, the
// details that change and the timeline in place. Text only (textContent), never markup. Stops once the message is
// sent or failed, pauses while the tab is hidden.

(function follow() {
  const region = document.querySelector('[data-live-status]');
  if (!region || region.getAttribute('data-terminal') === 'true') return;
  const url = region.getAttribute('data-live-status');
  const intervalMs = 1500;
  let timer = 0;
  let polling = false;
  let lastState = '';

  function field(name) {
    return document.querySelector(`[data-field="${name}"]`);
  }

  function badge(state, text) {
    const span = document.createElement('span');
    span.className = `state state-${state}`;
    span.setAttribute('data-state', state);
    span.textContent = text;
    return span;
  }

  function cell(content) {
    const td = document.createElement('td');
    if (typeof content === 'string' || typeof content === 'number') td.textContent = String(content);
    else td.appendChild(content);
    return td;
  }

  function time(iso, text) {
    const element = document.createElement('time');
    element.setAttribute('datetime', iso);
    element.textContent = text;
    return element;
  }

  function show(status) {
    if (status.state !== lastState) {
      lastState = status.state;
      field('state').replaceChildren(badge(status.state, status.stateText));
    }
    field('attempts').textContent = String(status.attempts);
    field('lastSmtpReply').textContent = status.lastSmtpReply;
    field('failureReason').textContent = status.failureReason;
    field('updatedAt').textContent = status.updatedAt;
    field('timeline').replaceChildren(
      ...status.events.map(function row(event) {
        const tr = document.createElement('tr');
        tr.append(
          cell(badge(event.state, event.stateText)),
          cell(event.attempt),
          cell(time(event.timeIso, event.time)),
          cell(event.smtpReply),
          cell(event.reason),
        );
        return tr;
      }),
    );
    if (status.terminal) {
      region.setAttribute('data-terminal', 'true');
      const hint = region.querySelector('.hint');
      if (hint) hint.remove();
    }
    return status.terminal;
  }

  async function poll() {
    timer = 0;
    polling = true;
    let done = false;
    try {
      const response = await fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' });
      // Signed out or gone: the next reload shows why; polling would not help.
      if (response.status === 401 || response.status === 404) {
        polling = false;
        return;
      }
      if (response.ok) done = show(await response.json());
    } catch {
      // A network hiccup: try again at the next tick.
    }
    polling = false;
    if (!done && !document.hidden) timer = window.setTimeout(poll, intervalMs);
  }

  document.addEventListener('visibilitychange', function resume() {
    if (!document.hidden && timer === 0 && !polling && region.getAttribute('data-terminal') !== 'true') poll();
  });
  timer = window.setTimeout(poll, intervalMs);
})();
