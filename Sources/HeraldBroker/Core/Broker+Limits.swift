import HeraldWire

/// The daemon-wide and per-connection caps (`max_connections`, `max_subs`, `max_channels`):
/// past one the request is answered `limit` and nothing changes, so one client flooding
/// connections, subscriptions or channel names cannot grow the daemon without bound.
extension Broker {
    /// A connection past `max_connections`: told why, then closed. It never counted as
    /// connected, so no `$sys` events are sent for it.
    func refuseOverLimit(_ session: Session, now: Int) {
        session.hasLeft = true
        write(session) { out in
            out.appendRaw(#"{"error":"limit","message":"too many connections (max_connections "#)
            out.appendInt(config.maxConnections)
            out.appendRaw(#"); closing"}"#)
            out.append(UInt8(ascii: "\n"))
        }
        close(session, now: now)
    }

    /// Refuses a new subscription name past `max_subs` (replacing an existing name is fine).
    func admitSubscription(named name: [UInt8], in session: Session) throws(HeraldError) {
        guard session.subscriptions[name] == nil, session.subscriptions.count >= config.maxSubs else { return }
        throw HeraldError(.limit, "this connection holds max_subs (" + String(config.maxSubs) + ") subscriptions")
    }

    /// Refuses a request past `max_requests` waiting for this connection.
    func admitRequest(from session: Session) throws(HeraldError) {
        guard requests.count(of: session.id) >= config.maxRequests else { return }
        throw HeraldError(.limit, "this connection has max_requests (" + String(config.maxRequests) + ") requests waiting")
    }

    /// Refuses a signal past `max_signals` under way for this connection.
    func admitSignal(from session: Session) throws(HeraldError) {
        guard session.signalsInFlight >= config.maxSignals else { return }
        throw HeraldError(.limit, "this connection has max_signals (" + String(config.maxSignals) + ") signals under way")
    }

    /// Refuses a channel that has no record yet when `max_channels` records exist. The
    /// daemon's own `$sys` channels do not count.
    func admitChannel(named name: [UInt8]) throws(HeraldError) {
        guard channels[name] == nil, channels.count - reservedChannelCount >= config.maxChannels else { return }
        throw HeraldError(.limit, "the daemon holds max_channels (" + String(config.maxChannels) + ") channels")
    }

    /// Refuses a `lock` that would take this connection past `max_locks` (taking locks it
    /// already holds again is fine, as it changes nothing).
    func admitLocks(_ wanted: [Lock], for session: Session) throws(HeraldError) {
        let new = wanted.reduce(0) { count, lock in locks.holds(lock) ? count : count + 1 }
        guard new > 0, locks.count(ownedBy: session.id) + new > config.maxLocks else { return }
        throw HeraldError(.limit, "this connection would hold more than max_locks (" + String(config.maxLocks) + ") locks")
    }

    /// Refuses a `declare` of a new channel past `max_declared` for this connection.
    func admitDeclaration(by session: Session) throws(HeraldError) {
        guard instances.count(ownedBy: session.id) >= config.maxDeclared else { return }
        throw HeraldError(.limit, "this connection has declared max_declared (" + String(config.maxDeclared) + ") channels")
    }

    /// Refuses a new `link` past `max_links` for this connection (re-linking is fine).
    func admitLink(of channel: [UInt8], by session: Session) throws(HeraldError) {
        let owned = linksByOwner[session.id]
        guard owned?.contains(channel) != true, (owned?.count ?? 0) >= config.maxLinks else { return }
        throw HeraldError(.limit, "this connection holds max_links (" + String(config.maxLinks) + ") links")
    }
}
