import HeraldWire

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
    /// Whether it may list and close every connection (`clients`, `kick`; `admin: true`).
    public var isAdmin = false

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

/// The broker's auth settings: who may connect, how long they have to say so, the smaller
/// line limit before they have, and how hard guessing is made.
public struct AuthSettings: Sendable, Equatable {
    /// Configured users; none means auth is off.
    public var users: [AuthUser] = []
    /// Time a connection has to authenticate before it is closed.
    public var timeoutMs = 2_000
    /// Longest line accepted before authentication (bounded by `max_line` too).
    public var maxLine = 4_096
    /// Wrong tokens from one address within `failWindowMs` that block it (`auth_fail_limit`).
    public var failLimit = 10
    /// The window those failures are counted in (`auth_fail_window_ms`).
    public var failWindowMs = 60_000
    /// How long a blocked address has every `hello` refused (`auth_block_ms`).
    public var blockMs = 60_000
    /// Connections not yet authenticated at most (`max_unauthenticated`, never more than
    /// `max_connections`); a newcomer past it closes the oldest of them.
    public var maxUnauthenticated = 1_000
    /// Addresses the failure table remembers at most; the oldest is forgotten first.
    public var failureTableCapacity = 10_000

    /// Creates settings; no users means auth off.
    public init(users: [AuthUser] = [], timeoutMs: Int = 2_000, maxLine: Int = 4_096) {
        self.users = users
        self.timeoutMs = timeoutMs
        self.maxLine = maxLine
    }

    /// Whether connections must authenticate.
    public var isEnabled: Bool { !users.isEmpty }

    /// Whether some user's credential needs the slow KDF.
    public var hasSlowCredentials: Bool { users.contains { $0.credential.isSlow } }

    /// The slow credentials, each once, in file order: what a parked `hello` derives keys for.
    public var slowCredentials: [TokenCredential] {
        var seen = Set<TokenCredential>()
        return users.map(\.credential).filter { $0.isSlow && seen.insert($0).inserted }
    }

    /// The user a token belongs to, checking every fast credential (no early exit) and
    /// taking slow ones as matching when they are in `accepted`.
    /// - Parameters:
    ///   - token: the bytes sent in `hello`.
    ///   - accepted: slow credentials already known to accept this token (derived off the
    ///     loop, or remembered by the verified-token cache).
    ///   - named: when the `hello` named a user (`user`), that user alone is tried.
    /// - Returns: the first matching user in config order, or nil.
    public func user(for token: [UInt8], accepted: Set<TokenCredential> = [], among named: AuthUser? = nil) -> AuthUser? {
        guard token.count <= TokenCredential.maxTokenBytes else { return nil }
        var found: AuthUser?
        for user in named.map({ [$0] }) ?? users {
            let credential = user.credential
            let matches = credential.isSlow ? accepted.contains(credential) : credential.accepts(token)
            if matches && found == nil { found = user }
        }
        return found
    }
}
