// STYLE.md: neostandard (standard's rules, for TypeScript too) over every source file of the
// workspace. `pnpm lint` runs it and .ci/run fails on any finding.
import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['**/dist/**', '**/dist-*/**', '**/node_modules/**', 'db/migrations/**', '.data/**']
  }),
  {
    rules: {
      // `void promise` marks a promise deliberately left to run (its errors are handled inside).
      'no-void': ['error', { allowAsStatement: true }],
      // prom-client metrics register themselves with the registry they are given.
      'no-new': 'off'
    }
  },
  {
    files: ['**/*.ts'],
    rules: {
      // TypeBox's idiom: a schema and its Static type share one name.
      '@typescript-eslint/no-redeclare': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }]
    }
  }
]
