/**
 * `work`, or what `late` gives when it has not settled within `ms` (a throwing `late` rejects).
 * The timer is cleared either way, so a settled wait keeps nothing alive. The one shape of the
 * platform's deadlines: readiness, the database probes, the embedded server's stop.
 */
export async function withDeadline<T, L> (work: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try { resolve(late()) } catch (err) { reject(err) }
    }, ms)
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}
