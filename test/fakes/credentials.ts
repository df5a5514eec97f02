/** Provider credentials the fakes know (tests and `npm run fake-rails`); no real provider takes them. */
export const PAYSTACK_TEST_KEY = 'sk_test_4f1c2a9b8e7d6c5b4a3928171615141312111009';
export const PAYSTACK_LIVE_KEY = 'sk_live_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b';
/** A merchant's own Paystack integration (test/collection.test.ts): money there is the merchant's, not the operator's. */
export const PAYSTACK_MERCHANT_OWN_KEY = 'sk_test_0aa1bb2cc3dd4ee5ff6a7b8c9d0e1f2a3b4c5d6e';
export const MPESA_APP = {
  consumer_key: 'GtYk3Qp7LmN2xRv8WbZc',
  consumer_secret: 'Hs9Df2Jk5Lq8Wm1P',
  shortcode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919',
  environment: 'sandbox',
} as const;
