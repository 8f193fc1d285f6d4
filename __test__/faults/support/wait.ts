// Awaiting conditions instead of sleeping: `until` re-checks on every event it is woken for, and
// at least every 20 ms, and rejects after its timeout.

export class Waiter {
  private waiters: (() => void)[] = []

  wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  async until<T>(check: () => T | undefined | false | null, what: string, timeoutMs = 5000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = check()
      if (value !== undefined && value !== false && value !== null) return value
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 20))
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }
}

/** A waiter for conditions nothing wakes (polled every 20 ms). */
export const poll = new Waiter()

/** Polls `check` every `everyMs` (default 5) and resolves with Date.now() when it first holds. */
export async function whenTrue(check: () => boolean, what: string, timeoutMs: number, everyMs = 5): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (check()) return Date.now()
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
