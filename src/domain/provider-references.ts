// What a provider knows an attempt by, derived from the attempt's own id: the system tool that
// starts an attempt records it, and the rail that calls the provider sends it.

/** A Paystack reference allows letters, digits, '-', '.' and '=': the attempt id with its '_' swapped. */
export function paystackReference(attemptId: string): string {
  return attemptId.replace('_', '-');
}
