import t from 'tap'
import { keptBody, RepresentationCache } from '@esp/domain'

t.test('a kept text is found only under its revisions and before its clock bound', async (t) => {
  const cache = new RepresentationCache(1 << 20)
  const text = cache.set('d 1 pd', '5.2.0.1', keptBody('{"id":1}', 1000))
  t.equal(cache.get('d 1 pd', '5.2.0.1', 999), text, 'the same text, so its entity tag is kept too')
  t.equal(cache.get('d 1 pd', '6.2.0.1', 999), undefined, 'another revision misses')
  t.equal(cache.get('d 1 pd', '5.2.0.1', 1000), undefined, 'at the clock bound it misses')
  t.equal(cache.get('d 1 md', '5.2.0.1', 0), undefined, 'another viewer class misses')
  cache.set('d 1 pd', '6.2.0.1', keptBody('{"id":1,"name":"b"}'))
  t.equal(cache.size, 1, 'a new revision replaces the old one under its key')
})

t.test('the bound holds: the least recently used go first, and nothing huge is kept', async (t) => {
  const text = 'x'.repeat(1000)
  const cache = new RepresentationCache(100_000)
  for (let i = 0; i < 200; i++) {
    cache.set(`d ${i}`, '1', keptBody(text, Infinity))
    if (i >= 10) cache.get('d 0', '1', 0)
    t.ok(cache.usedBytes <= cache.maxBytes, 'never past the bound')
  }
  // About 1,300 bytes each with their bookkeeping: some 75 fit.
  t.ok(cache.size > 65 && cache.size < 80, `about the bound's worth of texts kept (${cache.size})`)
  t.not(cache.get('d 0', '1', 0), undefined, 'one read again and again stays')
  t.equal(cache.get('d 1', '1', 0), undefined, 'an old one unread is gone')
  cache.set('huge', '1', keptBody('y'.repeat(10_000), Infinity))
  t.equal(cache.get('huge', '1', 0), undefined, 'a body of more than a sixteenth of the bound is sent, not kept')
  const none = new RepresentationCache(0)
  none.set('d 1', '1', keptBody('{}'))
  t.equal(none.size, 0, 'READ_CACHE_MB=0 keeps nothing')
})
