import HeraldWire

/// A user's token as the daemon keeps it: a salt and SHA-256(salt ‖ token), never the token.
///
/// The config's `token_hash` is `sha256:<salt hex>:<digest hex>`; a plain `token` (for
/// development) is kept the same way with an empty salt, so every check costs the same
/// and a comparison never depends on where two tokens first differ.
public struct TokenCredential: Sendable, Equatable {
    /// Bytes hashed before the token.
    public let salt: [UInt8]
    /// SHA-256(salt ‖ token), 32 bytes.
    public let digest: [UInt8]

    /// The prefix of a `token_hash` value, naming the scheme.
    public static let scheme = "sha256"
    /// Longest token accepted: a longer one in `hello` is wrong without being hashed, so an
    /// authenticated peer cannot make the daemon hash megabytes per user.
    public static let maxTokenBytes = 4_096

    /// A credential from a plain token (the config's `token`).
    /// - Parameter token: the token's UTF-8 bytes.
    public init(plainToken token: [UInt8]) {
        salt = []
        digest = SHA256.hash(token)
    }

    /// Parses `sha256:<salt hex>:<64 hex digits>`.
    /// - Parameter hash: the config's `token_hash` text.
    /// - Returns: nil when it is not of that form (the salt may be empty, at most 64 bytes).
    public init?(hash: String) {
        let parts = hash.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Substring(Self.scheme), parts[1].utf8.count <= 128,
              let salt = SHA256.bytes(hex: String(parts[1])),
              let digest = SHA256.bytes(hex: String(parts[2])), digest.count == 32 else { return nil }
        self.salt = salt
        self.digest = digest
    }

    /// The `token_hash` text for a token and a salt, what `heraldd --hash-token` prints.
    /// - Parameters:
    ///   - token: the token's UTF-8 bytes.
    ///   - salt: random bytes (16 from the system CSPRNG is what the daemon uses).
    /// - Returns: `sha256:<salt hex>:<hex of SHA-256(salt ‖ token)>`.
    public static func hashLine(token: [UInt8], salt: [UInt8]) -> String {
        Self.scheme + ":" + SHA256.hex(salt) + ":" + SHA256.hex(SHA256.hash(salt + token))
    }

    /// Whether `token` is this credential's token, comparing every digest byte whatever the
    /// first difference (no early exit, so timing says nothing about the stored digest).
    /// - Parameter token: the bytes a client sent in `hello`.
    /// - Returns: true on a match.
    public func accepts(_ token: [UInt8]) -> Bool {
        var hasher = SHA256()
        hasher.update(salt)
        hasher.update(token)
        let candidate = hasher.finalize()
        var difference: UInt8 = 0
        for index in 0..<32 {
            let stored = index < digest.count ? digest[index] : 0
            difference |= stored ^ candidate[index]
        }
        return difference == 0 && digest.count == 32
    }
}

/// The channels one kind of access (`publish` or `subscribe`) reaches for one user.
///
/// Deny wins; no allow list means every channel. Patterns follow `ChannelName`: `*` one
/// segment, a final `>` the rest, and a pattern starting with a wildcard never reaches a
/// `$…` name.
public struct ChannelRule: Sendable, Equatable {
    /// Allowed patterns, or nil for every channel.
    public var allow: [[UInt8]]?
    /// Refused patterns; they win over `allow`.
    public var deny: [[UInt8]]

    /// Creates a rule. - Parameters: allow: nil for everything; deny: refused patterns.
    public init(allow: [[UInt8]]? = nil, deny: [[UInt8]] = []) {
        self.allow = allow
        self.deny = deny
    }

    /// Whether the rule restricts anything at all (the common fast path says no).
    public var isUnrestricted: Bool { allow == nil && deny.isEmpty }

    /// Whether a concrete channel is reached.
    /// - Parameter name: a valid concrete channel name.
    /// - Returns: true when an allow pattern matches it and no deny pattern does.
    public func permits(channel name: UnsafeRawBufferPointer) -> Bool {
        if isUnrestricted { return true }
        for pattern in deny where pattern.withUnsafeBytes({ ChannelName.matches(pattern: $0, channel: name) }) {
            return false
        }
        guard let allow else { return true }
        for pattern in allow where pattern.withUnsafeBytes({ ChannelName.matches(pattern: $0, channel: name) }) {
            return true
        }
        return false
    }

    /// Whether every channel a pattern can match is reached: one allow pattern covers it
    /// whole and no deny pattern can match any channel it matches. Refused, never filtered.
    /// - Parameter pattern: a valid pattern (or concrete name).
    /// - Returns: true when the pattern is permitted as a whole.
    public func permits(pattern: [UInt8]) -> Bool {
        if isUnrestricted { return true }
        for denied in deny where ChannelName.overlaps(denied, pattern) { return false }
        guard let allow else { return true }
        return allow.contains { ChannelName.covers($0, pattern) }
    }
}

/// One configured user: a display name, a token, and what it may publish and subscribe to.
public struct AuthUser: Sendable, Equatable {
    /// The user's name, for logs; it plays no part in matching (wildcards in it are literal).
    public var name: String
    /// How the token is checked.
    public var credential: TokenCredential
    /// Whether the config gave the token in plain text (the daemon warns about it).
    public var isPlainToken: Bool
    /// Channels for pub, req, set, del, touch, list ops, signal, declare, remove, link,
    /// unlink, lock, unlock.
    public var publish: ChannelRule
    /// Channels for sub, get, channels, locks.
    public var subscribe: ChannelRule
    /// What this user may take of what every user shares (`UserLimits`).
    public var limits: UserLimits

    /// Creates a user. - Parameters: see the properties.
    public init(name: String, credential: TokenCredential, isPlainToken: Bool = false,
                publish: ChannelRule = ChannelRule(), subscribe: ChannelRule = ChannelRule(),
                limits: UserLimits = UserLimits()) {
        self.name = name
        self.credential = credential
        self.isPlainToken = isPlainToken
        self.publish = publish
        self.subscribe = subscribe
        self.limits = limits
    }
}

/// The broker's auth settings: who may connect, how long they have to say so, and the
/// smaller line limit before they have.
public struct AuthSettings: Sendable, Equatable {
    /// Configured users; none means auth is off.
    public var users: [AuthUser] = []
    /// Time a connection has to authenticate before it is closed.
    public var timeoutMs = 2_000
    /// Longest line accepted before authentication (bounded by `max_line` too).
    public var maxLine = 4_096

    /// Creates settings; no users means auth off.
    public init(users: [AuthUser] = [], timeoutMs: Int = 2_000, maxLine: Int = 4_096) {
        self.users = users
        self.timeoutMs = timeoutMs
        self.maxLine = maxLine
    }

    /// Whether connections must authenticate.
    public var isEnabled: Bool { !users.isEmpty }

    /// The user a token belongs to, checking every user's credential (no early exit).
    /// - Parameter token: the bytes sent in `hello`.
    /// - Returns: the first matching user in config order, or nil.
    public func user(for token: [UInt8]) -> AuthUser? {
        guard token.count <= TokenCredential.maxTokenBytes else { return nil }
        var found: AuthUser?
        for user in users {
            let matches = user.credential.accepts(token)
            if matches && found == nil { found = user }
        }
        return found
    }
}
