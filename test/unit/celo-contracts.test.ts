// The Celo deposit contracts as committed: the TypeScript artifact the adapter imports
// (src/chains/celo-contracts.ts) must be exactly what the committed Solidity sources compile to,
// so a contract edited without `npm run contracts:build` (or a stale artifact) fails the suite
// instead of reaching a chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { artifactModulePath, compileContracts, renderArtifactModule } from '../../scripts/contracts.ts';
import * as artifact from '../../src/chains/celo-contracts.ts';

/** True when the code contains the PUSH0 opcode (0x5f, Shanghai), skipping PUSH1..PUSH32 data. */
function hasPush0(bytecode: string): boolean {
  const code = Buffer.from(bytecode.slice(2), 'hex');
  for (let index = 0; index < code.length; index += 1) {
    const opcode = code[index] ?? 0;
    if (opcode === 0x5f) return true;
    if (opcode >= 0x60 && opcode <= 0x7f) index += opcode - 0x5f;
  }
  return false;
}

const compiled = compileContracts();

test('the committed artifact is what the committed sources compile to (run `npm run contracts:build`)', () => {
  assert.equal(readFileSync(artifactModulePath, 'utf8'), renderArtifactModule(compiled));
});

test('the bytecode runs on pre-Shanghai EVMs (evmVersion paris: no PUSH0)', () => {
  assert.equal(artifact.contractsBuild.evmVersion, 'paris');
  for (const bytecode of [artifact.depositForwarderBytecode, artifact.depositForwarderFactoryBytecode]) {
    assert.equal(hasPush0(bytecode), false);
  }
});
