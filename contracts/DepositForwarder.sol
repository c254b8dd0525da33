// SPDX-License-Identifier: MIT
// A per-transaction deposit address on Celo: deployed with CREATE2 by DepositForwarderFactory at an
// address derived from the transaction id, so partners can fund it before it exists. Its only power
// is to hand its whole balance of one ERC-20 to an address its factory names (always the factory's
// treasury, see DepositForwarderFactory.sweep). Docs: docs/solana-celo.md, "Celo: per-transaction
// deposit addresses".
//
// Frozen: this contract's creation code is part of every deposit address (CREATE2 hashes it), so
// the deployed factory keeps deploying the code it was compiled with. Changing this file changes
// every address the service computes; the adapter refuses a factory whose forwarder differs.
pragma solidity 0.8.30;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

contract DepositForwarder {
    using SafeERC20 for IERC20;

    /// The factory that deployed this forwarder: the only caller that can move its funds. An
    /// immutable lives in the runtime code, not in the creation code, so every forwarder has the
    /// same creation code and the addresses depend on the salt alone.
    address private immutable factory;

    error OnlyFactory();

    constructor() {
        factory = msg.sender;
    }

    /// Transfers the whole balance of `token` to `to` and returns the amount the token reported.
    /// No balance: nothing is called (some tokens revert on zero transfers). A token whose transfer
    /// returns false, or that is not a contract, reverts the call (SafeERC20), so a sweep never
    /// looks successful while the funds stayed here. Tokens without a return value (USDT-style)
    /// are accepted when they do not revert.
    ///
    /// No receive or fallback function: native CELO sent here after deployment is refused.
    function forward(IERC20 token, address to) external returns (uint256 amount) {
        if (msg.sender != factory) revert OnlyFactory();
        amount = token.balanceOf(address(this));
        if (amount > 0) token.safeTransfer(to, amount);
    }
}
