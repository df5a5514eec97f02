// "Pay with USDC" on the checkout page, loaded by checkout.js only when the browser has a wallet
// (EIP-1193). Offered when this session's x402 answer (the checkout URL, asked for JSON) offers
// USDC. The wallet signs one EIP-3009 authorization for exactly the session's amount to the address
// that answer names; the page's #usdc form carries it to the server (a form of the page like the
// others: checkout.js guards it against a second submission), which pays it and answers with the
// page of the attempt. Text is only ever set with textContent.

// USDC has 6 decimals on every chain: "3050000" is 3.05.
const usdcText = (atomic) => {
  const digits = atomic.padStart(7, '0');
  const cents = digits.slice(-6).replace(/0+$/, '').padEnd(2, '0');
  return `${digits.slice(0, -6)}.${cents}`;
};

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

// Plain words for what a wallet answers (EIP-1193 error codes).
const walletWords = (error, chain) => {
  switch (error?.code) {
    case 4001:
      return 'You declined in your wallet. Nothing was paid.';
    case 4902:
    case 'wrong_network':
      return `Your wallet is on another network. Switch it to the network of this payment (chain ${chain}) and try again. Nothing was paid.`;
    case 4100:
      return 'Your wallet did not let this page connect. Nothing was paid.';
    case -32002:
      return 'Your wallet is already asking you something: open it, answer, then try again.';
    default:
      return 'Your wallet could not complete the request. Nothing was paid. Please try again.';
  }
};

const TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

/** The wallet's signed authorization for `offer` (an x402 exact requirement); throws the wallet's error. */
async function signAuthorization(wallet, offer, chain) {
  const [from] = await wallet.request({ method: 'eth_requestAccounts' });
  if (Number(await wallet.request({ method: 'eth_chainId' })) !== chain) {
    await wallet.request({ method: 'wallet_switchEthereumChain', params: [{ chainId: `0x${chain.toString(16)}` }] });
    if (Number(await wallet.request({ method: 'eth_chainId' })) !== chain) {
      throw Object.assign(new Error('wrong network'), { code: 'wrong_network' });
    }
  }
  const message = {
    from,
    to: offer.payTo,
    value: offer.amount,
    validAfter: '0',
    // As @x402/fetch does: valid for the time the requirement allows, by this device's clock.
    validBefore: String(Math.floor(Date.now() / 1000) + offer.maxTimeoutSeconds),
    nonce: `0x${hex(crypto.getRandomValues(new Uint8Array(32)))}`,
  };
  const domain = {
    name: offer.extra.name,
    version: offer.extra.version,
    chainId: chain,
    verifyingContract: offer.asset,
  };
  const typed = JSON.stringify({ types: TYPES, primaryType: 'TransferWithAuthorization', domain, message });
  const signature = await wallet.request({ method: 'eth_signTypedData_v4', params: [from, typed] });
  return {
    from,
    to: message.to,
    value: message.value,
    valid_after: message.validAfter,
    valid_before: message.validBefore,
    nonce: message.nonce,
    signature,
  };
}

/** One element with its text (never parsed as HTML). */
const element = (tag, attributes, text) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.textContent = text;
  return node;
};

/**
 * Fills the page's #usdc form and shows it when the session offers USDC. One payment at a time:
 * not while another form of the page is on its way (checkout.js marks it aria-busy), and every pay
 * button is disabled while the wallet answers.
 */
async function offerUsdc() {
  const wallet = window.ethereum;
  const form = document.getElementById('usdc');
  if (!form || !wallet.request) return;
  const res = await fetch(location.pathname, { headers: { accept: 'application/json' }, cache: 'no-store' });
  const offer = res.status === 402 ? (await res.json()).accepts?.[0] : undefined;
  if (!offer) return;
  const chain = Number(offer.network.split(':')[1]);
  const hint = element(
    'p',
    { class: 'hint', id: 'usdc-hint' },
    'Approve one payment in your wallet. There is no network fee to pay.',
  );
  const problem = element('p', { class: 'notice bad', id: 'usdc-error', role: 'alert' }, '');
  problem.hidden = true;
  const button = element(
    'button',
    { type: 'button', class: 'primary', 'aria-describedby': 'usdc-hint' },
    `Pay ${usdcText(offer.amount)} USDC`,
  );
  const fieldset = element('fieldset', {}, '');
  fieldset.append(element('legend', {}, 'USDC from your wallet'), hint, problem, button);
  form.append(fieldset);
  form.setAttribute('method', 'post');
  form.setAttribute('action', location.pathname);
  form.append(element('input', { type: 'hidden', name: 'rail', value: 'usdc' }, ''));
  form.classList.add('pay-form');
  form.hidden = false;

  const busy = (on) => {
    for (const b of document.querySelectorAll('form.pay-form button')) b.disabled = on;
  };
  const status = document.getElementById('status');
  button.addEventListener('click', async () => {
    if (document.querySelector('form[aria-busy]') || button.disabled) return;
    busy(true);
    problem.hidden = true;
    status.textContent = 'Waiting for your wallet…';
    let signed;
    try {
      signed = await signAuthorization(wallet, offer, chain);
    } catch (error) {
      problem.textContent = walletWords(error, chain);
      problem.hidden = false;
      status.textContent = 'Waiting for payment.';
      busy(false);
      return;
    }
    for (const [name, value] of Object.entries(signed)) {
      form.append(element('input', { type: 'hidden', name, value }, ''));
    }
    // The buttons stay disabled: the page is on its way (checkout.js takes over from the submit).
    form.requestSubmit();
  });
}

// Imported for its effect (checkout.js); a failure to ask the session leaves the page as it was.
offerUsdc().catch(() => {});
