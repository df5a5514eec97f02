// The x402 v2 messages plainpay reads and writes as a facilitator, for the `exact` scheme on EVM.
// Shapes from the x402 v2 specification (coinbase/x402 specs/x402-specification-v2.md: 5.1
// PaymentRequirements, 5.2 PaymentPayload, 5.3 SettlementResponse, 5.4 VerifyResponse, 7.1-7.3 the
// facilitator's /verify, /settle and /supported) and the exact EVM scheme's payload (EIP-3009
// authorization + signature). What the published client and middleware send was read from
// @x402/core 2.27's HTTPFacilitatorClient: `{ x402Version, paymentPayload, paymentRequirements }`.

import { z } from 'zod';

/** The protocol version plainpay speaks. */
export const X402_VERSION = 2;

/**
 * Reasons a payment is refused. The specification's codes (section 9) where it has one; where it
 * has none, the code x402's reference facilitator (@x402/evm `exact/facilitator/errors.ts`) uses.
 */
export const X402_REASONS = {
  insufficientFunds: 'insufficient_funds',
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  value: 'invalid_exact_evm_payload_authorization_value',
  signature: 'invalid_exact_evm_payload_signature',
  recipientMismatch: 'invalid_exact_evm_payload_recipient_mismatch',
  network: 'invalid_network',
  payload: 'invalid_payload',
  requirements: 'invalid_payment_requirements',
  scheme: 'unsupported_scheme',
  version: 'invalid_x402_version',
  transactionState: 'invalid_transaction_state',
  unexpectedVerify: 'unexpected_verify_error',
  unexpectedSettle: 'unexpected_settle_error',
  /** Not in the specification's list: the reference facilitator's code for a used or canceled nonce. */
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
} as const;
export type X402Reason = (typeof X402_REASONS)[keyof typeof X402_REASONS];

const address = z.string().regex(/^0[xX][0-9a-fA-F]{40}$/, 'a 0x-prefixed 20-byte hex address');
const uint = z
  .string()
  .regex(/^(0[xX][0-9a-fA-F]{1,64}|[0-9]{1,78})$/, 'a base-10 integer string (or 0x hex)')
  .refine((s) => BigInt(s) < 2n ** 256n, 'at most 2^256 - 1');

export const resourceInfo = z
  .object({
    url: z.string().max(2048).describe('URL of the protected resource.'),
    description: z.string().max(1000).optional().describe('What the resource is.'),
    mimeType: z.string().max(200).optional().describe('MIME type of the resource.'),
  })
  .describe('The resource paid for (x402 ResourceInfo).');

export const paymentRequirements = z
  .object({
    scheme: z.string().max(64).describe('Payment scheme; plainpay supports "exact".'),
    network: z.string().max(100).describe('CAIP-2 network id, e.g. "eip155:8453".'),
    amount: uint.describe('Amount in atomic units of the asset (USDC: 6 decimals), as a base-10 string.'),
    asset: address.describe('The token contract (USDC).'),
    payTo: address.describe("Recipient: plainpay's treasury, as GET /x402/supported names it."),
    maxTimeoutSeconds: z.number().int().min(0).max(86_400).describe('How long the payment may take.'),
    extra: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Scheme data; for exact on EVM the token\'s EIP-712 domain "name" and "version".'),
  })
  .describe('One acceptable way to pay (x402 PaymentRequirements).');
export type PaymentRequirements = z.output<typeof paymentRequirements>;

export const exactEvmAuthorization = z
  .object({
    from: address.describe('The payer.'),
    to: address.describe('The recipient; must equal payTo.'),
    value: uint.describe('Atomic units authorized.'),
    validAfter: uint.describe('Unix seconds after which it is valid.'),
    validBefore: uint.describe('Unix seconds before which it is valid.'),
    nonce: z
      .string()
      .regex(/^0[xX][0-9a-fA-F]{64}$/, 'a 32-byte 0x hex nonce')
      .describe('32-byte random nonce (EIP-3009).'),
  })
  .describe('The EIP-3009 TransferWithAuthorization message the payer signed.');

