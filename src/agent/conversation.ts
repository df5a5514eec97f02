import { JsonNumber } from '../core/json-text.ts';
import { understand } from './planner/plan.ts';
import { tokenize } from './planner/tokens.ts';

/**
 * Asking back inside the conversation (docs/agent.md "The conversation", issue 32 item 2): what a merchant's answer
 * to a run's question means. The runtime (runtime.ts) keeps the conversation and decides what runs;
 * this file only reads the answer, by fixed lists a person can check (docs/agent.md, "The
 * conversation"). Anything not on them is read by the model as the next turn of the conversation.
 */

/** How long a run waits for the merchant's answer before it expires, moving nothing. */
export const ANSWER_WITHIN_MS = 60 * 60_000;

/** One turn of a run's conversation; the first is always the merchant's instruction. */
export interface ConversationTurn {
  role: 'merchant' | 'agent';
  text: string;
}

/** A call a question proposes: shown to the merchant, run only on their "yes" (or a new amount). */
export interface ProposedCall {
  tool: string;
  input: Record<string, unknown>;
}

/**
 * A "yes" to the proposed actions: the whole answer, once lower-cased and stripped of the
 * punctuation around it, is one of these. English, and the plain yes of the languages the agent
 * reads (Spanish/French "sí"/"oui", Swahili "ndiyo"/"sawa", Pidgin "na so").
 */
export const AFFIRMATIONS: ReadonlySet<string> = new Set([
  'yes',
  'y',
  'yes please',
  'yes pls',
  'yes go ahead',
  'yes do it',
  'yeah',
  'yep',
  'ok',
  'okay',
  'ok go ahead',
  'correct',
  "that's correct",
  "that's right",
  'go ahead',
  'confirm',
  'confirmed',
  'do it',
  'proceed',
  'sí',
  'si',
  'oui',
  'ndiyo',
  'sawa',
  'na so',
]);

/** A "no": the run ends `cancelled` and nothing moves. Matched like AFFIRMATIONS. */
export const CANCELLATIONS: ReadonlySet<string> = new Set([
  'no',
  'n',
  'nope',
  'no thanks',
  'no thank you',
  'cancel',
  'cancel it',
  'cancel that',
  'no cancel',
  'no cancel it',
  'stop',
  "don't",
  'do not',
  "don't do it",
  'forget it',
  'never mind',
  'nevermind',
  'non',
  'hapana',
]);

/**
 * Words that may stand around a new amount without changing it: "make it 2000", "2,000 instead",
 * "no, 1,500 USDC please". Any other word (a recipient, a date, a condition) sends the answer to
 * the model as conversation.
 */
const AMOUNT_WORDS: ReadonlySet<string> = new Set([
  'make',
  'it',
  "it's",
  'its',
  'change',
  'to',
  'instead',
  'please',
  'pls',
  'no',
  'ok',
  'okay',
  'actually',
  'sorry',
  'just',
  'use',
  'the',
  'amount',
  'should',
  'be',
  'rather',
  'only',
]);

export type ReplyReading =
  | { kind: 'affirm' }
  | { kind: 'cancel' }
  /** A new amount, as decimal text read by the exact number reader, and the currency written with it. */
  | { kind: 'amount'; amount: string; currency: string | undefined }
  | { kind: 'conversation' };

/** What an answer says, by the lists above; `now` only feeds the lexer's date reading. */
export function readReply(message: string, now: Date): ReplyReading {
  const plain = message
    .normalize('NFC')
    .toLowerCase()
    .replace(/[’`]/g, "'")
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, '')
    .replace(/[\s,]+/g, ' ');
  if (AFFIRMATIONS.has(plain)) return { kind: 'affirm' };
  if (CANCELLATIONS.has(plain)) return { kind: 'cancel' };
  return newAmount(message, now) ?? { kind: 'conversation' };
}

/** "make it 2000", "2,000 instead", "1.5k USDC": exactly one exact amount and only AMOUNT_WORDS. */
function newAmount(message: string, now: Date): ReplyReading | undefined {
  const tokens = tokenize(message, now);
  const amounts = tokens.filter((token) => token.kind === 'amount');
  const [amount] = amounts;
  if (amounts.length !== 1 || amount?.kind !== 'amount') return undefined;
  if (amount.number.type !== 'exact' || amount.negative) return undefined;
  let currency = amount.currency?.code;
  for (const token of tokens) {
    if (token === amount || token.kind === 'punct') continue;
    if (token.kind === 'word' && AMOUNT_WORDS.has(token.lower)) continue;
    if (token.kind === 'currency' && (currency === undefined || currency === token.mention.code)) {
      currency = token.mention.code;
      continue;
    }
    return undefined;
  }
  return { kind: 'amount', amount: amount.number.text, currency };
}

/** Money tools whose amount is in USDC: a new amount in another currency is not theirs. */
const USDC_AMOUNT_TOOLS: ReadonlySet<string> = new Set(['create_payout', 'split_revenue']);

/**
 * The proposed calls with a new amount, when the answer can only mean one: exactly one proposed
 * call has an amount, and the answer's currency (if written) can be that call's. Otherwise
 * undefined, and the answer is read as conversation.
 */
export function withNewAmount(
  proposed: readonly ProposedCall[],
  reading: Extract<ReplyReading, { kind: 'amount' }>,
): ProposedCall[] | undefined {
  const withAmount = proposed.filter((call) => typeof call.input.amount === 'number');
  if (withAmount.length !== 1) return undefined;
  const target = withAmount[0]!;
  if (
    USDC_AMOUNT_TOOLS.has(target.tool) &&
    reading.currency !== undefined &&
    reading.currency !== 'USDC' &&
    reading.currency !== 'DOLLAR'
  ) {
    return undefined;
  }
  // Decimal text the reader produced; a JSON number is how tools take amounts (major units), so
  // only a figure its double holds exactly, judged as the API judges a body's amount (JsonNumber).
  const written = new JsonNumber(reading.amount, Number(reading.amount));
  if (!written.exact) return undefined;
  const amount = written.value;
  return proposed.map((call) => (call === target ? { tool: call.tool, input: { ...call.input, amount } } : call));
}

/**
 * The merchant's turns, in order, as one text. The agent's questions are left out: only the
 * merchant's words move money.
 */
export function merchantText(turns: readonly ConversationTurn[]): string {
  return turns
    .filter((turn) => turn.role === 'merchant')
    .map((turn) => turn.text)
    .join('\n');
}

/**
 * The instruction a conversation comes to, for the model and for grounding alike (one rule):
 * the latest answer alone when it reads as a whole instruction by itself (the merchant wrote the
 * instruction again, as it should run now, and it replaces the earlier ones); else the merchant's
 * turns together (an answer that completes the first message: "0x… is the address"), which the
 * model asks about again when they do not read as one instruction. The latest answer comes first:
 * read together with it, an earlier figure it replaces ("2.000", then "sorry, pay 2 USDC …") would
 * still hold the call. Read by the planner's grammar, whatever the model: so a condition, a wait or
 * an unclear figure of an earlier turn keeps holding every money call until the merchant writes the
 * instruction again without it, or answers yes to the calls proposed.
 */
export function conversationInstruction(turns: readonly ConversationTurn[], now: Date): string {
  const latest = turns.at(-1);
  if (latest?.role === 'merchant' && turns.length > 1 && understand(latest.text, now).ok) return latest.text;
  return merchantText(turns);
}
