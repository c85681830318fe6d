import HeraldWire

/// Cluster mode's `current` and `since` (docs/cluster.md, "`seq`, history, `since`"): the
/// values and the history live in Redis, so a `sub` asking for either is answered when the
/// `catchUp` script has read them. Until then the session is parked, the subscription is out
/// of live delivery, and the live events that reach it are buffered; the answer is the `ok`
/// (with `recovered`), the `current` events, the replay, then the buffered events the
/// catch-up did not cover, each once and in `seq` order.
///
/// Exactness: the script runs only after every node acknowledged the interest changes made
/// so far (`afterTicket`), so every event it does not see comes here live.
extension Broker {
    /// The most events one cluster catch-up replays (the newest after `since`); past it, or
    /// past half of `max_pending` in bytes, `recovered` is false (docs/cluster.md).
    static let clusterReplayMaxEvents = 10_000

    /// Parks the `sub` until the `catchUp` script has read what it asked for.
    func startClusterCatchUp(_ catchUp: CatchUp, for subscription: Subscription, _ cluster: ClusterState) {
        subscription.isReplaying = true
        index.invalidateTargets()
        cluster.catchingUp.append((subscription, []))
        var since: [UInt8] = []
        if let value = catchUp.since { since.appendInt(value) }
        let arguments: [[UInt8]] = [subscription.pattern, Array((subscription.isWildcard ? "1" : "0").utf8),
                                    Array((catchUp.current ? "1" : "0").utf8), since,
                                    Array(String(Swift.min(Swift.max(config.history, 1), Self.clusterReplayMaxEvents)).utf8),
                                    Array(String(config.maxPending / 2).utf8)]
        var waiting = ClusterState.Waiting(session: subscription.session, op: .sub,
                                           opRaw: current.opRaw.map { Array($0) },
                                           rid: current.ridRaw.map { Array($0) },
                                           subscription: subscription, catchUp: catchUp)
        waiting.exclusive = true
        _ = cluster.call(.catchUp, channel: nil, arguments: arguments, waiting: waiting,
                         afterTicket: cluster.latestTicket)
        subscription.session.clusterCalls += 1
        subscription.session.exclusiveClusterCalls += 1
    }

    /// Keeps a live event for every subscription whose catch-up is still being read.
    /// A queue-group member buffers nothing: while it catches up the group's events go to
    /// its other members (as on one node), and plain events are not its.
    func bufferForCatchUps(_ event: RemoteEvent, _ cluster: ClusterState) {
        for at in cluster.catchingUp.indices {
            let subscription = cluster.catchingUp[at].subscription
            guard subscription.group == nil else { continue }
            if ChannelName.matches(pattern: subscription.pattern, channel: event.channel) {
                cluster.catchingUp[at].events.append(event)
            }
        }
    }

