import HeraldBroker
import HeraldWire

/// The broker configurations an input can run under (byte 0's flags, and reloads).
extension FuzzSession {
    /// Who may connect: the auth settings a flag byte or a reload (directive 0x08) installs.
    enum AuthMode: Int, CaseIterable {
        /// No users: auth off.
        case off
        /// Two fast users: `a` unrestricted, `b` with overlapping allow and deny rules.
        case basic
        /// `a` and `b` with small `UserLimits`, a pbkdf2 user `p` (its `hello` is parked and
        /// verified by the harness), failed-hello blocking after 3 wrong tokens, and at most 3
        /// connections still to authenticate.
        case guarded
        /// What a reload narrows `guarded` to: `a` renamed `root`, `b`'s rules narrowed, `p`'s
        /// credential re-salted (sessions it accepted must be closed), a second pbkdf2 user `q`.
        case narrowed
    }

    /// The broker's tunables for an input: small limits, so every limit is reachable within
    /// a few kilobytes of input; `flags` (the input's first byte) picks variants.
    /// - Parameters:
    ///   - flags: 0x01 heartbeat off, 0x02 2 KiB `max_pending`, 0x04 `drop`, 0x08 no history,
    ///     0x10 fewer connections than slots, 0x20 journaling, 0x40 auth, 0x80 abuse caps
    ///     (tiny `max_args_bytes`, `max_declared`, `max_links`, `max_locks`,
    ///     `max_pending_total`; with 0x40, the `guarded` users).
    ///   - authMode: the users to install; nil takes them from `flags`.
    static func config(flags: UInt8, authMode: AuthMode? = nil) -> BrokerConfig {
        var config = BrokerConfig(
            maxLine: 1024, maxErrors: 8, heartbeatMs: flags & 0x01 == 0 ? 5_000 : 0,
            maxPending: flags & 0x02 == 0 ? 16_384 : 2_048,
            overflow: flags & 0x04 == 0 ? .disconnect : .drop,
            version: "0.0.0-fuzz", epoch: "fuzz")
        config.history = flags & 0x08 == 0 ? 4 : 0
        config.historyBytes = 2_048
        config.maxConnections = flags & 0x10 == 0 ? slotCount + 1 : slotCount - 1
        config.maxSubs = 8
        config.maxChannels = 24
        config.maxRequests = 3
        config.maxSignals = 3
        config.stateLimits = StateLimits(maxValueBytes: 256, maxListLength: 6, maxRetainedBytes: 2_048)
        config.journaling = flags & 0x20 != 0
        if flags & 0x80 != 0 {
            // Every issue-12 cap within reach of a few lines.
            config.maxArgsBytes = 16
            config.maxDeclared = 3
            config.maxLinks = 2
            config.maxLocks = 4
            config.maxPendingTotal = 4_096
        }
        let mode = authMode ?? (flags & 0x40 == 0 ? .off : flags & 0x80 == 0 ? .basic : .guarded)
        config.auth = authSettings(mode)
        return config
    }

    /// The listing and sweep budgets for an input: tiny with the abuse caps (0x80), so a
    /// `channels` walk runs out and hands back `next`, a `lock` answer is truncated, and the
    /// record sweep resumes from its cursor over several ticks.
    static func budgets(flags: UInt8) -> ScanBudgets {
        var budgets = ScanBudgets()
        if flags & 0x80 != 0 {
            budgets.listScan = 3
            budgets.lockList = 2
            budgets.sweep = 2
        }
        return budgets
    }

    /// The users and auth tunables of one mode.
    static func authSettings(_ mode: AuthMode) -> AuthSettings {
        let rule = { (allow: [String]?, deny: [String]) in
            ChannelRule(allow: allow.map { $0.map { Array($0.utf8) } }, deny: deny.map { Array($0.utf8) })
        }
        let small = UserLimits(connections: 2, subscriptions: 5, channels: 4, pendingBytes: 3_000)
        let broad = rule(["x.>", "y.*", "$sys.>"], ["x.z", "x.*.q"])
        switch mode {
        case .off:
            return AuthSettings()
        case .basic:
            return AuthSettings(users: [
                fast("a", token: "a"),
                fast("b", token: "b", publish: broad, subscribe: rule(["x.>", "$sys.>"], ["x.*.q"])),
            ], timeoutMs: 500, maxLine: 256)
        case .guarded, .narrowed:
            let narrowed = mode == .narrowed
            var settings = AuthSettings(users: [
                fast(narrowed ? "root" : "a", token: "a", limits: small),
                fast("b", token: "b",
                     publish: narrowed ? rule(["x.y", "x.w.>"], []) : broad,
                     subscribe: narrowed ? rule(["x.*", "x.w.>"], ["x.w.q"]) : rule(["x.>", "$sys.>"], ["x.*.q"]),
                     limits: UserLimits(connections: 3, subscriptions: 3, channels: 2, pendingBytes: 2_500)),
                slow("p", token: "p", salt: narrowed ? "fuzzsalt-2" : "fuzzsalt",
                     publish: rule(["p.>", "x.>"], []), subscribe: rule(["p.>", "x.>", "$sys.client.>"], []),
                     limits: small),
            ], timeoutMs: 500, maxLine: 256)
            if narrowed {
                settings.users.append(slow("q", token: "q", salt: "fuzzsalt-q", publish: rule(["q.>"], []),
                                           subscribe: rule(["q.>"], []), limits: small))
            }
            settings.failLimit = 3
            settings.failWindowMs = 10_000
            settings.blockMs = 5_000
            settings.maxUnauthenticated = narrowed ? 2 : 3
            return settings
        }
    }

    private static func fast(_ name: String, token: String, publish: ChannelRule = ChannelRule(),
                             subscribe: ChannelRule = ChannelRule(), limits: UserLimits = UserLimits()) -> AuthUser {
        AuthUser(name: name, credential: TokenCredential(plainToken: Array(token.utf8)), isPlainToken: true,
                 publish: publish, subscribe: subscribe, limits: limits)
    }

    /// A pbkdf2 user whose key is made with `derive`, the harness's stand-in for PBKDF2.
    private static func slow(_ name: String, token: String, salt: String, publish: ChannelRule,
                             subscribe: ChannelRule, limits: UserLimits) -> AuthUser {
        let salt = Array(salt.utf8)
        let iterations = 1_000
        let key = derive(Array(token.utf8), salt, iterations) ?? []
        return AuthUser(name: name, credential: TokenCredential(scheme: .pbkdf2SHA256(iterations: iterations), salt: salt, digest: key),
                        publish: publish, subscribe: subscribe, limits: limits)
    }

    /// The harness's key derivation: SHA-256 of salt, token and iteration count. PBKDF2 lives
    /// in `HeraldServer` (OpenSSL) and would cost the fuzzer a millisecond per `hello`; what
    /// the broker must get right is the parking and the answers, not the KDF.
    @Sendable static func derive(_ token: [UInt8], _ salt: [UInt8], _ iterations: Int) -> [UInt8]? {
        var hasher = SHA256()
        hasher.update(salt)
        hasher.update(token)
        hasher.update([UInt8(truncatingIfNeeded: iterations), UInt8(truncatingIfNeeded: iterations >> 8)])
        return hasher.finalize()
    }

    /// The peer address a slot's connections come from: two slots per address, so failed
    /// hellos on one block the other; the final probe comes from an address of its own.
    static func peer(ofSlot slot: Int) -> [UInt8] {
        Array("10.0.0.\(slot / 2)".utf8)
    }
}
