// What every role is handed by the composition root (src/service/context.ts builds it): the
// environment, the clock, the log, the bus, leases and store, the live configuration, the partner
// directory, the key ring and the authentication throttle, and a factory of actor clients. Only the
// type lives here, below the roles that take it; building it (connections, files, keys) is the
// composition root's.
import type { Logger } from 'pino';
import type { Bus } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import type { ShardGate } from '../bus/shard-coverage.ts';
import type { ActorClient } from '../actors/client.ts';
import type { EnvConfig } from '../config/env.ts';
import type { FiatCurrency } from '../domain/assets.ts';
import type { CorridorConfig } from '../domain/corridors.ts';
import type { LimitsConfig } from '../domain/limits.ts';
import type { Decimal } from '../domain/money.ts';
import type { DataKeyring } from '../store/data-encryption.ts';
import type { SnapshotStore } from '../store/store.ts';
import type { AuthThrottle, KeyRing } from './access.ts';
import type { PartnerDirectory } from './partners.ts';

export interface LiveConfig {
  corridors(): CorridorConfig;
  limits(): LimitsConfig;
  rates(): Readonly<Partial<Record<FiatCurrency, Decimal>>>;
  /** Sandbox/admin: replace the fixed rates. */
  setRate(currency: FiatCurrency, rate: Decimal): void;
}

export interface ServiceContext {
  readonly env: EnvConfig;
  readonly processId: string;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  readonly bus: Bus;
  readonly leases: Leases;
  /** Blobs are encrypted on their way in and out (src/store/encrypted-blobs.ts). */
  readonly store: SnapshotStore;
  /** The data keys of encryption at rest; null in a role that holds no personal data (src/service/context.ts `dataKeyRoles`). */
  readonly dataKeys: DataKeyring | null;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly config: LiveConfig;
  readonly partners: PartnerDirectory;
  readonly keyRing: KeyRing;
  /**
   * Failed authentications per client address, for every door of this process (edge partner and
   * ops keys, health listener /metrics, admin gRPC): counted, throttled, logged by sample.
   */
  readonly authThrottle: AuthThrottle;
  /** Keys generated at start (not from the environment), shown once (src/service/generated-keys.ts). Never logged. */
  readonly generatedKeys: { readonly demoApiKey?: string; readonly opsApiKey?: string; readonly demoPortalPassword?: string };
  /** An actor client with its own reply stream (one per role that asks actors); `gate`: see ActorClient. */
  actorClient(name: string, options?: { readonly gate?: ShardGate }): Promise<ActorClient>;
  close(): Promise<void>;
}
