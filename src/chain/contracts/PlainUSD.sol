// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title PlainUSD
/// @notice The settlement stablecoin of plainpay's embedded devnet: a plain ERC-20 with 6 decimals
///         (like USDC) and owner-only minting. It exists so the service runs end to end with nothing
///         to install; on a real chain the service is pointed at an existing token instead.
/// @dev Errors follow ERC-6093 so tooling decodes them like OpenZeppelin's. Arithmetic is checked
///      (Solidity 0.8), except where a preceding comparison already proves it cannot wrap.
contract PlainUSD {
    string public constant name = "Plain USD";
    string public constant symbol = "pUSD";
    uint8 public constant decimals = 6;

    uint256 public totalSupply;
    address public owner;
    mapping(address account => uint256) public balanceOf;
    mapping(address account => mapping(address spender => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InvalidSender(address sender);
    error ERC20InvalidReceiver(address receiver);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error ERC20InvalidSpender(address spender);
    error NotOwner(address caller);
    error InvalidOwner(address newOwner);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    constructor() {
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        if (spender == address(0)) revert ERC20InvalidSpender(address(0));
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        // An allowance of type(uint256).max means "unlimited" and is never decremented (the common
        // convention), which saves a storage write for contracts approved once.
        if (allowed != type(uint256).max) {
            if (allowed < value) revert ERC20InsufficientAllowance(msg.sender, allowed, value);
            unchecked {
                allowance[from][msg.sender] = allowed - value;
            }
        }
        _transfer(from, to, value);
        return true;
    }

    function mint(address to, uint256 value) external onlyOwner {
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        totalSupply += value; // checked: the supply can never wrap, so no balance can either
        unchecked {
            balanceOf[to] += value;
        }
        emit Transfer(address(0), to, value);
    }

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert InvalidOwner(address(0));
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function _transfer(address from, address to, uint256 value) private {
        if (from == address(0)) revert ERC20InvalidSender(address(0));
        if (to == address(0)) revert ERC20InvalidReceiver(address(0));
        uint256 fromBalance = balanceOf[from];
        if (fromBalance < value) revert ERC20InsufficientBalance(from, fromBalance, value);
        unchecked {
            // fromBalance >= value was checked above; the sum of all balances is totalSupply, so
            // balanceOf[to] + value cannot exceed it.
            balanceOf[from] = fromBalance - value;
            balanceOf[to] += value;
        }
        emit Transfer(from, to, value);
    }
}
