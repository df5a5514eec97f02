/** A ceiling only a hang reaches: far above any honest run on a loaded machine, below the test timeout. */
export const HANG_CEILING_MS = 20_000;

/**
 * Whether `work` settles before the hang ceiling. Tests that a call returns instead of waiting
 * forever assert on this, not on how many milliseconds it took: a busy machine makes any tight
 * bound fail for no fault of the code.
 */
export async function settlesBeforeHang<T>(
  work: Promise<T>,
): Promise<{ settled: true; value: T } | { settled: false }> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<{ settled: false }>((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), HANG_CEILING_MS);
  });
  try {
    return await Promise.race([work.then((value) => ({ settled: true as const, value })), hang]);
  } finally {
    clearTimeout(timer);
  }
}
