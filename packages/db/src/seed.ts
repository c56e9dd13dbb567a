import type { Handle } from './client.js'
import { kits, measurements, sensors } from './seed/catalogue-data.js'

/**
 * Seeds the real Smart Citizen catalogue. Rows keep their platform ids, because devices in the
 * field post those ids; existing rows are left as they are, so an admin's edits survive restarts.
 */
export async function seedCatalogue ({ sql }: Pick<Handle, 'sql'>): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`
      insert into measurements ${tx(measurements.map((m) => ({ id: m.id, name: m.name, description: m.description, definition: m.definition })))}
      on conflict do nothing`
    // Parents are linked after every sensor exists, so the self-reference holds at any depth.
    const inserted = await tx<{ id: number }[]>`
      insert into sensors ${tx(sensors.map((s) => ({
        id: s.id,
        name: s.name,
        description: s.description,
        unit: s.unit,
        measurement_id: s.measurementId,
        default_key: s.defaultKey,
        datasheet: s.datasheet,
        unit_definition: s.unitDefinition,
        equation: s.equation,
        reverse_equation: s.reverseEquation
      })))}
      on conflict do nothing
      returning id`
    const fresh = new Set(inserted.map((row) => row.id))
    const links = sensors.filter((s) => s.parentId !== null && fresh.has(s.id)).map((s) => [s.id, s.parentId ?? 0])
    if (links.length > 0) {
      await tx`
        update sensors set parent_id = link.parent_id::int
        from (values ${tx(links)}) as link(id, parent_id)
        where sensors.id = link.id::int`
    }
    await tx`
      insert into kits ${tx(kits.map((k) => ({ id: k.id, slug: k.slug, name: k.name, description: k.description })))}
      on conflict do nothing`
    const kitSensors = kits.flatMap((k) => k.sensors.map((s, position) => ({ kit_id: k.id, sensor_id: s.sensorId, key: s.key, position })))
    if (kitSensors.length > 0) await tx`insert into kit_sensors ${tx(kitSensors)} on conflict do nothing`
    // Explicit ids leave the serial sequences behind; new rows must not collide with seeded ones.
    for (const table of ['measurements', 'sensors', 'kits']) {
      await tx.unsafe(`select setval(pg_get_serial_sequence('${table}', 'id'), greatest((select max(id) from ${table}), 1))`)
    }
  })
}
