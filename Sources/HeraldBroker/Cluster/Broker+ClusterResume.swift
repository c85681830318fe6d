import HeraldWire

/// After a Redis outage (a kill, a failover, a partition that healed), events published
/// while this node's subscription link was down never reached it: Redis pub/sub does not
/// replay. They are in history, so the node reads them back (docs/cluster.md, "Redis
/// failover"): before publishing again it tells Redis the last `seq` it delivered on each
/// channel (`resume`, which also keeps counters from going back); for the channels whose
/// counter had gone past it, it reads the events after it from history and delivers them,
/// in `seq` order, to the subscriptions that were there when the last event arrived, then
/// the live events it held meanwhile, each once.
extension Broker {
    /// Starts resuming: every channel that delivered something and still has subscribers
    /// here holds its live events until `endResume`. Costs the channel table.
    /// - Returns: each channel's last delivered `seq`, for `resume`, and whether its missed
    ///   events are wanted (someone here still listens).
    ///   With `include`, only the channels it accepts (one Redis shard came back).
    public func beginResume(where include: ([UInt8]) -> Bool = { _ in true }) -> [(channel: [UInt8], seq: Int, wanted: Bool)] {
        guard let cluster else { return [] }
        for name in cluster.resuming.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where include(name) {
            endResume(name, history: nil)
        }
        var points: [(channel: [UInt8], seq: Int, wanted: Bool)] = []
        for (_, channel) in channels where channel.seq > 0 && !ChannelName.isReserved(channel.name) && include(channel.name) {
            let wanted = index.matchCount(for: channel.name) > 0
            if wanted { cluster.resuming[channel.name] = (channel.seq, channel.clusterSerial, []) }
            points.append((channel.name, channel.seq, wanted))
        }
        return points
    }

    /// The missed events of one channel (`history`: the catch-up reply, or nil when none
    /// were missed or they could not be read): delivered, then the held live events. What
    /// the history no longer holds (trimmed, or a primary lost it) is named to each
    /// subscription by a `gap` frame before its next event: the holes between the events
    /// read, before the first held one, and, with nothing held, up to the counter the
    /// catch-up saw (a live copy arriving later is dropped by the floor).
    public func endResume(_ name: [UInt8], history: ClusterValue?) {
        guard let cluster, let point = cluster.resuming.removeValue(forKey: name) else { return }
        var covered = point.seq
        var top = point.seq
        let channel = channel(named: name)
        let subscriptions = resumeTargets(of: channel, madeBy: point.serial)
        if let entries = history?.elements, entries.count == 4 {
            top = entries[0].int ?? point.seq
            for entry in entries[3].elements ?? [] {
                guard let event = Self.remoteEvent(entry), event.seq > covered else { continue }
                if event.seq > covered + 1 { sendGap(on: channel, from: covered + 1, to: event.seq - 1, to: subscriptions) }
                covered = event.seq
                channel.seq = max(channel.seq, event.seq)
                let (middle, tail) = event.frameParts
                for subscription in subscriptions where accepts(subscription, from: event.from, on: channel) {
                    _ = deliverExtra(to: subscription, on: channel, middle[...], replay: false, tail[...])
                }
            }
        }
        if let first = point.held.lazy.map(\.0.seq).first(where: { $0 > covered }) {
            if first > covered + 1 { sendGap(on: channel, from: covered + 1, to: first - 1, to: subscriptions) }
        } else if top > covered {
            sendGap(on: channel, from: covered + 1, to: top, to: subscriptions)
            covered = top
            channel.seq = max(channel.seq, top)
        }
        if covered > point.seq {
            cluster.resumeFloors[name] = covered
            cluster.floorsExpireAt = lastNow + ClusterState.floorLifetimeMs
        }
        for (event, routing) in point.held where event.seq > covered {
            deliverRemote(event, routing: routing, now: lastNow)
        }
    }

    /// Tells each subscription that the events `from`…`to` of `channel` will never reach it
    /// (issue 31: no silent gap): `{"gap":CH,"sub":NAME,"from":F,"to":T}`, before its next event.
    func sendGap(on channel: Channel, from: Int, to last: Int, to subscriptions: [Subscription]) {
        for subscription in subscriptions {
            write(subscription.session) { out in
                out.appendRaw(#"{"gap":"#)
                out.appendJSONString(channel.name)
                out.appendRaw(#","sub":"#)
                subscription.appendQuotedName(to: &out)
                out.appendRaw(#","from":"#)
                out.appendInt(from)
                out.appendRaw(#","to":"#)
                out.appendInt(last)
                out.appendRaw("}\n")
            }
        }
    }

    /// Redis went away again before a resume ended: the held events go out as they are.
    public func abandonResume() {
        guard let cluster else { return }
        for name in cluster.resuming.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) { endResume(name, history: nil) }
    }

    /// A live event on a channel being resumed is held; one at or below what the resume
    /// delivered from history is dropped. - Returns: whether it was taken.
    func holdForResume(_ event: RemoteEvent, routing: ClusterRouting, _ cluster: ClusterState) -> Bool {
        if !cluster.resumeFloors.isEmpty && lastNow > cluster.floorsExpireAt { cluster.resumeFloors = [:] }
        if cluster.resuming[event.channel] != nil {
            cluster.resuming[event.channel]?.held.append((event, routing))
            return true
        }
        guard let floor = cluster.resumeFloors[event.channel] else { return false }
        if event.seq > floor {
            cluster.resumeFloors[event.channel] = nil
            return false
        }
        return true
    }

    /// The plain subscriptions here the missed events are for: matching the channel, made
    /// no later than the channel's last delivery before the outage (a later one's start is
    /// not known to precede them), not handlers, not queue-group members (the group's
    /// other members may have had them).
    private func resumeTargets(of channel: Channel, madeBy serial: Int) -> [Subscription] {
        var found: [Subscription] = []
        for target in index.targets(for: channel.name) {
            guard case .single(let subscription) = target, subscription.serial <= serial,
                  !subscription.isHandler, subscription.isActive else { continue }
            found.append(subscription)
        }
        return found.sorted { $0.serial < $1.serial }
    }
}
