import HeraldWire

/// What the broker holds, counted the slow way and checked against its running counters,
/// for leak checks in tests and the fuzz harness (`HeraldFuzzHarness`).
///
/// Every figure here is also kept as a counter or an index on the hot paths; the audit
/// recomputes them from the tables themselves, so a counter that drifted or an index entry
/// that outlived its source shows up as a `problem`. It walks everything (the directory,
/// every session and subscription), so it is never called by the daemon.
public struct BrokerAudit: Sendable {
    /// Channel records of client channels (the daemon's own `$…` records left out).
    public var channelRecords = 0
    /// Client channel records nothing holds (no subscription reaching them, no history, no
    /// retained state, no owner, no link): what the next sweeps collect.
    public var idleChannelRecords = 0
    /// Names in the directory `channels` lists, `$…` names included.
    public var directoryNames = 0
    /// Channel records, `$…` ones included (after every connection went, the directory holds
    /// nothing else).
    public var allChannelRecords = 0
    /// Locks, links, instance channels, pending requests, timers, signals under way.
    public var locks = 0, links = 0, instanceChannels = 0, requests = 0, timers = 0, signals = 0
    /// Distinct `rid`s indexed for `cancel` (requests' and signals'); 0 when none is pending.
    public var operationRids = 0
    /// Connections with remembered finished signal offers.
    public var finishedOfferHolders = 0
    /// Per-user accounts still kept.
    public var accounts = 0
    /// Per-user accounts charged a connection or a subscription.
    public var accountsInUse = 0
    /// Connections still to authenticate, as the broker counts them.
    public var unauthenticated = 0
    /// Tokens being verified off the loop (`hello`s parked and not yet answered).
    public var verificationsInFlight = 0
    /// The running total of queued output (`max_pending_total`).
    public var pendingTotal = 0
    /// Sessions whose answers wait for durable records.
    public var heldSessions = 0
    /// Consistency violations: a counter or index that disagrees with what it summarises.
    public var problems: [String] = []
}

extension Broker {
    /// Recounts what the broker holds and checks its counters and indexes against it.
    /// Walks every table: for tests and the fuzz harness only.
    /// - Returns: the figures and any inconsistency found.
    public func audit() -> BrokerAudit {
        var audit = BrokerAudit()
        auditDirectory(&audit)
        auditSessions(&audit)
        auditAccounts(&audit)
        audit.locks = locks.count
        audit.links = links.count
        audit.instanceChannels = instances.count
        audit.requests = requests.count
        audit.timers = deadlines.count
        audit.signals = signals.count
        audit.finishedOfferHolders = finishedOffers.count
        auditOperationRids(&audit)
        audit.verificationsInFlight = auth.verificationsInFlight.count
        audit.pendingTotal = pendingTotal
        audit.heldSessions = retention.heldSessions.count
        var ownedLinks = 0
        for (owner, names) in linksByOwner {
            ownedLinks += names.count
            for name in names where links[name]?.owner != owner {
                audit.problems.append("linksByOwner: c\(owner) lists \(Self.text(name)), linked by \(links[name].map { "c\($0.owner)" } ?? "nobody")")
            }
        }
        if ownedLinks != links.count {
            audit.problems.append("linksByOwner lists \(ownedLinks) links, links holds \(links.count)")
        }
        return audit
    }

    /// The `cancel` indexes hold `rid`s only of operations under way: none when none is.
    private func auditOperationRids(_ audit: inout BrokerAudit) {
        audit.operationRids = requests.ridCount + signalsByRid.count
        if requests.count == 0 && requests.ridCount > 0 {
            audit.problems.append("requests' rid index holds \(requests.ridCount) rids, no request is pending")
        }
        if signals.isEmpty && signalsByRid.count > 0 {
            audit.problems.append("signalsByRid holds \(signalsByRid.count) rids, no signal is under way")
        }
    }

    /// Every name `channels` could list, in the directory's order (byte order), `$…` ones included.
    public func directoryListing() -> [[UInt8]] {
        var names: [[UInt8]] = []
        directory.forEach(from: [], excluding: false) { name in
            names.append(name)
            return true
        }
        return names
    }

