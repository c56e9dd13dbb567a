import t from 'tap'
import { Type } from '@sinclair/typebox'
import { ConfigError, DbConfig, explicitKeys, HttpConfig, loadConfig, MqttConfig } from '@esp/config'

const Schema = Type.Composite([DbConfig, HttpConfig, MqttConfig])

t.test('defaults apply when nothing is set, and empty strings count as unset', async (t) => {
  const config = loadConfig(Schema, { PORT: '', DATA_DIR: '  ' })
  t.equal(config.PORT, 3000)
  t.equal(config.MQTT_PORT, 1883)
  t.equal(config.DATA_DIR, './.data')
  t.equal(config.DATABASE_URL, undefined)
  t.equal(config.TRUST_PROXY, false)
})

t.test('values are converted to their types', async (t) => {
  const config = loadConfig(Schema, { PORT: '0', TRUST_PROXY: 'true', DATABASE_URL: 'postgres://u@h/db', DATABASE_POOL_MAX: '3' })
  t.equal(config.PORT, 0)
  t.equal(config.TRUST_PROXY, true)
  t.equal(config.DATABASE_POOL_MAX, 3)
  t.equal(config.DATABASE_URL, 'postgres://u@h/db')
})

t.test('every bad key is reported in one message', async (t) => {
  const env = { PORT: 'abc', MQTT_PORT: '70000', DATABASE_URL: 'mysql://x', PUBLIC_URL: 'example.org/' }
  const error = t.throws(() => loadConfig(Schema, env)) as ConfigError
  t.type(error, ConfigError)
  t.equal(error.problems.length, 4, error.message)
  for (const key of Object.keys(env)) t.match(error.message, new RegExp(`^  - ${key} `, 'm'))
  t.match(error.message, /PORT must be a TCP port for HTTP \(0 picks a free one\) \(got "abc"\)/)
  t.match(error.message, /\.env\.example/)
})

t.test('explicit keys are the ones the environment sets', async (t) => {
  t.same([...explicitKeys(Schema, { PORT: '3000', MQTT_PORT: '', OTHER: 'x' })], ['PORT'])
})

t.test('CORS_ORIGINS takes a comma-separated list of origins', async (t) => {
  t.equal(loadConfig(Schema, { CORS_ORIGINS: 'https://a.example.org,http://localhost:8080' }).CORS_ORIGINS, 'https://a.example.org,http://localhost:8080')
  t.throws(() => loadConfig(Schema, { CORS_ORIGINS: 'a.example.org' }), /CORS_ORIGINS/)
})

t.test('DATABASE_READ_URL takes postgres URLs separated by commas; the lag limit has a default', async (t) => {
  t.equal(loadConfig(Schema, {}).DATABASE_READ_URL, undefined)
  t.equal(loadConfig(Schema, {}).DATABASE_READ_MAX_LAG_SECONDS, 5)
  const urls = 'postgres://esp:secret@replica-1:5432/esp, postgresql://esp:secret@replica-2/esp'
  t.equal(loadConfig(Schema, { DATABASE_READ_URL: urls, DATABASE_READ_MAX_LAG_SECONDS: '30' }).DATABASE_READ_URL, urls)
  const error = t.throws(() => loadConfig(Schema, { DATABASE_READ_URL: 'postgres://esp:secret@replica-1/esp,mysql://esp:hunter2@x/db', DATABASE_READ_MAX_LAG_SECONDS: '1' })) as ConfigError
  t.equal(error.problems.length, 2, error.message)
  t.match(error.message, /DATABASE_READ_URL must be postgres:\/\/ URLs separated by commas/)
  t.notMatch(error.message, /secret|hunter2/, 'passwords are not shown back')
  t.match(error.message, /esp:\*\*\*@replica-1/)
})
