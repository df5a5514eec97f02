// The checkout page's only script, served from the checkout host itself (CSP: script-src 'self').
// The page works without it: the form posts, the server answers with the page in its new state.
// With it: the time left counts down, a double tap cannot pay twice, and the status is followed
// live (paid → settled) until the payer is sent back to the merchant: by server-sent events from
// the status URL, or, where those fail, by reading it every 15 s. Text is only ever set with
// textContent; nothing from the server is parsed as HTML.
(() => {
  const root = document.getElementById('checkout');
  if (!root) return;
  const statusUrl = root.getAttribute('data-status-url');
  const autoReturn = root.getAttribute('data-auto-return') === '1';
  let state = root.getAttribute('data-state');
  const $ = (id) => document.getElementById(id);
  const say = (text) => {
    const el = $('status');
    if (el && el.textContent !== text) el.textContent = text;
  };
  const merchant = $('merchant-name')?.textContent || 'the merchant';

  // Time left, counted from the server's figure so the payer's clock does not matter.
  const timeLeft = $('time-left');
  if (timeLeft) {
    const deadline = Date.now() + Number(timeLeft.getAttribute('data-seconds')) * 1000;
    const pad = (n) => String(n).padStart(2, '0');
    const tick = () => {
      const ms = Math.max(0, deadline - Date.now());
      const s = Math.ceil(ms / 1000);
      const h = Math.floor(s / 3600);
      const m = Math.floor((s % 3600) / 60);
      timeLeft.textContent = h > 0 ? `${h} h ${pad(m)} min` : `${m}:${pad(s % 60)}`;
      if (s === 0) {
        // The server decides: reload shows the expired page (a second of slack for clock rounding).
        setTimeout(() => location.reload(), 1000);
        return;
      }
      setTimeout(tick, ms % 1000 || 1000);
    };
    tick();
  }

  // One submission only, whichever way to pay was chosen. The buttons are disabled after the
  // browser has read the clicked one.
  let sent = false;
  // The live status, below: an EventSource, or the fallback poll's timer.
  let following = true;
  let events;
  let polling;
  const stopFollowing = () => {
    following = false;
    events?.close();
    clearTimeout(polling);
  };
  for (const form of document.forms) {
    form.addEventListener('submit', (event) => {
      if (form.classList.contains('pay-form')) {
        if (sent) {
          event.preventDefault();
          return;
        }
        sent = true;
        form.setAttribute('aria-busy', 'true');
        say('Processing your payment…');
        setTimeout(() => {
          for (const b of document.querySelectorAll('form.pay-form button')) b.disabled = true;
        }, 0);
      }
      // A form on its way: the status it causes must not make the page reload over the answer.
      stopFollowing();
    });
  }

  // "Pay with USDC" needs a browser wallet (EIP-1193): its module, which offers it on a payable page,
  // is fetched only when there is one. It is this script's name with .usdc (assets.ts).
  if (window.ethereum) import(document.currentScript.src.replace(/js$/, 'usdc.js'));

  if (!statusUrl) return;
  const SETTLE_PATIENCE_MS = 20000;
  const SLOW_POLL_MS = 15000;
  const STREAM_WATCHDOG_MS = 10000;
  const receivedSince = Date.now();
  let leaving = false;
  let patience;

  const leave = (url, delay, text) => {
    if (leaving || !/^https?:\/\//.test(url)) return;
    leaving = true;
    stopFollowing();
    say(text);
    setTimeout(() => location.assign(url), delay);
  };

  const showReturn = (url) => {
    const link = $('return');
    if (link && url) {
      link.setAttribute('href', url);
      link.hidden = false;
    }
  };

  const apply = (s) => {
    if (s.state !== state && !(state === 'received' && s.state === 'settled')) {
      // A change the page cannot show in place (paid elsewhere, expired): let the server render it.
      location.reload();
      return false;
    }
    state = s.state;
    root.setAttribute('data-state', state);
    if (s.settlement?.tx_hash) {
      const tx = $('tx-hash');
      if (tx) tx.textContent = s.settlement.tx_hash;
      const box = $('settlement');
      if (box) box.hidden = false;
    }
    if (state === 'settled') {
      const heading = $('state-heading');
      if (heading) heading.textContent = 'Payment complete';
      showReturn(s.return_url);
      if (autoReturn) leave(s.return_url, 2500, `Payment complete. Returning you to ${merchant}…`);
      else say('Payment complete.');
      return false;
    }
    if (state === 'received') {
      showReturn(s.return_url);
      if (autoReturn && patience === undefined) {
        // Settlement is the service's job, not the payer's: do not keep them waiting for it.
        patience = setTimeout(
          () => leave(s.return_url, 0, `Payment received. Returning you to ${merchant}…`),
          Math.max(0, SETTLE_PATIENCE_MS - (Date.now() - receivedSince)),
        );
      }
      say('Payment received. Settling…');
    }
    return true;
  };

  // The fallback: no EventSource, or the host refused the stream (busy, or an old proxy).
  const poll = async () => {
    let again = true;
    try {
      const res = await fetch(statusUrl, { headers: { accept: 'application/json' }, cache: 'no-store' });
      if (res.ok) again = apply(await res.json());
    } catch {
      // Offline for a moment: keep trying.
    }
    if (again && following) polling = setTimeout(poll, SLOW_POLL_MS);
  };

  if (
    state === 'payable' ||
    state === 'processing' ||
    state === 'confirming' ||
    state === 'received' ||
    (state === 'settled' && autoReturn)
  ) {
    if (typeof EventSource !== 'function') {
      polling = setTimeout(poll, SLOW_POLL_MS);
    } else {
      // The first event is the status as it is now, on every (re)connect; then one per change.
      events = new EventSource(statusUrl);
      // A proxy that buffers the stream delivers nothing: without a first event soon, read it ourselves.
      const watchdog = setTimeout(() => {
        events.close();
        if (following) polling = setTimeout(poll, 0);
      }, STREAM_WATCHDOG_MS);
      events.onmessage = (message) => {
        clearTimeout(watchdog);
        if (!apply(JSON.parse(message.data))) stopFollowing();
      };
      events.onerror = () => {
        // CONNECTING: the browser reconnects by itself (a blip, or the stream's lifetime ran out).
        // CLOSED (refused: the host is busy, or a proxy does not pass streams): the page reads it itself.
        if (events.readyState === 2 && following) {
          clearTimeout(watchdog);
          polling = setTimeout(poll, SLOW_POLL_MS);
        }
      };
    }
  }
})();
