import { type Static, Type, type TSchema } from '@sinclair/typebox'

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Location = Type.Object({ city: Nullable(Type.String()), country: Nullable(Type.String()), country_code: Nullable(Type.String()) })

/** Contract: User (full representation). Every key is always present. */
export const User = Type.Object({
  id: Type.Integer(),
  uuid: Nullable(Type.String({ format: 'uuid' })),
  role: Type.String(),
  username: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  profile_picture: Type.String({ description: 'link to the uploaded picture, "" when none' }),
  avatar: Nullable(Type.String()),
  url: Nullable(Type.String()),
  location: Location,
  joined_at: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  email: Type.String({ description: '[FILTERED] unless the caller is the user or an admin' }),
  legacy_api_key: Nullable(Type.String()),
  forwarding_token: Nullable(Type.String({ description: '[FILTERED] unless the caller is the user' })),
  forwarding_username: Nullable(Type.String()),
  devices: Type.Array(Type.Ref('Device'), { description: 'full devices without data, private ones only for the owner and admins' })
}, { $id: 'User' })

export type UserView = Omit<Static<typeof User>, 'devices'> & { devices: unknown[] }

/** Fields a client may write; everything else in a body is dropped (behaviour.md §0). */
export const UserBody = Type.Object({
  email: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  city: Type.Optional(Nullable(Type.String())),
  country_code: Type.Optional(Nullable(Type.String())),
  url: Type.Optional(Nullable(Type.String())),
  first_name: Type.Optional(Nullable(Type.String())),
  last_name: Type.Optional(Nullable(Type.String())),
  role: Type.Optional(Type.String({ description: 'admins only' }))
})

export const OkMessage = Type.Object({ message: Type.String() })
