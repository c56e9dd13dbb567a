// The demo network lives with `pnpm demo` (scripts/demo-world.ts); tests and the bench use the same one.
export * from '../../scripts/demo-world.js'
