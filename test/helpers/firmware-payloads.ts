/**
 * clients.md §1.6: the SCK 2.x firmware's own payloads, replayed byte for byte by the ingest
 * tests and the client conformance suite (the token `3f9a1c` of the notes is the test's own).
 */
export const E1 = (token: string): string => `${token}:Hello`
export const E2 = '{"time":"2026-03-02T03:00:41Z","hw_ver":"2.3","id":"A1B2C3D4504E4B4B372E314AFF0A1B2C","sam_ver":"0.9.11-910fb56-master-sck23_air","sam_bd":"2026-02-10T11:42:07Z","mac":"5E:CF:7F:D1:75:78","esp_ver":"0.9.9-910fb56-master","esp_bd":"2026-02-10T11:40:55Z","rcause":"SYST"}'
export const E3 = '{t:2026-03-02T10:21:00Z,10:87,221:1,220:-67,14:312,55:23.41,56:48.72,53:51.83,58:101.04,113:12,112:412,89:5,87:7,88:9,165:1023,166:301,167:54,168:6,169:1,170:0}'
export const E4 = [
  '{t:2026-03-01T22:14:00Z,10:-1,221:1,14:0,55:17.92,56:71.30,53:38.20,58:100.87,113:3,112:400}',
  '{t:2026-03-01T22:15:00Z,10:-1,221:1,14:0,55:17.88,56:71.41,53:37.95,58:100.87,113:3,112:400}',
  '{t:2026-03-01T22:16:00Z,10:-1,221:1,220:-71,14:0,55:17.85,56:71.52,53:39.10,58:100.86,113:4,112:403}'
]
export const E5 = '{"data":[{"recorded_at":"2019-11-05T08:00:00Z","sensors":[{"id":10,"value":87},{"id":55,"value":23.41},{"id":56,"value":48.72}]},{"recorded_at":"2019-11-05T08:01:00Z","sensors":[{"id":55,"value":23.45}]}]}'
export const E6 = '{t:2026-03-02T10:25:13Z,91:123.45}'
