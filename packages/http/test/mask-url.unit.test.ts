import t from 'tap'
import { maskUrl } from '../src/logger.js'

t.test('credentials in query strings are masked by their decoded names', async (t) => {
  const cases: Array<[string, string]> = [
    ['/v0/me?access_token=abc&pretty=true', '/v0/me?access_token=[REDACTED]&pretty=true'],
    ['/v0/me?access%5Ftoken=abc', '/v0/me?access%5Ftoken=[REDACTED]'],
    ['/v0/me?access%5ftoken=abc#top', '/v0/me?access%5ftoken=[REDACTED]#top'],
    ['/v0/sessions?username=a&pass%77ord=secret', '/v0/sessions?username=a&pass%77ord=[REDACTED]'],
    ['/v0/sessions?username=a&%70%61%73%73%77%6f%72%64=secret', '/v0/sessions?username=a&%70%61%73%73%77%6f%72%64=[REDACTED]'],
    ['/v0/me?ACCESS_TOKEN=abc', '/v0/me?ACCESS_TOKEN=[REDACTED]'],
    ['/v0/me?to%6Ben=abc&%zz=1', '/v0/me?to%6Ben=[REDACTED]&%zz=1'],
    ['/v0/me?x=%E0%A4&bearer%5Ftoken=abc', '/v0/me?x=%E0%A4&bearer%5Ftoken=[REDACTED]'],
    ['/v0/password%5Fresets/the-code?x=1', '/v0/password%5Fresets/[REDACTED]?x=1'],
    ['/v0/devices?q[name_cont]=key&monkey=1', '/v0/devices?q[name_cont]=key&monkey=1']
  ]
  for (const [url, masked] of cases) t.equal(maskUrl(url), masked, url)
})
