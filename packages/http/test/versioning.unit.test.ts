import t from 'tap'
import { createUrlRewriter } from '@esp/http'

const rewrite = createUrlRewriter('smartcitizen')

t.test('paths without a version are v0', async (t) => {
  t.equal(rewrite('/', undefined), '/v0/')
  t.equal(rewrite('/devices?page=2', undefined), '/v0/devices?page=2')
  t.equal(rewrite('/v0/devices', undefined), '/v0/devices')
  t.equal(rewrite('/v0', undefined), '/v0')
})

t.test('the Accept header chooses the version of an unversioned path', async (t) => {
  t.equal(rewrite('/me', 'application/vnd.smartcitizen; version=0,application/json'), '/v0/me')
  t.equal(rewrite('/me', 'application/vnd.smartcitizen;version=1'), '/v1/me')
  t.equal(rewrite('/v0/me', 'application/vnd.smartcitizen; version=1'), '/v0/me', 'the path wins')
  t.equal(rewrite('/me', 'application/vnd.other; version=1'), '/v0/me', 'another vendor is ignored')
})

t.test('doubled slashes and the .json suffix are tolerated', async (t) => {
  t.equal(rewrite('//me', undefined), '/v0/me')
  t.equal(rewrite('/v0//devices//1', undefined), '/v0/devices/1')
  t.equal(rewrite('/sensors.json?x=a.json', undefined), '/v0/sensors?x=a.json')
})

t.test('service paths keep no version', async (t) => {
  for (const path of ['/health/live', '/health/ready', '/docs', '/docs/json', '/metrics', '/mqtt']) {
    t.equal(rewrite(path, undefined), path)
  }
  t.equal(rewrite('/healthy', undefined), '/v0/healthy')
})