export const exactEvmPayload = z
  .object({
    signature: z
      .string()
      .regex(/^0[xX]([0-9a-fA-F]{2})+$/, 'a 0x hex signature')
      .max(20_000)
      .describe('EIP-712 signature of the authorization (65-byte ECDSA, or a contract wallet signature).'),
    authorization: exactEvmAuthorization,
  })
  .describe('The exact EVM scheme payload.');
export type ExactEvmPayload = z.output<typeof exactEvmPayload>;

export const paymentPayload = z
  .object({
    x402Version: z.number().int().describe('Protocol version: 2.'),
    resource: resourceInfo.optional(),
    accepted: paymentRequirements.describe('The requirements the client chose to pay.'),
    payload: z
      .record(z.string(), z.unknown())
      .describe('Scheme-specific data: for exact on EVM, signature + authorization.'),
    extensions: z.record(z.string(), z.unknown()).optional().describe('Protocol extensions (ignored).'),
  })
  .describe('A signed payment (x402 PaymentPayload).');
export type PaymentPayload = z.output<typeof paymentPayload>;

/** The body of POST /x402/verify and POST /x402/settle (spec 7.1, 7.2). */
export const facilitatorRequest = z
  .object({
    x402Version: z.number().int().optional().describe('Protocol version of the payload (the client sends it).'),
    paymentPayload: z.unknown().describe('The PaymentPayload from the PAYMENT-SIGNATURE header, decoded.'),
    paymentRequirements: z.unknown().describe('The PaymentRequirements the resource server asked for.'),
  })
  .describe('What the resource server asks the facilitator to verify or settle.');

export const verifyResponse = z
  .object({
    isValid: z.boolean().describe('Whether the payment would settle.'),
    invalidReason: z.string().optional().describe('Why not: the specification\'s code, e.g. "insufficient_funds".'),
    invalidMessage: z.string().optional().describe('The same in words.'),
    payer: z.string().optional().describe("The payer's address, when the payload names one."),
  })
  .describe('x402 VerifyResponse (spec 5.4).');
export type VerifyResponse = z.output<typeof verifyResponse>;

export const settleResponse = z
  .object({
    success: z.boolean().describe('Whether the transfer is on chain and the payment paid.'),
    errorReason: z
      .string()
      .optional()
      .describe('Why not: the specification\'s code, e.g. "invalid_exact_evm_payload_signature".'),
    errorMessage: z.string().optional().describe('The same in words.'),
    payer: z.string().optional().describe("The payer's address, when the payload names one."),
    transaction: z.string().describe('The transaction hash of the transfer; "" when there is none.'),
    network: z.string().describe('CAIP-2 id of the chain.'),
  })
  .describe('x402 SettleResponse (spec 5.3).');
export type SettleResponse = z.output<typeof settleResponse>;

export const supportedResponse = z
  .object({
    kinds: z
      .array(
        z.object({
          x402Version: z.number().int().describe('2.'),
          scheme: z.string().describe('"exact".'),
          network: z.string().describe('CAIP-2 id of the chain plainpay settles on.'),
          extra: z
            .object({
              asset: z.string().describe('The USDC contract payments must be made in.'),
              payTo: z.string().describe("plainpay's treasury: the payTo a merchant's requirements must carry."),
              name: z.string().describe("The token's EIP-712 domain name."),
              version: z.string().describe("The token's EIP-712 domain version."),
              decimals: z.number().int().describe('Decimals of the asset (6).'),
            })
            .describe('What a merchant puts in its payment requirements to be paid through plainpay.'),
        }),
      )
      .describe('Payment kinds plainpay verifies and settles.'),
    extensions: z.array(z.string()).describe('Extensions implemented: none.'),
    signers: z
      .record(z.string(), z.array(z.string()))
      .describe('Addresses that submit settlements, by CAIP-2 pattern.'),
  })
  .describe('x402 SupportedResponse (spec 7.3).');
export type SupportedResponse = z.output<typeof supportedResponse>;

/** CAIP-2 id of an EVM chain. */
export function caip2(chainId: number): string {
  return `eip155:${chainId}`;
}
