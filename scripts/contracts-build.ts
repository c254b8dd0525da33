// `npm run contracts:build`: recompiles contracts/*.sol and rewrites src/chains/celo-contracts.ts.
// Commit the result. Changing DepositForwarder's code changes every Celo deposit address: read
// docs/solana-celo.md ("Celo: per-transaction deposit addresses") first.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { artifactModulePath, compileContracts, renderArtifactModule, repositoryRoot } from './contracts.ts';

const compiled = compileContracts();
writeFileSync(artifactModulePath, renderArtifactModule(compiled));
console.log(`wrote ${relative(repositoryRoot, artifactModulePath)} (${compiled.compiler}, @openzeppelin/contracts ${compiled.openZeppelinContracts})`);
