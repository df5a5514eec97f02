import { z } from 'zod';
import { DEFAULT_AGENT_MODEL, DEFAULT_MAX_TOKENS } from '../agent/models/claude-models.ts';
import { LOG_FORMAT_SETTINGS, type LogFormatSetting } from '../core/log-format.ts';

/**
 * The only reader of process.env (STYLE.md 7). Every variable is parsed once, with a
 * default where the embedded setup needs one, and the result is frozen. docs/configuration.md
 * lists the same variables; keep the two in step.
 */

const port = z.coerce.number().int().min(0).max(65535);
const flag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes');
const httpUrl = z.url({ protocol: /^https?$/ });
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x EVM address (0x and 40 hex characters)');
/** A token an operator sends as a bearer (METRICS_TOKEN, OPERATOR_TOKEN). */
const bearerToken = z
  .string()
  .regex(
    /^[A-Za-z0-9._~+/-]{16,}=*$/,
    'must be at least 16 characters of A-Z, a-z, 0-9 and -._~+/ (it is sent as a bearer token)',
  );
const optionalString = z
  .string()
  .transform((v) => (v.trim() === '' ? undefined : v.trim()))
  .optional();

const envSchema = z.object({
  PORT: port.default(3000),
  CHECKOUT_PORT: port.default(3001),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_BASE_URL: httpUrl.optional(),
  CHECKOUT_BASE_URL: httpUrl.optional(),
  DATABASE_URL: optionalString.pipe(z.url({ protocol: /^postgres(ql)?$/ }).optional()),
  DATABASE_PREPARED_STATEMENTS: flag.default(true),
  PLAINPAY_DATA_DIR: z.string().min(1).default('./.plainpay'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(LOG_FORMAT_SETTINGS).default('auto'),
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(1).max(1_000_000).default(100),
  REDIS_URL: optionalString.pipe(z.url({ protocol: /^rediss?$/ }).optional()),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(10_485_760).default(1_048_576),
  DEMO_ACCOUNT: flag.default(true),
  CHAIN_RPC_URL: optionalString.pipe(httpUrl.optional()),
  CHAIN_ID: z.coerce.number().int().positive().optional(),
  SETTLEMENT_TOKEN_ADDRESS: optionalString.pipe(evmAddress.optional()),
  BATCH_CONTRACT_ADDRESS: optionalString.pipe(evmAddress.optional()),
  RELAYER_PRIVATE_KEY: optionalString.pipe(
    z
      .string()
      .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hex characters')
      .optional(),
  ),
  // Unset: the safe default for the chain id (src/chain/chain.ts chainSafetyDepths; docs/configuration.md).
  CONFIRMATIONS: z.coerce.number().int().min(1).max(1000).optional(),
  SETTLEMENT_BATCH_MAX: z.coerce.number().int().min(1).max(500).default(100),
  SETTLEMENT_BATCH_WINDOW_MS: z.coerce.number().int().min(0).max(600_000).default(200),
  SETTLEMENT_BATCH_MAX_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(800),
  // The length of the `hourly` window (a day is 24 of them). Tests and the benchmark shorten it.
  SETTLEMENT_HOUR_MS: z.coerce.number().int().min(1000).max(3_600_000).default(3_600_000),
  WEBHOOK_ALLOW_PRIVATE: flag.default(false),
  FX_RATES_FILE: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: optionalString.pipe(httpUrl.optional()),
  AGENT_MODEL: z.string().min(1).default(DEFAULT_AGENT_MODEL),
  AGENT_MAX_STEPS: z.coerce.number().int().min(1).max(50).default(10),
  AGENT_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
  AGENT_MAX_TOKENS: z.coerce.number().int().min(256).max(128_000).default(DEFAULT_MAX_TOKENS),
  PAYSTACK_BASE_URL: httpUrl.default('https://api.paystack.co'),
  PAYSTACK_CHECKOUT_ORIGIN: httpUrl.default('https://checkout.paystack.com'),
  MPESA_SANDBOX_BASE_URL: httpUrl.default('https://sandbox.safaricom.co.ke'),
  MPESA_PRODUCTION_BASE_URL: httpUrl.default('https://api.safaricom.co.ke'),
  RAIL_TIMEOUT_MS: z.coerce.number().int().min(1000).max(120_000).default(15_000),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(25_000),
  METRICS_TOKEN: optionalString.pipe(bearerToken.optional()),
  OPERATOR_TOKEN: optionalString.pipe(bearerToken.optional()),
  PLAINPAY_MASTER_KEY: optionalString.pipe(
    z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
      .optional(),
  ),
});

export type Config = Readonly<{
  port: number;
  checkoutPort: number;
  host: string;
  /** Base URL of the API host, used in links we hand out (approve URLs, docs). */
  publicBaseUrl: string;
  /** The seed's {checkout_host}: where checkout_url points. */
  checkoutBaseUrl: string;
  database: Readonly<
    { kind: 'postgres'; url: string; preparedStatements: boolean } | { kind: 'pglite'; dataDir: string }
  >;
  dataDir: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  /** `plainpay serve`'s log lines: auto (pretty on a terminal, else JSON), json or pretty (core/log-format.ts). */
  logFormat: LogFormatSetting;
  rateLimit: Readonly<{ perSecond: number; redisUrl: string | undefined }>;
  bodyLimitBytes: number;
  /** Create a demo account with a test key on first start of an empty database. */
  demoAccount: boolean;
  /** Embedded devnet when rpcUrl is unset; otherwise a real node and the deployed contracts. */
  chain: Readonly<{
    rpcUrl: string | undefined;
    chainId: number | undefined;
    tokenAddress: `0x${string}` | undefined;
    batchAddress: `0x${string}` | undefined;
    relayerPrivateKey: `0x${string}` | undefined;
    /** undefined: the chain's default depth (chainSafetyDepths). */
    confirmations: number | undefined;
  }>;
  settlement: Readonly<{
    /** Most lines (recipients) in one batch call. */
    batchMax: number;
    /** An instant partial batch goes out once no transfer has arrived for this long… */
    batchWindowMs: number;
    /** …or once its oldest transfer has waited this long (at least batchWindowMs). */
    batchMaxWaitMs: number;
    /** The hourly window's length in ms (3 600 000; tests shorten it). */
    hourMs: number;
  }>;
  /** Lifts the SSRF guard on webhook targets: local development and tests only. */
  webhookAllowPrivate: boolean;
  /** The agent's model: Claude when an API key is set, else the offline planner. */
  agent: Readonly<{
    anthropicApiKey: string | undefined;
    anthropicBaseUrl: string | undefined;
    model: string;
    /** Tool calls one run may make before it is stopped. */
    maxSteps: number;
    /** Wall time one run may take. */
    timeoutMs: number;
    /** Output tokens one model turn may generate (`max_tokens`); a turn cut there ends the run incomplete. */
    maxTokens: number;
  }>;
  /** JSON rates file overriding the built-in sandbox FX table. */
  fxRatesFile: string | undefined;
  /** Where the payer rails' providers are (docs/rails.md); tests and demos point them at local fakes. */
  rails: Readonly<{
    paystackBaseUrl: string;
    /** The origin of Paystack's payment pages: the checkout page's form may send the payer there. */
    paystackCheckoutOrigin: string;
    mpesaBaseUrls: Readonly<{ sandbox: string; production: string }>;
    /** Deadline of one call to a provider. */
    timeoutMs: number;
  }>;
  /** Base64 of 32 bytes that encrypts stored secrets; generated into dataDir when absent. */
  masterKey: string | undefined;
  /** The bearer token operators send to read GET /metrics; unset: the API host has no /metrics. */
  metricsToken: string | undefined;
  /**
   * The bearer token of the operator's own API (instance-wide money: the reconciliation, under
   * /operator/); unset: the API host has no /operator/ routes. Never a merchant's: not an API key.
   */
  operatorToken: string | undefined;
  /** How long a graceful stop (SIGTERM) may take before the process exits non-zero anyway. */
  shutdownTimeoutMs: number;
}>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment into a frozen Config, or throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = issue.path.join('.');
        const value = env[name];
        return `${name}${value === undefined ? '' : `=${JSON.stringify(value)}`}: ${issue.message}`;
      }),
    );
  }
  const e = parsed.data;
  if (e.OPERATOR_TOKEN !== undefined && e.OPERATOR_TOKEN === e.METRICS_TOKEN) {
    throw new ConfigError([
      'OPERATOR_TOKEN: must differ from METRICS_TOKEN: whoever scrapes the metrics must not read instance-wide money',
    ]);
  }
  const config: Config = {
    port: e.PORT,
    checkoutPort: e.CHECKOUT_PORT,
    host: e.HOST,
    publicBaseUrl: stripSlash(e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`),
    checkoutBaseUrl: stripSlash(e.CHECKOUT_BASE_URL ?? `http://localhost:${e.CHECKOUT_PORT}`),
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, preparedStatements: e.DATABASE_PREPARED_STATEMENTS }
      : { kind: 'pglite', dataDir: `${stripSlash(e.PLAINPAY_DATA_DIR)}/pgdata` },
    dataDir: stripSlash(e.PLAINPAY_DATA_DIR),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    rateLimit: { perSecond: e.RATE_LIMIT_PER_SECOND, redisUrl: e.REDIS_URL },
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    demoAccount: e.DEMO_ACCOUNT,
    masterKey: e.PLAINPAY_MASTER_KEY,
    metricsToken: e.METRICS_TOKEN,
    operatorToken: e.OPERATOR_TOKEN,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    chain: {
      rpcUrl: e.CHAIN_RPC_URL,
      chainId: e.CHAIN_ID,
      tokenAddress: e.SETTLEMENT_TOKEN_ADDRESS as `0x${string}` | undefined,
      batchAddress: e.BATCH_CONTRACT_ADDRESS as `0x${string}` | undefined,
      relayerPrivateKey: e.RELAYER_PRIVATE_KEY as `0x${string}` | undefined,
      confirmations: e.CONFIRMATIONS,
    },
    settlement: {
      batchMax: e.SETTLEMENT_BATCH_MAX,
      batchWindowMs: e.SETTLEMENT_BATCH_WINDOW_MS,
      batchMaxWaitMs: Math.max(e.SETTLEMENT_BATCH_MAX_WAIT_MS, e.SETTLEMENT_BATCH_WINDOW_MS),
      hourMs: e.SETTLEMENT_HOUR_MS,
    },
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    fxRatesFile: e.FX_RATES_FILE,
    rails: {
      paystackBaseUrl: stripSlash(e.PAYSTACK_BASE_URL),
      paystackCheckoutOrigin: new URL(e.PAYSTACK_CHECKOUT_ORIGIN).origin,
      mpesaBaseUrls: {
        sandbox: stripSlash(e.MPESA_SANDBOX_BASE_URL),
        production: stripSlash(e.MPESA_PRODUCTION_BASE_URL),
      },
      timeoutMs: e.RAIL_TIMEOUT_MS,
    },
    agent: {
      anthropicApiKey: e.ANTHROPIC_API_KEY,
      anthropicBaseUrl: e.ANTHROPIC_BASE_URL,
      model: e.AGENT_MODEL,
      maxSteps: e.AGENT_MAX_STEPS,
      timeoutMs: e.AGENT_TIMEOUT_MS,
      maxTokens: e.AGENT_MAX_TOKENS,
    },
  };
  return deepFreeze(config);
}

function stripSlash(value: string): string {
  return value.endsWith('/') ? value.slice(0, -1) : value;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
