/// What one node was granted of its users' cluster-wide `user_limits` figures (issue 32,
/// item 7; docs/architecture.md, "Per-user limits across the cluster").
///
/// Redis holds, per user, the total granted to all nodes (`{p}uq:USER`) and, per node, what
/// it holds (`{p}ul:NODE`); the `lease` script grants at most what is left of the limit, so
/// the sum of every node's use never passes it. A node checks its own use against its grant
/// here, with no round trip, and asks for more in chunks (`chunk(of:)`) only when an op would
/// pass the grant; a grant nothing asked more of for `idleMs` is cut back to what is used
/// (`idleSurplus`), so a node does not sit on quota another node needs.
///
/// Costs: one entry per user and kind this node asked for, dropped once given back whole.
struct UserLeases {
    /// One figure of one user.
    struct Key: Hashable {
        /// The user's configured name.
        let user: String
        /// Which figure.
        let kind: LeaseKind
    }

    /// What the node holds of one figure.
    struct Grant {
        /// Granted by Redis and not given back.
        var granted = 0
        /// When an op last asked for more than was granted (monotonic ms).
        var askedAt = 0
        /// `lease` calls in flight for it.
        var asking = 0
    }

    /// The grants, by user and figure.
    private(set) var grants: [Key: Grant] = [:]

    /// How long a grant keeps what it does not use after the last ask (ms).
    static let idleMs = 1_000

    /// What the node holds of `key` now.
    func granted(_ key: Key) -> Int {
        grants[key]?.granted ?? 0
    }

    /// How much to ask for at once: an eighth of the limit, at least one (a limit of 8 or
    /// less is leased one at a time, so it is exact whatever the nodes do).
    static func chunk(of limit: Int) -> Int {
        max(1, limit / 8)
    }

    /// A `lease` call for `key` is going out.
    mutating func asking(_ key: Key, now: Int) {
        grants[key, default: Grant()].asking += 1
        grants[key]?.askedAt = now
    }

    /// A `lease` call came back with `amount` granted (0 when refused or failed).
    mutating func answered(_ key: Key, granted amount: Int) {
        guard var grant = grants[key] else { return }
        grant.asking -= 1
        grant.granted += max(0, amount)
        grants[key] = grant
        dropIfIdle(key)
    }

    /// For every figure asked nothing of for `idleMs` and with no call in flight: what is
    /// granted beyond `used(key)`, taken off here (the caller gives it back to Redis).
    mutating func takeIdleSurplus(now: Int, used: (Key) -> Int) -> [(Key, Int)] {
        var surplus: [(Key, Int)] = []
        for (key, grant) in grants where grant.asking == 0 && now - grant.askedAt >= Self.idleMs {
            let extra = grant.granted - max(0, used(key))
            guard extra > 0 else { continue }
            surplus.append((key, extra))
        }
        for (key, extra) in surplus {
            grants[key]?.granted -= extra
            dropIfIdle(key)
        }
        return surplus
    }

    /// Forgets every grant: the node starts a new incarnation, whose index holds none (the
    /// reaper gives the old index's grants back).
    mutating func removeAll() {
        grants = [:]
    }

    private mutating func dropIfIdle(_ key: Key) {
        if let grant = grants[key], grant.granted == 0, grant.asking == 0 { grants[key] = nil }
    }
}

/// A `user_limits` figure that holds across the cluster (`UserLeases`).
enum LeaseKind: String, CaseIterable {
    /// `connections`.
    case connections = "c"
    /// `subscriptions`.
    case subscriptions = "s"
    /// `channels`.
    case channels = "h"
}

/// The request a `lease` call holds, run again once the grant is known.
enum LeaseRetry {
    /// A line (`sub`, `pub`, `req`, `declare`), handled again as if it had just been read.
    case line([UInt8])
    /// An accepted `hello` whose connection needed a grant: the user, the token and the
    /// rest of the `hello`.
    case hello(user: String, token: [UInt8], greeting: Greeting)
}
