// Catching what a test's code lets escape: an uncaught exception or an unhandled rejection.

/** Runs `body` with listeners for uncaught exceptions and unhandled rejections, and resolves with
 *  everything they caught (`body` waits long enough for a stray rejection to surface). */
export async function escapesOf(body: () => Promise<void>): Promise<unknown[]> {
  const escaped: unknown[] = []
  const onEscape = (e: unknown) => void escaped.push(e)
  process.on('unhandledRejection', onEscape)
  process.on('uncaughtException', onEscape)
  try {
    await body()
  } finally {
    process.off('unhandledRejection', onEscape)
    process.off('uncaughtException', onEscape)
  }
  return escaped
}
