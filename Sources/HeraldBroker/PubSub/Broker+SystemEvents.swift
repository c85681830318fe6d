import HeraldWire

/// A daemon event waiting to be published on `$sys.…`.
struct SystemEvent {
    /// The `$sys.…` channel.
    let channel: [UInt8]
    /// The event's `data`, a JSON object.
    let data: [UInt8]
    /// Whether the channel's history keeps it (presence events, which `since` replays).
    var keepsHistory = false
}

/// System events on `$sys.>`: the broker's own publications, through the normal fan-out.
///
/// They come from `c0` (the daemon's own session, named `heraldd`) and are read-only for
/// clients (publishing to `$…` is `forbidden`). Each names the connection it is about by
/// client id, by `name` (the display name its client chose in `hello`: untrusted, anyone can
/// claim any name) and by `user` (the authenticated user, which the daemon vouches for; null
/// with auth off or before `hello`). Only connections whose user may subscribe to the
/// `$sys.…` channel receive them (a wildcard first segment never matches a `$` name). Why queued: the causes (a close, a slow
/// consumer) often happen in the middle of another fan-out, whose shared frame buffers a
/// nested fan-out would overwrite. So causes only queue the event, and the public entry
/// points (`connect`, `disconnect`, `handleLine`, `tick`, …) publish the queue once the
/// work that caused them is done.
extension Broker {
    /// `$sys.client.connected` / `$sys.client.disconnected`:
    /// `{"client":"c7","name":…,"user":…}`.
    func queueClientEvent(_ session: Session, connected: Bool) {
        var data: [UInt8] = []
        appendClient(session.id, of: session, to: &data)
        data.append(UInt8(ascii: "}"))
        queueSystemEvent(connected ? "$sys.client.connected" : "$sys.client.disconnected", data)
    }

    /// `$sys.channel.removed`:
    /// `{"client":OWNER,"name":…,"user":…,"ch":CH,"reason":"remove"|"disconnect"}`.
    /// `ownerSession` names a departed owner whose channels are removed in later passes.
    func channelRemoved(_ name: [UInt8], owner: ConnectionID?, ownerSession: Session? = nil, reason: RemovalReason) {
        var data: [UInt8] = []
        let ownerID = owner ?? 0
        appendClient(ownerID, of: ownerSession ?? sessions[ownerID], to: &data)
        data.appendRaw(#","ch":"#)
        data.appendJSONString(name)
        data.appendRaw(#","reason":"#)
        data.appendJSONString(reason.rawValue)
        data.append(UInt8(ascii: "}"))
        queueSystemEvent("$sys.channel.removed", data)
    }

    /// `$sys.slow_consumer`: `{"client":…,"name":…,"user":…,"policy":"disconnect"}`, or with
    /// `"policy":"drop","sub":NAME` when a subscription starts losing events.
    func queueSlowConsumerEvent(_ session: Session, droppingFor subscription: Subscription? = nil) {
        var data: [UInt8] = []
        appendClient(session.id, of: session, to: &data)
        if let subscription {
            data.appendRaw(#","policy":"drop","sub":"#)
            data.append(contentsOf: subscription.quotedName)
        } else {
            data.appendRaw(#","policy":"disconnect""#)
        }
        data.append(UInt8(ascii: "}"))
        queueSystemEvent("$sys.slow_consumer", data)
    }

    /// Publishes every queued system event, including those its own fan-outs cause.
    func flushSystemEvents() {
        guard !pendingSystemEvents.isEmpty, !isFlushingSystemEvents else { return }
        port.publishSystemEvents(self)
    }

    /// Fans the queued system events out on a node alone (`SingleNodePort`).
    func publishSystemEventsLocally() {
        isFlushingSystemEvents = true
        var next = 0
        while next < pendingSystemEvents.count {
            let event = pendingSystemEvents[next]
            next += 1
            let channel = channel(named: event.channel)
            channel.seq += 1
            event.data.withUnsafeBytes { data in
                buildSharedParts(seq: channel.seq, from: systemSession, data: data)
            }
            if event.keepsHistory { recordHistory(on: channel, from: systemSession) }
            _ = fanOut(on: channel, from: systemSession)
        }
        pendingSystemEvents.removeAll(keepingCapacity: true)
        isFlushingSystemEvents = false
    }

    func queueSystemEvent(_ channel: StaticString, _ data: [UInt8]) {
        var name: [UInt8] = []
        name.appendRaw(channel)
        pendingSystemEvents.append(SystemEvent(channel: name, data: data))
    }

    /// Appends `{"client":"cN","name":NAME|null,"user":USER|null` (the object is left open).
    ///
    /// `name` is what the client said it is; `user` is who its token proved it to be, so a
    /// watcher tells a real `admin` from a client that only named itself so.
    private func appendClient(_ id: ConnectionID, of session: Session?, to data: inout [UInt8]) {
        data.appendRaw(#"{"client":"c"#)
        data.appendInt(id)
        data.appendRaw(#"","name":"#)
        if let name = session?.name { data.appendJSONString(name) } else { data.appendRaw("null") }
        data.appendRaw(#","user":"#)
        if let user = session?.user?.name { data.appendJSONString(user) } else { data.appendRaw("null") }
    }
}
