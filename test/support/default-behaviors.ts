// The service's actor behaviours as a sandbox deployment configures them (default corridors and
// limits, the sandbox data key, no partner fees), for tests that run shard workers in-process.
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { serviceBehaviors } from '../../src/service/behaviors.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';

export function defaultServiceBehaviors(): ReturnType<typeof serviceBehaviors> {
  const corridors = loadDefaultCorridors();
  return serviceBehaviors({
    dataKeys: sandboxDataKeyring(),
    corridors: () => corridors,
    rates: () => corridors.rates,
    partnerFee: () => undefined,
    limits: () => defaultLimitsConfig,
  });
}
