import t from 'tap'
import { argon2Running, hashPassword, verifyPassword } from '@esp/domain'

t.test('at most two argon2 runs hold their memory at once; the others wait and all finish', async (t) => {
  let most = 0
  const watch = setInterval(() => { most = Math.max(most, argon2Running()) }, 1)
  const hashes = await Promise.all(Array.from({ length: 6 }, async (_, i) => await hashPassword(`password number ${i}`)))
  const checks = await Promise.all([
    ...hashes.map(async (stored, i) => await verifyPassword(stored, `password number ${i}`)),
    verifyPassword(hashes[0], 'the wrong one'),
    verifyPassword(null, 'an unknown account')
  ])
  clearInterval(watch)
  t.same(checks, [true, true, true, true, true, true, false, false], 'every hash verifies its own password, and only it')
  t.ok(most >= 1 && most <= 2, `at most two at once (saw ${most})`)
  t.equal(argon2Running(), 0, 'every slot is given back')
})
