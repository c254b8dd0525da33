// SPDX-License-Identifier: MIT
// Deploys and drives the per-transaction deposit forwarders on Celo. For a 32-byte salt (derived
// from the transaction id, see src/chains/celo-forwarders.ts) the forwarder's address is
// CREATE2(this factory, salt, keccak256(DepositForwarder creation code)): known before anything is
// deployed, so a partner funds it and the service deploys it only when it sweeps.
//
// Security argument (docs/solana-celo.md has the long form):
// - Funds leave a forwarder only through `sweep`, and `sweep` sends them only to `treasury`. No
//   argument of `sweep` names a destination, so anyone may call it (the caller pays the gas): the
//   worst a stranger can do is sweep our deposits to our treasury early.
// - The treasury is the hot wallet. It can be changed only by `admin` (a cold key or a multisig,
//   never the hot wallet), so when the hot wallet is rotated or leaks the admin points every
//   address, old and new, at the new wallet: deposit addresses never change with the hot wallet.
// - Forwarders are reusable: a second deposit to an address that was swept is swept by the next
//   call (the forwarder is deployed once and never self-destructs).
// - Reentrancy: `sweep` keeps no state of its own besides the deployed forwarder, so a token that
//   calls back into the factory can only trigger more sweeps to the treasury.
pragma solidity 0.8.30;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {DepositForwarder} from "./DepositForwarder.sol";

contract DepositForwarderFactory {
    /// Where every sweep sends the funds: the service's hot wallet.
    address public treasury;
    /// May change the treasury and hand over its own role (two steps).
    address public admin;
    /// The admin proposed by `transferAdmin`, until it calls `acceptAdmin`.
    address public pendingAdmin;

    event Swept(bytes32 indexed salt, address indexed token, address forwarder, uint256 amount);
    event TreasuryChanged(address indexed previousTreasury, address indexed newTreasury);
    event AdminTransferStarted(address indexed admin, address indexed pendingAdmin);
    event AdminChanged(address indexed previousAdmin, address indexed newAdmin);

    error OnlyAdmin();
    error OnlyPendingAdmin();
    error ZeroAddress();

    constructor(address treasury_, address admin_) {
        if (treasury_ == address(0) || admin_ == address(0)) revert ZeroAddress();
        treasury = treasury_;
        admin = admin_;
        emit TreasuryChanged(address(0), treasury_);
        emit AdminChanged(address(0), admin_);
    }

    /// keccak256 of the forwarder's creation code: with the factory address and a salt, it gives
    /// the forwarder's address. The service compares it with its own copy before using the factory.
    function forwarderInitCodeHash() public pure returns (bytes32) {
        return keccak256(type(DepositForwarder).creationCode);
    }

    /// The forwarder address of `salt` (deployed or not).
    function forwarderAddress(bytes32 salt) public view returns (address) {
        bytes32 digest = keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, forwarderInitCodeHash()));
        return address(uint160(uint256(digest)));
    }

    /// Deploys the forwarder of `salt` if it is not deployed yet, then moves its whole balance of
    /// `token` to the treasury. Returns the amount the token reported moving.
    function sweep(bytes32 salt, IERC20 token) external returns (uint256 amount) {
        address forwarder = forwarderAddress(salt);
        if (forwarder.code.length == 0) {
            new DepositForwarder{salt: salt}();
        }
        amount = DepositForwarder(forwarder).forward(token, treasury);
        emit Swept(salt, address(token), forwarder, amount);
    }

    function setTreasury(address newTreasury) external {
        if (msg.sender != admin) revert OnlyAdmin();
        if (newTreasury == address(0)) revert ZeroAddress();
        emit TreasuryChanged(treasury, newTreasury);
        treasury = newTreasury;
    }

    /// Two steps, so a typo cannot hand the role to an address nobody controls.
    function transferAdmin(address newAdmin) external {
        if (msg.sender != admin) revert OnlyAdmin();
        pendingAdmin = newAdmin;
        emit AdminTransferStarted(admin, newAdmin);
    }

    function acceptAdmin() external {
        if (msg.sender != pendingAdmin || msg.sender == address(0)) revert OnlyPendingAdmin();
        emit AdminChanged(admin, msg.sender);
        admin = msg.sender;
        pendingAdmin = address(0);
    }
}
