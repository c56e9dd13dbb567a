import t from 'tap'
import { databaseAddress, parseLsn, readUrls } from '@esp/db'

t.test('WAL positions are read as byte offsets', async (t) => {
  t.equal(parseLsn('0/0'), 0n)
  t.equal(parseLsn('0/16B3748'), 0x16B3748n)
  t.equal(parseLsn('16/B374D848') - parseLsn('16/B374D840'), 8n)
  t.equal(parseLsn('1/0') - parseLsn('0/FFFFFFFF'), 1n, 'the high half counts 2^32 bytes')
  t.throws(() => parseLsn('not a position'))
})

t.test('a replica is named by host and port, never by its credentials', async (t) => {
  t.equal(databaseAddress('postgres://esp:secret@replica-1:6432/esp'), 'replica-1:6432')
  t.equal(databaseAddress('postgresql://esp:secret@replica-2/esp'), 'replica-2:5432')
  t.equal(databaseAddress('::not a url::'), 'unparsable-url')
})

t.test('DATABASE_READ_URL is split on commas, blanks ignored', async (t) => {
  t.same(readUrls(undefined), [])
  t.same(readUrls(''), [])
  t.same(readUrls('postgres://a/x, postgres://b/x ,'), ['postgres://a/x', 'postgres://b/x'])
})
