// Waiting for a condition in a test, instead of sleeping for a guess.

/** Resolves with what `check` returns once it is truthy, checked on every turn of the event loop
 *  (so sockets and timers run between checks); rejects after `timeoutMs`. */
export async function until<T>(check: () => T | undefined | false, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value) return value
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}
