/** Builds the explorer into packages/explorer/dist (the image build runs this; `pnpm start` does it when needed). */
import { buildExplorer } from '@esp/explorer'

await buildExplorer()
console.log('built the explorer (packages/explorer/dist)')