    /// The `catchUp` script answered `{seq, oldest, currents, history}`: sends the `ok`, the
    /// `current` events, the replay and the buffered live events, then makes the
    /// subscription live. A failed read ends the subscription and answers `unavailable`.
    func finishCatchUp(_ catchUp: CatchUp, for subscription: Subscription, buffered: [RemoteEvent],
                       result: ClusterValue) {
        subscription.isReplaying = false
        index.invalidateTargets()
        let session = subscription.session
        guard let parts = result.elements, parts.count == 4, let seq = parts[0].int else {
            if subscription.isActive { end(subscription) }
            return failUnavailable(session, result)
        }
        var covered: [[UInt8]: Int] = [:]
        var recovered = false
        if let since = catchUp.since {
            let oldest = parts[1].int ?? 0
            recovered = since == seq || (since < seq && oldest > 0 && oldest <= since + 1)
            covered[subscription.pattern] = seq
        }
        answer(session, .sub) { out in
            out.appendRaw(#","sub":"#)
            out.append(contentsOf: subscription.quotedName)
            out.appendRaw(#","ch":"#)
            out.appendJSONString(subscription.pattern)
            if catchUp.since != nil { out.appendRaw(recovered ? #","recovered":true"# : #","recovered":false"#) }
        }
        sendClusterCurrent(parts[2].elements ?? [], to: subscription, covered: &covered)
        for (middle, tail, name) in boundedReplay(parts[3].elements ?? [], after: catchUp.since ?? 0) {
            _ = deliverExtra(to: subscription, on: channel(named: name), middle[...], replay: true, tail[...])
        }
        for event in buffered where event.seq > covered[event.channel, default: 0] {
            let channel = channel(named: event.channel)
            guard accepts(subscription, from: event.from, on: channel) else { continue }
            let (middle, tail) = event.frameParts
            covered[event.channel] = event.seq
            _ = deliverExtra(to: subscription, on: channel, middle[...], replay: false, tail[...])
        }
        guard let cluster else { return }
        for (name, seq) in covered where seq > 0 { cluster.floors[name, default: []].append((subscription, seq)) }
        if !covered.isEmpty { cluster.floorsExpireAt = lastNow + ClusterState.floorLifetimeMs }
    }

    /// Takes out of this event's fan-out the subscriptions a catch-up already covered it
    /// for (`ClusterState.floors`), and forgets the floors it passes.
    /// - Returns: the subscriptions to put back once the event is delivered.
    func holdBackCovered(_ event: RemoteEvent, _ cluster: ClusterState) -> [Subscription] {
        if lastNow > cluster.floorsExpireAt {
            cluster.floors = [:]
            return []
        }
        guard var entries = cluster.floors[event.channel] else { return [] }
        var held: [Subscription] = []
        entries.removeAll { entry in
            guard entry.subscription.isActive, event.seq > entry.seq else {
                if entry.subscription.isActive, !entry.subscription.isReplaying {
                    entry.subscription.isReplaying = true
                    held.append(entry.subscription)
                }
                return !entry.subscription.isActive
            }
            return true
        }
        cluster.floors[event.channel] = entries.isEmpty ? nil : entries
        if !held.isEmpty { index.invalidateTargets() }
        return held
    }

    /// Puts back what `holdBackCovered` took out.
    func putBack(_ held: [Subscription]) {
        guard !held.isEmpty else { return }
        for subscription in held { subscription.isReplaying = false }
        index.invalidateTargets()
    }

    /// The replay's frames: the events after `since` (a history run may begin at or below
    /// it), without the oldest beyond `clusterReplayMaxEvents` and half of `max_pending`
    /// (the script sends at least the newest run whole, which may pass them).
    private func boundedReplay(_ entries: [ClusterValue], after since: Int) -> [([UInt8], [UInt8], [UInt8])] {
        var frames: [([UInt8], [UInt8], [UInt8])] = []
        for entry in entries {
            guard let event = Self.remoteEvent(entry), event.seq > since else { continue }
            let (middle, tail) = event.frameParts
            frames.append((middle, tail, event.channel))
        }
        var bytes = 0
        var keep = 0
        for frame in frames.reversed() {
            bytes += frame.0.count + frame.1.count
            guard keep < Self.clusterReplayMaxEvents, bytes <= config.maxPending / 2 else { break }
            keep += 1
        }
        return Array(frames.suffix(keep))
    }

    /// `kind:"current"` events from the script's `{name, rev, value, seq}` entries.
    private func sendClusterCurrent(_ entries: [ClusterValue], to subscription: Subscription,
                                    covered: inout [[UInt8]: Int]) {
        for entry in entries {
            guard let fields = entry.elements, fields.count == 4, let name = fields[0].bytes,
                  let rev = fields[1].int, let value = fields[2].bytes else { continue }
            covered[name] = Swift.max(covered[name] ?? 0, fields[3].int ?? 0)
            var middle: [UInt8] = []
            middle.appendRaw(#","kind":"current","rev":"#)
            middle.appendInt(rev)
            var tail: [UInt8] = []
            tail.appendRaw(#","value":"#)
            tail.append(contentsOf: value)
            tail.appendRaw("}\n")
            _ = deliverExtra(to: subscription, on: channel(named: name), middle[...], replay: false, tail[...])
        }
    }

    /// A history entry as the engine passes it: `{seq, from, channel, data|nil, middle|nil,
    /// tail}`.
    static func remoteEvent(_ entry: ClusterValue) -> RemoteEvent? {
        guard let fields = entry.elements, fields.count == 6, let seq = fields[0].int, let from = fields[1].int,
              let channel = fields[2].bytes else { return nil }
        return RemoteEvent(seq: seq, from: from, channel: channel, data: fields[3].bytes, middle: fields[4].bytes,
                           tail: fields[5].bytes ?? [])
    }

    /// The form `remoteEvent` reads, for the engine.
    public static func catchUpEntry(_ event: RemoteEvent) -> ClusterValue {
        .array([.int(event.seq), .int(event.from), .bytes(event.channel), event.data.map { .bytes($0) } ?? .null,
                event.middle.map { .bytes($0) } ?? .null, .bytes(event.tail)])
    }

    /// The last `seq` delivered here on each channel (cluster mode), for `resume` after a
    /// reconnect: Redis must never hand out one of them again. Costs the channel table.
    public func deliveredSeqs() -> [(channel: [UInt8], seq: Int)] {
        var found: [(channel: [UInt8], seq: Int)] = []
        for (_, channel) in channels where channel.seq > 0 && !ChannelName.isReserved(channel.name) {
            found.append((channel.name, channel.seq))
        }
        return found
    }
}
