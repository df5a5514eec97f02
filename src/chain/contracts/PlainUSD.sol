// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title PlainUSD
/// @notice The settlement stablecoin of plainpay's embedded devnet: an ERC-20 with 6 decimals
///         (like USDC), owner-only minting, and EIP-3009 transfers with authorization as USDC's
///         FiatTokenV2_2 has them (the x402 `exact` scheme on EVM is built on them). It exists so
///         the service runs end to end with nothing to install; on a real chain the service is
///         pointed at an existing token (USDC) instead.
/// @dev Errors follow ERC-6093 so tooling decodes them like OpenZeppelin's; the EIP-3009 errors are
///      named so that x402's facilitator code recognises them (AuthorizationExpired,
///      AuthorizationNotYetValid, AuthorizationUsedOrCanceled, InvalidSignature). Arithmetic is
///      checked (Solidity 0.8), except where a preceding comparison already proves it cannot wrap.
contract PlainUSD {
    string public constant name = "Plain USD";
    string public constant symbol = "pUSD";
    uint8 public constant decimals = 6;
    /// @notice The EIP-712 domain version, "2" as USDC's (FiatTokenV2 and later).
    string public constant version = "2";

    // EIP-712 type hashes, exactly as EIP-3009 and FiatTokenV2 define them.
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");
    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    /// @dev Upper bound of `s` in a canonical signature (EIP-2): the other half is malleable.
    uint256 private constant SECP256K1_HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    bytes32 private immutable cachedDomainSeparator;
    uint256 private immutable cachedChainId;

    uint256 public totalSupply;
    address public owner;
    mapping(address account => uint256) public balanceOf;
    mapping(address account => mapping(address spender => uint256)) public allowance;
    mapping(address authorizer => mapping(bytes32 nonce => bool)) private authorizationStates;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed);
    error ERC20InvalidSender(address sender);
    error ERC20InvalidReceiver(address receiver);
    error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error ERC20InvalidSpender(address spender);
    error NotOwner(address caller);
    error InvalidOwner(address newOwner);
    error AuthorizationNotYetValid(uint256 validAfter);
    error AuthorizationExpired(uint256 validBefore);
    error AuthorizationUsedOrCanceled(address authorizer, bytes32 nonce);
    error InvalidSignature();
    error CallerMustBePayee(address caller, address payee);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    constructor() {
        owner = msg.sender;
        cachedChainId = block.chainid;
        cachedDomainSeparator = buildDomainSeparator();
        emit OwnershipTransferred(address(0), msg.sender);
    }

    /// @notice The EIP-712 domain separator: name "Plain USD", version "2", this chain, this contract.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        // Recomputed after a fork changes the chain id, so a signature for one chain never pays on the other.
        return block.chainid == cachedChainId ? cachedDomainSeparator : buildDomainSeparator();
    }

    /// @notice Whether `nonce` of `authorizer` was used or canceled (EIP-3009).
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return authorizationStates[authorizer][nonce];
    }

    /// @notice Executes a transfer signed by `from` (EIP-3009); anyone may submit it and pay the gas.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    /// @notice As above with a packed signature (65-byte ECDSA, or ERC-1271 for a contract wallet),
    ///         the FiatTokenV2_2 overload.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) public {
        bytes32 structHash = keccak256(
            abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)
        );
        useAuthorization(from, nonce, validAfter, validBefore, structHash, signature);
        _transfer(from, to, value);
    }

    /// @notice Like transferWithAuthorization, but only the payee `to` may submit it, so a front-runner
    ///         cannot take a deposit meant for a contract out of the contract's own call (EIP-3009).
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) public {
        if (to != msg.sender) revert CallerMustBePayee(msg.sender, to);
        bytes32 structHash = keccak256(
            abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)
        );
        useAuthorization(from, nonce, validAfter, validBefore, structHash, signature);
        _transfer(from, to, value);
    }

    /// @notice Cancels an unused authorization of `authorizer` (EIP-3009).
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) public {
        if (authorizationStates[authorizer][nonce]) revert AuthorizationUsedOrCanceled(authorizer, nonce);
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        if (!isValidSignatureNow(authorizer, hashTypedData(structHash), signature)) revert InvalidSignature();
        authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
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

    /// @dev The checks of FiatTokenV2's _requireValidAuthorization, in its order: valid after (strictly),
    ///      valid before (strictly), unused, signed by `authorizer`; then the nonce is spent.
    function useAuthorization(
        address authorizer,
        bytes32 nonce,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 structHash,
        bytes memory signature
    ) private {
        if (block.timestamp <= validAfter) revert AuthorizationNotYetValid(validAfter);
        if (block.timestamp >= validBefore) revert AuthorizationExpired(validBefore);
        if (authorizationStates[authorizer][nonce]) revert AuthorizationUsedOrCanceled(authorizer, nonce);
        if (!isValidSignatureNow(authorizer, hashTypedData(structHash), signature)) revert InvalidSignature();
        authorizationStates[authorizer][nonce] = true;
        emit AuthorizationUsed(authorizer, nonce);
    }

    function hashTypedData(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    function buildDomainSeparator() private view returns (bytes32) {
        return keccak256(
            abi.encode(EIP712_DOMAIN_TYPEHASH, keccak256(bytes(name)), keccak256(bytes(version)), block.chainid, address(this))
        );
    }

    /// @dev SignatureChecker as FiatTokenV2_2 uses it: ERC-1271 when the signer has code, else a
    ///      canonical ECDSA signature (v 27/28, low s) that recovers to the signer.
    function isValidSignatureNow(address signer, bytes32 digest, bytes memory signature) private view returns (bool) {
        if (signer.code.length > 0) {
            (bool ok, bytes memory result) =
                signer.staticcall(abi.encodeWithSelector(0x1626ba7e, digest, signature));
            return ok && result.length >= 32 && abi.decode(result, (bytes4)) == bytes4(0x1626ba7e);
        }
        if (signature.length != 65) return false;
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly ("memory-safe") {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > SECP256K1_HALF_N || (v != 27 && v != 28)) return false;
        address recovered = ecrecover(digest, v, r, s);
        return recovered != address(0) && recovered == signer;
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
