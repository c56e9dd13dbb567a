import { defineConfig } from 'vite'

// Built into dist/ and served by the api at /explorer/ (services/api/src/explorer.ts); the files
// under assets/ carry a hash of their content, so they are cached for good.
export default defineConfig({
  root: import.meta.dirname,
  base: '/explorer/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400
  }
})