    private func auditDirectory(_ audit: inout BrokerAudit) {
        let names = directoryListing()
        audit.directoryNames = names.count
        if names.count != directory.count {
            audit.problems.append("directory: count says \(directory.count), walk finds \(names.count)")
        }
        for (earlier, later) in zip(names, names.dropFirst()) where !earlier.lexicographicallyPrecedes(later) {
            audit.problems.append("directory: \(Self.text(earlier)) before \(Self.text(later)), not in byte order")
        }
        for name in names where channels[name] == nil && !index.hasSubscriptions(withPattern: name) && links[name] == nil {
            audit.problems.append("directory: \(Self.text(name)) has no record, exact subscription or link")
        }
        var reserved = 0
        for (name, channel) in channels {
            if ChannelName.isReserved(name) {
                reserved += 1
            } else {
                audit.channelRecords += 1
                if !hasHistory(channel) && store.state(of: name) == nil && instances.owner(of: name) == nil
                    && links[name] == nil && index.matchCount(for: name) == 0 {
                    audit.idleChannelRecords += 1
                }
            }
            if !directory.contains(name) { audit.problems.append("directory: record \(Self.text(name)) missing") }
        }
        audit.allChannelRecords = channels.count
        if reserved != reservedChannelCount {
            audit.problems.append("reservedChannelCount is \(reservedChannelCount), \(reserved) `$` records exist")
        }
        for name in links.keys where !directory.contains(name) {
            audit.problems.append("directory: link \(Self.text(name)) missing")
        }
    }

    private func auditSessions(_ audit: inout BrokerAudit) {
        var subscriptions = 0
        var accounted = 0
        var unauthenticated = 0
        for session in sessions.values {
            accounted += session.accountedPending
            if !session.isAuthenticated && !session.hasLeft { unauthenticated += 1 }
            if !session.isAuthenticated && !session.hasLeft && !auth.unauthenticated.contains(session.id) {
                audit.problems.append("unauthenticated: c\(session.id) is not authenticated and not listed")
            }
            for subscription in session.subscriptions.values {
                subscriptions += 1
                if !subscription.isWildcard && !directory.contains(subscription.pattern) {
                    audit.problems.append("directory: exact subscription \(Self.text(subscription.pattern)) missing")
                }
            }
        }
        if subscriptions != index.count {
            audit.problems.append("index: counts \(index.count) subscriptions, sessions hold \(subscriptions)")
        }
        if accounted != pendingTotal {
            audit.problems.append("pendingTotal is \(pendingTotal), live sessions were accounted \(accounted)")
        }
        audit.unauthenticated = auth.unauthenticated.count
        if unauthenticated != auth.unauthenticated.count {
            audit.problems.append("unauthenticated: \(auth.unauthenticated.count) listed, \(unauthenticated) live sessions")
        }
    }

    private func auditAccounts(_ audit: inout BrokerAudit) {
        var connections: [ObjectIdentifier: Int] = [:]
        var subscriptions: [ObjectIdentifier: Int] = [:]
        for session in sessions.values {
            guard let account = session.account else { continue }
            connections[ObjectIdentifier(account), default: 0] += 1
            subscriptions[ObjectIdentifier(account), default: 0] += session.subscriptions.count
            if accounts[account.name] !== account {
                audit.problems.append("accounts: c\(session.id) is charged to a forgotten account of \(account.name)")
            }
        }
        var created: [ObjectIdentifier: Int] = [:]
        for channel in channels.values {
            guard let creator = channel.creator else { continue }
            created[ObjectIdentifier(creator), default: 0] += 1
            if accounts[creator.name] !== creator {
                audit.problems.append("accounts: \(Self.text(channel.name)) is charged to a forgotten account of \(creator.name)")
            }
        }
        audit.accounts = accounts.count
        for (name, account) in accounts {
            let key = ObjectIdentifier(account)
            if account.connections > 0 || account.subscriptions != 0 { audit.accountsInUse += 1 }
            if account.isEmpty { audit.problems.append("accounts: \(name) is empty but kept") }
            if account.connections != connections[key, default: 0] {
                audit.problems.append("accounts: \(name) counts \(account.connections) connections, \(connections[key, default: 0]) are charged")
            }
            if account.subscriptions != subscriptions[key, default: 0] {
                audit.problems.append("accounts: \(name) counts \(account.subscriptions) subscriptions, its connections hold \(subscriptions[key, default: 0])")
            }
            if account.channels != created[key, default: 0] {
                audit.problems.append("accounts: \(name) counts \(account.channels) channels, \(created[key, default: 0]) records are charged to it")
            }
        }
    }

    private static func text(_ name: [UInt8]) -> String { String(decoding: name, as: UTF8.self) }
}
