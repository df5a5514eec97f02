import { parseArgs } from 'node:util';
import { adoptObservedChain, ChainAdoptionError, describeChainIdentity } from '../settlement/chain-health.ts';
import { AppError } from '../core/errors.ts';
import { type DatabaseCommand, parseStrict } from './command.ts';
import { EXIT } from './failures.ts';

/**
 * `plainpay chain adopt [CHAIN_KEY] [--old-chain-gone]`: the operator's answer when a settlement
 * worker found its node serving another chain than the one settlement signs for (it refuses to
 * sign until then). Without a key it shows the state; with the observed key it makes that chain
 * the one settlement signs for.
 */
export const chainAdopt: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Arguments:
  CHAIN_KEY          The chain to accept, exactly as the worker's error log, /readyz and this
                     command without arguments show it: <chain id>:<genesis hash>.

Options:
  --old-chain-gone   Also declare the previous chain gone for good (a reset test node): batches
                     sent on it and not confirmed go back to planned, with the same batch id, and
                     are signed again on the new chain. Refused unless the previous chain is a
                     local development node (chain id 31337 or 1337).
                     Never use it if the previous chain can come back: its signed transactions
                     could still land there, and the same batches would be paid on both chains.
  --json             Print the result as JSON.

Without --old-chain-gone, batches sent on the previous chain stay on it, untouched (they are
followed again if the node serves that chain again and it is adopted back); the stuck-batch
alarm keeps reporting them. Confirmed settlements on the previous chain are never changed.
Workers see the adoption on their next turn; no restart is needed unless the chain id changed.
See docs/operations.md, "Node serving another chain".`,
  parse(args) {
    const { values, positionals } = parseStrict(() =>
      parseArgs({
        args,
        allowPositionals: true,
        options: { json: { type: 'boolean', default: false }, 'old-chain-gone': { type: 'boolean', default: false } },
      }),
    );
    const chainKey = positionals[0];
    return async ({ db, runtime }, out) => {
      if (chainKey === undefined) {
        const state = await describeChainIdentity(db);
        if (values.json) {
          // snake_case, as every JSON the API and the CLI print.
          out.stdout(
            JSON.stringify({
              object: 'settlement_chain',
              expected: state.expected,
              adopted_by: state.adoptedBy,
              observed: state.observed,
              observed_at: state.observedAt?.toISOString() ?? null,
              open_batches_on_expected: state.openBatchesOnExpected,
            }),
          );
        } else if (state.expected === null) {
          out.stdout('No chain recorded yet: a settlement worker records the first chain it signs for.');
        } else if (state.observed === state.expected) {
          out.stdout(
            `Settlement signs for ${state.expected} and the node serves it, but a worker connected for another chain id.\n` +
              'Nothing to adopt: restart that worker, and check CHAIN_RPC_URL and the chain configuration.',
          );
        } else if (state.observed === null) {
          out.stdout(`Settlement signs for ${state.expected} (${state.adoptedBy}); no other chain observed.`);
        } else {
          out.stdout(
            `Settlement signs for ${state.expected}, but a worker's node serves ${state.observed} (since ${state.observedAt?.toISOString()}).\n` +
              `${state.openBatchesOnExpected} batches are in flight on ${state.expected}.\n` +
              `If CHAIN_RPC_URL is right and the new chain is meant: plainpay chain adopt ${state.observed}`,
          );
        }
        return EXIT.ok;
      }
      // The adoption's batch steps are system tools, run through the pipeline with the runtime's
      // clock and services.
      if (!runtime) throw new Error('plainpay chain adopt needs the service runtime, which this context lacks');
      let adopted: Awaited<ReturnType<typeof adoptObservedChain>>;
      try {
        adopted = await adoptObservedChain(await runtime(), chainKey, { oldChainGone: values['old-chain-gone'] });
      } catch (error) {
        // The typed refusal becomes the error object (exit 1) in the CLI's one place (failures.ts).
        if (error instanceof ChainAdoptionError)
          throw new AppError('conflict', error.message, { param: 'chain_key', cause: error });
        throw error;
      }
      if (values.json) {
        out.stdout(
          JSON.stringify({
            object: 'chain_adoption',
            previous: adopted.previous,
            adopted: adopted.adopted,
            stranded_batches: adopted.strandedBatches,
            replanned_batches: adopted.replannedBatches,
          }),
        );
      } else {
        out.stdout(
          `Settlement now signs for ${adopted.adopted} (was ${adopted.previous}). ` +
            (adopted.replannedBatches > 0
              ? `${adopted.replannedBatches} batches from the old chain will be signed again on the new one.`
              : `${adopted.strandedBatches} batches stay on the old chain, untouched.`),
        );
      }
      return EXIT.ok;
    };
  },
};
