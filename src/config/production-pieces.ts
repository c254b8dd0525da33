// What a process outside sandbox mode needs before it may start. Sandbox mode is the default only
// when nothing real is configured; the production manifests say SANDBOX=0, so an operator who
// deploys them as shipped gets a refusal that names every missing piece, instead of processes that
// start and silently do nothing (a payout role with no rail pays nobody while edges accept
// transactions) or run on fake money. Pure: the environment in, the missing pieces out; readEnv
// turns them into its start-up error.
//
// Checked for the roles run apart (the manifests' shape). ROLE=all is one process for development
// and trials (`npm start`, the tests of production-mode behaviour on one machine), and is not
// checked here.

/** The part of the environment the check reads. */
export interface ProductionPiecesEnv {
  readonly ROLE: string;
  readonly sandbox: boolean;
  readonly REDIS_URL?: string | undefined;
  readonly CHAINS_FILE?: string | undefined;
}

export interface MissingPiece {
  /** The variable to set, or what to build, named as an operator reads it. */
  readonly piece: string;
  readonly why: string;
}

/** Roles whose work moves fiat through the rail: payouts, onramp charges and deliveries, liquidity. */
const fiatRoles = new Set(['edge', 'payout', 'watcher']);
/** Roles that build the chain services: deposit instructions, verification, reconciliation. */
const chainRoles = new Set(['edge', 'watcher', 'admin']);

export function missingProductionPieces(env: ProductionPiecesEnv): MissingPiece[] {
  if (env.sandbox || env.ROLE === 'all') return [];
  const missing: MissingPiece[] = [];
  if (fiatRoles.has(env.ROLE)) {
    missing.push({
      piece: 'a production fiat rail adapter (BREB, PIX)',
      why: 'none is built yet: payouts would never be sent and onramp charges never made',
    });
  }
  if (chainRoles.has(env.ROLE) && env.CHAINS_FILE === undefined) {
    missing.push({ piece: 'CHAINS_FILE', why: 'the live chains: without it no network is configured and no corridor can be offered' });
  }
  if (env.REDIS_URL === undefined) {
    missing.push({ piece: 'REDIS_URL', why: 'roles run apart share one bus; alone on its own in-process bus this process serves nobody' });
  }
  return missing;
}

/** The start-up error for the pieces `missingProductionPieces` found, or null when nothing is missing. */
export function productionPiecesRefusal(env: ProductionPiecesEnv): string | null {
  const missing = missingProductionPieces(env);
  if (missing.length === 0) return null;
  const pieces = missing.map((entry) => `${entry.piece} (${entry.why})`).join('; ');
  return `is off (production) but the ${env.ROLE} role is missing: ${pieces}. Provide them, or set SANDBOX=1 for a trial on the sandbox rail and chains`;
}
