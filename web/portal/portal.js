// The partner portal's pages, drawn in the browser from the portal's JSON API (/portal/api/…).
// Plain JavaScript served by the service itself: no framework, no build step, nothing fetched
// from elsewhere. Every text from the API goes into the page as text (textContent), never as HTML.
// State-changing requests carry the session's CSRF token in X-CSRF-Token.
'use strict';

(function portal() {
  const api = '/portal/api';
  let csrfToken = null;
  let pollTimer = null;

  /** An element with attributes (`on…` functions become listeners) and children (strings become text). */
  function h(tag, attributes, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
      else if (value === true) element.setAttribute(name, '');
      else element.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return element;
  }

  function time(ms) {
    return ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  async function call(method, path, body) {
    const headers = { 'x-portal-request': '1' };
    if (method !== 'GET' && csrfToken !== null) headers['x-csrf-token'] = csrfToken;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
    let json = {};
    try {
      json = await response.json();
    } catch {
      json = {};
    }
    if (response.status === 401 && path !== '/login') {
      location.assign('/portal');
      throw new Error('signed out');
    }
    return { status: response.status, ok: response.ok, json };
  }

  const main = () => document.getElementById('main');

  function show(...nodes) {
    main().replaceChildren(...nodes);
  }

  function errorBox(result) {
    return h('p', { class: 'error', role: 'alert' }, result.json.reason || `Request failed (HTTP ${result.status})`);
  }

  function stopPolling() {
    if (pollTimer !== null) clearInterval(pollTimer);
    pollTimer = null;
  }

  // ---- sign-in ----

  function signInPage() {
    const message = h('div', { id: 'signin-message' });
    const email = h('input', { type: 'email', id: 'email', name: 'email', autocomplete: 'username', required: true });
    const password = h('input', { type: 'password', id: 'password', name: 'password', autocomplete: 'current-password', required: true });
    const form = h(
      'form',
      {
        id: 'signin-form',
        onsubmit: async (event) => {
          event.preventDefault();
          const result = await call('POST', '/login', { email: email.value, password: password.value });
          if (result.ok) location.assign('/portal/webhooks');
          else message.replaceChildren(errorBox(result));
        },
      },
      h('label', { for: 'email' }, 'E-mail'),
      email,
      h('label', { for: 'password' }, 'Password'),
      password,
      h('div', {}, h('button', { type: 'submit', id: 'sign-in' }, 'Sign in')),
    );
    show(h('section', { class: 'signin' }, h('h1', {}, 'Sign in'), h('p', { class: 'muted' }, 'For your organisation’s administrators.'), message, form));
  }

  // ---- webhooks ----

  /**
   * The start of the receiver's answer to the test. It is the receiver's text, so it is set with
   * textContent — markup in it shows as markup, never runs or renders.
   */
  function testExcerpt(test) {
    if (test.responseExcerpt === null || test.responseExcerpt === undefined) return null;
    const excerpt = h('code', { class: 'excerpt', id: 'draft-test-excerpt' });
    excerpt.textContent = test.responseExcerpt === '' ? '(empty answer)' : test.responseExcerpt;
    return h('div', {}, h('span', { class: 'muted' }, 'Receiver’s answer (first 512 bytes): '), excerpt);
  }

  function testResult(test) {
    if (!test) return h('p', { class: 'muted', id: 'draft-test' }, 'Not tested yet.');
    return h(
      'div',
      { id: 'draft-test' },
      h(
        'p',
        {},
        'Last test: ',
        h('span', { class: test.ok ? 'ok' : 'bad' }, test.ok ? 'delivered' : 'failed'),
        ` — HTTP ${test.httpStatus === null ? 'none' : test.httpStatus}, ${test.durationMs} ms`,
        test.error ? `, error ${test.error}` : '',
        ` (${time(test.atMs)})`,
      ),
      testExcerpt(test),
    );
  }

  async function webhooksPage(flash) {
    const result = await call('GET', '/webhooks');
    if (!result.ok) return show(errorBox(result));
    const destination = result.json.destination;
    const act = (path, body) => async () => {
      const acted = await call('POST', path, body);
      if (!acted.ok) return webhooksPage(errorBox(acted));
      let note = null;
      if (acted.json.testSecret) note = h('div', { class: 'notice' }, 'Test secret for the draft (shown once; its test delivery carries it):', h('code', { class: 'secret', id: 'test-secret' }, acted.json.testSecret));
      if (acted.json.secret) {
        note = h('div', { class: 'notice' }, 'New signing secret (shown once — store it in your receiver now, then activate it):', h('code', { class: 'secret', id: 'new-secret' }, acted.json.secret));
      }
      if (acted.json.signingSinceMs) note = h('p', { class: 'notice', id: 'signing-since' }, `The new secret signs every delivery attempt from ${time(acted.json.signingSinceMs)}.`);
      if (acted.json.test) note = h('p', { class: 'notice' }, `Test sent: HTTP ${acted.json.test.httpStatus === null ? 'none' : acted.json.test.httpStatus} in ${acted.json.test.durationMs} ms.`);
      return webhooksPage(note);
    };
    const draftUrl = h('input', { type: 'url', id: 'draft-url', placeholder: 'https://hooks.example.com/payments' });
    const draft = destination.draft;
    show(
      h('h1', {}, 'Webhooks'),
      flash || '',
      h(
        'section',
        {},
        h('h2', {}, 'Live destination'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'URL'), h('dd', { id: 'live-url', class: 'mono' }, destination.url || 'none'),
          h('dt', {}, 'Signing secret'), h('dd', {}, destination.secretConfigured ? 'configured' : 'none'),
          h('dt', {}, 'Last change'), h('dd', {}, time(destination.updatedAtMs))),
      ),
      h(
        'section',
        {},
        h('h2', {}, 'Draft destination'),
        draft
          ? h('div', { id: 'draft' },
              h('p', {}, 'Draft URL: ', h('code', { id: 'draft-url-staged' }, draft.url), h('span', { class: 'muted' }, ` staged ${time(draft.stagedAtMs)}`)),
              testResult(draft.test),
              h('button', { type: 'button', id: 'test-draft', onclick: act('/webhooks/draft/test') }, 'Send test delivery'),
              h('button', { type: 'button', id: 'activate-draft', onclick: act('/webhooks/draft/activate'), disabled: !(draft.test && draft.test.ok) }, 'Activate'),
              h('button', { type: 'button', id: 'discard-draft', class: 'secondary', onclick: act('/webhooks/draft/discard') }, 'Discard'))
          : h('p', { class: 'muted' }, 'No draft. Stage a URL, send it a test delivery, then activate it.'),
        h('label', { for: 'draft-url' }, 'Stage a new draft URL'),
        draftUrl,
        h('div', {}, h('button', { type: 'button', id: 'stage-draft', onclick: () => act('/webhooks/draft', { url: draftUrl.value })() }, 'Stage draft')),
      ),
      h(
        'section',
        {},
        h('h2', {}, 'Signing secret'),
        destination.pendingSecret
          ? h('div', {},
              h('p', { id: 'pending-secret' }, `A new secret was staged ${time(destination.pendingSecret.stagedAtMs)}; deliveries still use the current one.`),
              h('button', { type: 'button', id: 'activate-secret', onclick: act('/webhooks/secret/activate') }, 'Start signing with the new secret'),
              h('button', { type: 'button', class: 'secondary', id: 'discard-secret', onclick: act('/webhooks/secret/discard') }, 'Discard it'))
          : h('button', { type: 'button', id: 'rotate-secret', onclick: act('/webhooks/secret/rotate') }, 'Rotate secret'),
        h('h2', {}, 'Verifying deliveries'),
        h('ol', { id: 'verification' }, destination.verification.map((step) => h('li', {}, step))),
      ),
    );
  }

  // ---- deliveries ----

  function attemptsCell(delivery) {
    if (delivery.attempts.length === 0) return h('td', { class: 'muted' }, 'none yet');
    return h('td', {}, delivery.attempts.map((attempt) =>
      h('div', { class: 'attempt', 'data-attempt': `${attempt.run}.${attempt.attempt}` },
        `#${attempt.run}.${attempt.attempt} `,
        h('span', { class: attempt.outcome === 'delivered' ? 'ok' : 'bad' }, attempt.httpStatus === null ? 'no answer' : `HTTP ${attempt.httpStatus}`),
        ` ${attempt.durationMs} ms`,
        attempt.errorClass ? ` ${attempt.errorClass}` : '',
        h('span', { class: 'muted' }, ` ${time(attempt.atMs)}`))));
  }

  function redeliverButton(delivery, refresh) {
    if (delivery.state === 'pending') return '';
    const label = delivery.state === 'failed' ? 'Redeliver' : 'Deliver again';
    const button = h('button', { type: 'button', class: delivery.state === 'failed' ? '' : 'secondary', 'data-redeliver': delivery.eventId }, label);
    let armed = delivery.state === 'failed';
    button.addEventListener('click', async () => {
      // Delivering a delivered event again is deliberate: a second click confirms it.
      if (!armed) {
        armed = true;
        button.textContent = 'Confirm: deliver again';
        return;
      }
      button.disabled = true;
      const result = await call('POST', `/deliveries/${encodeURIComponent(delivery.eventId)}/redeliver`, { again: delivery.state === 'delivered' });
      if (!result.ok) main().prepend(errorBox(result));
      await refresh();
    });
    return button;
  }

  async function deliveriesPage() {
    const params = new URLSearchParams(location.search);
    const state = h('select', { id: 'filter-state' },
      ['', 'failed', 'pending', 'delivered'].map((value) => h('option', { value, selected: params.get('state') === value || (value === '' && !params.get('state')) }, value || 'any state')));
    const transaction = h('input', { id: 'filter-transaction', class: 'mono', size: 38, placeholder: 'transaction id', value: params.get('transactionId') || '' });
    const body = h('tbody', { id: 'deliveries' });
    const summary = h('p', { class: 'muted', id: 'deliveries-summary' });
    const refresh = async () => {
      const query = new URLSearchParams();
      if (state.value) query.set('state', state.value);
      if (transaction.value.trim()) query.set('transactionId', transaction.value.trim());
      const result = await call('GET', `/deliveries?${query}`);
      if (!result.ok) return body.replaceChildren(h('tr', {}, h('td', { colspan: 7 }, errorBox(result))));
      summary.textContent = `${result.json.total} events; updated ${time(Date.now())} (refreshes every 2 s)`;
      body.replaceChildren(...result.json.deliveries.map((delivery) =>
        h('tr', { 'data-event': delivery.eventId, 'data-state': delivery.state },
          h('td', {}, String(delivery.sequence)),
          h('td', {}, delivery.event),
          h('td', { class: 'mono' }, h('a', { href: `/portal/transactions/${encodeURIComponent(delivery.transactionId)}` }, delivery.transactionId)),
          h('td', { class: 'state' }, h('span', { class: delivery.state === 'delivered' ? 'ok' : delivery.state === 'failed' ? 'bad' : '' }, delivery.state)),
          attemptsCell(delivery),
          h('td', {}, delivery.state === 'pending' ? time(delivery.nextAttemptAtMs) : '—'),
          h('td', {}, redeliverButton(delivery, refresh)))));
    };
    const apply = () => {
      const query = new URLSearchParams();
      if (state.value) query.set('state', state.value);
      if (transaction.value.trim()) query.set('transactionId', transaction.value.trim());
      history.replaceState(null, '', `/portal/deliveries${query.toString() ? `?${query}` : ''}`);
      return refresh();
    };
    show(
      h('h1', {}, 'Deliveries'),
      h('section', {},
        h('div', { class: 'filters' },
          h('div', {}, h('label', { for: 'filter-state' }, 'State'), state),
          h('div', {}, h('label', { for: 'filter-transaction' }, 'Transaction'), transaction),
          h('button', { type: 'button', id: 'apply-filters', onclick: apply }, 'Filter')),
        summary,
        h('table', {},
          h('thead', {}, h('tr', {}, ['Seq', 'Event', 'Transaction', 'State', 'Attempts (HTTP status, duration, error class)', 'Next retry', ''].map((title) => h('th', {}, title)))),
          body)),
    );
    await refresh();
    // Live: the page follows new attempts while it is open.
    pollTimer = setInterval(() => {
      refresh().catch(() => undefined);
    }, 2000);
  }

  // ---- transactions ----

  async function transactionsPage() {
    const params = new URLSearchParams(location.search);
    const statuses = ['', 'AWAITING_PAYMENT', 'PROCESSING', 'PAYMENT_COMPLETED', 'PAYMENT_EXPIRED', 'PAYMENT_FAILED', 'WRONG_AMOUNT'];
    const status = h('select', { id: 'filter-status' }, statuses.map((value) => h('option', { value, selected: params.get('status') === value }, value || 'any status')));
    const user = h('input', { id: 'filter-user', placeholder: 'user id', value: params.get('userId') || '' });
    const from = h('input', { id: 'filter-from', type: 'date', value: params.get('from') || '' });
    const to = h('input', { id: 'filter-to', type: 'date', value: params.get('to') || '' });
    const body = h('tbody', { id: 'transactions' });
    const summary = h('p', { class: 'muted' });
    const refresh = async () => {
      const query = new URLSearchParams();
      if (status.value) query.set('status', status.value);
      if (user.value.trim()) query.set('userId', user.value.trim());
      if (from.value) query.set('from', from.value);
      if (to.value) query.set('to', to.value);
      history.replaceState(null, '', `/portal/transactions${query.toString() ? `?${query}` : ''}`);
      const result = await call('GET', `/transactions?${query}`);
      if (!result.ok) return body.replaceChildren(h('tr', {}, h('td', { colspan: 6 }, errorBox(result))));
      summary.textContent = `${result.json.total} transactions`;
      body.replaceChildren(...result.json.transactions.map((tx) =>
        h('tr', { 'data-transaction': tx.id },
          h('td', { class: 'mono' }, h('a', { href: `/portal/transactions/${encodeURIComponent(tx.id)}` }, tx.id)),
          h('td', {}, tx.status),
          h('td', {}, tx.userId || '—'),
          h('td', {}, `${tx.quote.sourceAmount} ${tx.quote.cryptoCurrency} (${tx.quote.network})`),
          h('td', {}, `${tx.quote.targetAmount} ${tx.quote.targetCurrency} (${tx.quote.paymentMethod})`),
          h('td', {}, time(tx.createdAtMs)))));
    };
    show(
      h('h1', {}, 'Transactions'),
      h('section', {},
        h('div', { class: 'filters' },
          h('div', {}, h('label', { for: 'filter-status' }, 'Status'), status),
          h('div', {}, h('label', { for: 'filter-user' }, 'User'), user),
          h('div', {}, h('label', { for: 'filter-from' }, 'From (UTC)'), from),
          h('div', {}, h('label', { for: 'filter-to' }, 'To (UTC)'), to),
          h('button', { type: 'button', id: 'apply-filters', onclick: refresh }, 'Filter')),
        summary,
        h('table', {}, h('thead', {}, h('tr', {}, ['Id', 'Status', 'User', 'Pays', 'Receives', 'Created'].map((title) => h('th', {}, title)))), body)),
    );
    await refresh();
  }

  async function transactionPage(id) {
    const result = await call('GET', `/transactions/${encodeURIComponent(id)}`);
    if (!result.ok) return show(h('h1', {}, 'Transaction'), errorBox(result));
    const tx = result.json.transaction;
    const fact = (label, value, testId) => [h('dt', {}, label), h('dd', { class: 'mono', id: testId }, value === null || value === undefined ? '—' : String(value))];
    show(
      h('h1', {}, 'Transaction'),
      h('section', {}, h('dl', { class: 'facts' },
        fact('Id', tx.id, 'tx-id'), fact('Status', tx.status, 'tx-status'), fact('User', tx.userId), fact('External id', tx.externalId),
        fact('Pays', `${tx.quote.sourceAmount} ${tx.quote.cryptoCurrency} on ${tx.quote.network}`),
        fact('Receives', `${tx.quote.targetAmount} ${tx.quote.targetCurrency} by ${tx.quote.paymentMethod}`),
        fact('Account', tx.accountNumber), fact('Deposit address', tx.depositAddress), fact('Deposit hash', tx.depositHash, 'tx-deposit-hash'),
        fact('Refund', tx.refundHash, 'tx-refund'), fact('Created', time(tx.createdAtMs)), fact('Updated', time(tx.updatedAtMs)), fact('Expires', time(tx.expiresAtMs))),
        // The signed settlement receipt (docs/receipts.md), once the money has finished moving.
        tx.receiptAvailable
          ? h('p', {}, h('a', { id: 'tx-receipt', class: 'button', href: `/portal/api/transactions/${encodeURIComponent(tx.id)}/receipt`, download: `receipt-${tx.id}.json` }, 'Download signed receipt'))
          : h('p', { class: 'muted', id: 'tx-receipt-pending' }, 'A signed receipt can be downloaded once the payout completes or the deposit is refunded.')),
      h('section', {}, h('h2', {}, 'Status history and events sent'),
        h('table', {}, h('thead', {}, h('tr', {}, ['Seq', 'Event', 'Status', 'Refund', 'At', 'Delivery'].map((title) => h('th', {}, title)))),
          h('tbody', { id: 'tx-events' }, result.json.events.map((event) => h('tr', {},
            h('td', {}, String(event.sequence)), h('td', {}, event.event), h('td', {}, event.status || '—'), h('td', { class: 'mono' }, event.refundOnChainId || '—'),
            h('td', {}, time(event.createdAtMs)),
            h('td', {}, h('a', { href: `/portal/deliveries?transactionId=${encodeURIComponent(tx.id)}` }, `${event.delivery} (${event.attempts} attempts)`))))))),
    );
  }

  // ---- corridor health (GET /public/corridors/health: the same figures partners can fetch) ----

  async function corridorsPage() {
    const response = await fetch('/public/corridors/health', { credentials: 'same-origin' });
    if (!response.ok) return show(h('h1', {}, 'Corridor health'), h('p', { class: 'error' }, `The corridor health is not available right now (HTTP ${response.status}).`));
    const json = await response.json();
    const seconds = (ms) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);
    const times = (period) => `${seconds(period.p50_ms)} / ${seconds(period.p95_ms)} (${period.payouts})`;
    show(
      h('h1', {}, 'Corridor health'),
      h('p', { class: 'muted' }, `As of ${json.generated_at}. Settlement: deposit seen → payout completed, p50 / p95 (payouts).`),
      h('table', {},
        h('thead', {}, h('tr', {}, ['Corridor', 'Rail', 'Since', 'Last hour', 'Last day', 'Liquidity'].map((title) => h('th', {}, title)))),
        h('tbody', { id: 'corridor-health' }, json.corridors.map((entry) => h('tr', { 'data-corridor': `${entry.blockchain}-${entry.cryptoCurrency}-${entry.paymentMethod}-${entry.targetCurrency}` },
          h('td', {}, `${entry.cryptoCurrency} on ${entry.blockchain} → ${entry.targetCurrency} by ${entry.paymentMethod}`),
          h('td', { class: `rail-${entry.rail.state}` }, entry.rail.state),
          h('td', {}, entry.rail.since || '—'),
          h('td', {}, times(entry.settlement.last_hour)),
          h('td', {}, times(entry.settlement.last_day)),
          h('td', {}, entry.liquidity))))),
    );
  }

  // ---- unmatched deposits (docs/unmatched-deposits.md) ----

  async function unmatchedPage(flash) {
    const state = new URLSearchParams(location.search).get('state') || '';
    const result = await call('GET', `/unmatched-deposits${state ? `?state=${encodeURIComponent(state)}` : ''}`);
    if (!result.ok) return show(errorBox(result));
    const again = (answer, done) => unmatchedPage(answer.ok ? h('p', { class: 'notice' }, done(answer.json)) : errorBox(answer));
    const refund = (deposit) => {
      const button = h('button', { type: 'button', class: 'danger', 'data-refund': deposit.id }, 'Refund to sender');
      let armed = false;
      button.addEventListener('click', async () => {
        if (!armed) {
          armed = true;
          button.textContent = 'Confirm: refund now';
          return;
        }
        await again(await call('POST', `/unmatched-deposits/${encodeURIComponent(deposit.id)}/refund`), (json) => `Deposit ${json.id}: ${json.state}.`);
      });
      return button;
    };
    const apply = (deposit) => h('form', {
      class: 'apply', 'data-apply': deposit.id,
      onsubmit: async (event) => {
        event.preventDefault();
        const form = event.target;
        const body = { quote_id: form.quote_id.value, user_id: form.user_id.value, account_number: form.account_number.value };
        await again(await call('POST', `/unmatched-deposits/${encodeURIComponent(deposit.id)}/apply`, body), (json) => `Deposit ${json.id} applied to transaction ${json.applied_to}.`);
      },
    },
    h('input', { name: 'quote_id', placeholder: `quote id (exactly ${deposit.amount} ${deposit.asset})`, required: true, size: 38 }),
    h('input', { name: 'user_id', placeholder: 'user id', required: true }),
    h('input', { name: 'account_number', placeholder: 'account number', required: true }),
    h('button', { type: 'submit' }, 'Apply'));
    show(
      h('h1', {}, 'Unmatched deposits'),
      h('p', {}, 'Deposits that funded no transaction (late, beyond a transaction\'s slots, dust). Refund one to its sender, or apply it to a fresh quote for exactly its amount. An open one is refunded by itself when its hold ends.'),
      flash || '',
      h('p', {}, ['', 'open', 'refunding', 'refunded', 'applied'].map((name) => h('a', { href: `/portal/unmatched${name ? `?state=${name}` : ''}`, class: name === state ? 'current' : null }, `${name || 'all'} `))),
      h('table', {}, h('thead', {}, h('tr', {}, ['Deposit', 'State', 'Amount', 'Network', 'Reason', 'Meant for', 'Received', 'Hold ends', 'Refund / applied to', ''].map((title) => h('th', {}, title)))),
        h('tbody', { id: 'unmatched' }, result.json.deposits.map((deposit) => h('tr', { 'data-deposit': deposit.id },
          h('td', { class: 'mono' }, deposit.hash),
          h('td', { class: 'state' }, deposit.state),
          h('td', {}, `${deposit.amount} ${deposit.asset}`),
          h('td', {}, deposit.network),
          h('td', {}, deposit.reason),
          h('td', {}, deposit.transaction_id ? h('a', { href: `/portal/transactions/${encodeURIComponent(deposit.transaction_id)}` }, deposit.transaction_id) : '—'),
          h('td', {}, time(deposit.created_at)),
          h('td', {}, time(deposit.hold_ends_at)),
          h('td', { class: 'mono' }, deposit.refund_hash || deposit.applied_to || '—'),
          h('td', {}, deposit.state === 'open' ? [deposit.refund_floor === null ? refund(deposit) : h('span', {}, 'below the refund floor: apply only'), apply(deposit)] : ''))))),
    );
  }

  // ---- API keys ----

  async function keysPage(flash) {
    const result = await call('GET', '/keys');
    if (!result.ok) return show(errorBox(result));
    const revoke = (key) => {
      const button = h('button', { type: 'button', class: 'danger', 'data-revoke': key.id }, 'Revoke');
      let armed = false;
      button.addEventListener('click', async () => {
        if (!armed) {
          armed = true;
          button.textContent = 'Confirm: revoke now';
          return;
        }
        const revoked = await call('POST', `/keys/${encodeURIComponent(key.id)}/revoke`);
        await keysPage(revoked.ok ? h('p', { class: 'notice' }, `Key ${key.prefix || key.id} revoked: every edge refuses it within seconds.`) : errorBox(revoked));
      });
      return button;
    };
    show(
      h('h1', {}, 'API keys'),
      flash || '',
      h('section', {},
        h('table', {}, h('thead', {}, h('tr', {}, ['Key', 'Created', 'Origin', ''].map((title) => h('th', {}, title)))),
          h('tbody', { id: 'keys' }, result.json.keys.map((key) => h('tr', { 'data-key': key.id },
            h('td', { class: 'mono' }, key.prefix ? `${key.prefix}…` : `id ${key.id}`),
            h('td', {}, time(key.createdAtMs)),
            h('td', {}, key.source === 'portal' ? 'created here' : 'configured by the operator'),
            h('td', {}, revoke(key)))))),
        h('button', {
          type: 'button',
          id: 'create-key',
          onclick: async () => {
            const created = await call('POST', '/keys', {});
            await keysPage(created.ok
              ? h('div', { class: 'notice' }, 'New API key (shown once — copy it now):', h('code', { class: 'secret', id: 'new-key' }, created.json.apiKey))
              : errorBox(created));
          },
        }, 'Create key')),
    );
  }

  // ---- the frame ----

  async function start() {
    const path = location.pathname.replace(/\/$/, '');
    if (path === '/portal') {
      const session = await fetch(`${api}/session`, { credentials: 'same-origin' });
      if (session.ok) return location.assign('/portal/webhooks');
      return signInPage();
    }
    const session = await call('GET', '/session');
    if (!session.ok) return;
    csrfToken = session.json.csrfToken;
    const nav = document.getElementById('nav');
    nav.hidden = false;
    document.getElementById('who').textContent = `${session.json.email} · ${session.json.partnerName}`;
    document.getElementById('sign-out').addEventListener('click', async () => {
      stopPolling();
      await call('POST', '/logout');
      location.assign('/portal');
    });
    const page = path.split('/')[2];
    for (const link of nav.querySelectorAll('a')) link.classList.toggle('current', link.dataset.page === page);
    if (page === 'webhooks') return webhooksPage();
    if (page === 'deliveries') return deliveriesPage();
    if (page === 'transactions' && path.split('/')[3]) return transactionPage(decodeURIComponent(path.split('/')[3]));
    if (page === 'transactions') return transactionsPage();
    if (page === 'unmatched') return unmatchedPage();
    if (page === 'keys') return keysPage();
    if (page === 'corridors') return corridorsPage();
    return show(h('p', {}, 'No such page.'));
  }

  document.addEventListener('DOMContentLoaded', () => {
    start().catch((error) => show(h('p', { class: 'error' }, String(error && error.message ? error.message : error))));
  });
})();
