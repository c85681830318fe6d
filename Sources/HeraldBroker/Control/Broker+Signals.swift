import HeraldWire

/// Signals: responder-chain routing up the channel hierarchy (PROTOCOL.md, Signals).
///
/// A signal is offered level by level (the channel, then `nextLevel`), and at each level to
/// the unlocked handler subscriptions (`handle:true`) matching it, one at a time in
/// subscription order. A handler answers `handled` with `pass` or `stop`; silence for
/// `timeout_ms` or leaving counts as `pass` and is listed in `timeouts`. Callbacks from a
/// handler reach the sender in order before its one `ok`.
extension Broker {
    /// The default per-handler wait and the longest accepted.
    static let defaultSignalTimeoutMs = 1_000
    static let maxSignalTimeoutMs = 3_600_000

    /// `signal {ch, data?, tag?, timeout_ms?}`.
    func signal(from session: Session, now: Int) throws(HeraldError) {
        let origin = try concreteName(.ch)
        let timeout = try scanner.int(.timeoutMs) ?? Broker.defaultSignalTimeoutMs
        guard timeout >= 1, timeout <= Broker.maxSignalTimeoutMs else {
            throw HeraldError(.badField, "field 'timeout_ms' must be 1 to " + String(Broker.maxSignalTimeoutMs))
        }
        try admitSignal(from: session)
        nextSignalID += 1
        session.signalsInFlight += 1
        // Cluster mode: the node's index in the high bits, so ids never collide across nodes.
        let pending = PendingSignal(
            id: port.idBase | nextSignalID, sender: session, origin: origin,
            data: scanner.raw(.data).map { Array($0) }, tag: scanner.raw(.tag).map { Array($0) },
            rid: current.ridRaw.map { Array($0) }, timeoutMs: timeout, levels: route(from: origin))
        signals[pending.id] = pending
        signalsBySender[session.id, default: []].insert(pending.id)
        signalsByRid.insert(pending.id, connection: session.id, rid: pending.rid)
        advance(pending, now: now)
    }

    /// `handled {id, action}`: a handler's verdict on the offer it holds.
    func handled(from session: Session, now: Int) throws(HeraldError) {
        let number = try signalNumber()
        let remote = port.remoteOffer(self, number, to: session)
        let pending = remote == nil ? try offeredSignal(number, to: session) : nil
        guard let action = try scanner.string(.action) else {
            throw HeraldError(.missingField, "missing field 'action'")
        }
        let stop: Bool
        switch action {
        case Array("stop".utf8): stop = true
        case Array("pass".utf8): stop = false
        default: throw HeraldError(.badField, "field 'action' must be \"pass\" or \"stop\"")
        }
        if current.ridRaw != nil { answer(session, .handled) { _ in } }
        if let remote { return port.answerRemoteOffer(self, remote, by: session, stop ? .stop : .pass) }
        guard let pending, pending.offeredTo == session.id else { return }  // late: ignored
        deadlines.cancel(kind: .signalOffer, id: pending.id)
        if stop {
            finish(pending, handledBy: pending.offeredID, at: pending.level)
        } else {
            advance(pending, now: now)
        }
    }

    /// `callback {id, data?}`: passes data back to the sender of a signal still under way.
    func callback(from session: Session) throws(HeraldError) {
        let number = try signalNumber()
        if let remote = port.remoteOffer(self, number, to: session) {
            return try port.relayCallback(self, remote, from: session)
        }
        guard let pending = try offeredSignal(number, to: session) else {
            throw HeraldError(.notFound, "no signal with that id is under way")
        }
        // A handler asked earlier whose user lost the origin since (SIGHUP) speaks no more.
        guard maySubscribe(session, to: pending.origin) else {
            throw HeraldError(.forbidden, "no subscribe permission for the signal's origin \""
                + String(decoding: pending.origin, as: UTF8.self) + "\"")
        }
        let data = scanner.raw(.data)
        write(pending.sender) { out in
            out.appendRaw(#"{"callback":"#)
            out.append(contentsOf: pending.quotedID)
            out.appendRaw(#","from":"#)
            out.append(contentsOf: session.quotedClientID)
            if let data {
                out.appendRaw(#","data":"#)
                out.appendRaw(data)
            }
            out.appendRaw("}\n")
        }
        if current.ridRaw != nil { answer(session, .callback) { _ in } }
    }

    /// The signal named by `id` if it was ever offered to `session`: nil when it already
    /// finished (then `handled` is ignored); `not_found` when it was never offered there.
    private func offeredSignal(_ number: Int?, to session: Session) throws(HeraldError) -> PendingSignal? {
        if let number, let pending = signals[number], pending.askedConnections.contains(session.id) {
            return pending
        }
        if let number, finishedOffers[session.id]?.contains(number) == true {
            return nil
        }
        throw HeraldError(.notFound, "no signal with that id was offered to this connection")
    }

    /// The number in the request's `id` (nil when it is not a signal id: then `not_found`).
    func signalNumber() throws(HeraldError) -> Int? {
        guard let text = try scanner.string(.id) else { throw HeraldError(.missingField, "missing field 'id'") }
        return PendingSignal.number(from: text)
    }

    /// A deadline passed: the handler asked counts as `pass`, listed in `timeouts`.
    func expireSignalOffer(_ id: Int, now: Int) {
        guard let pending = signals[id], let handler = pending.offeredID else { return }
        pending.timeouts.append(handler)
        pending.offeredNode = nil
        advance(pending, now: now)
    }

    /// Offers the signal to the next handler, moving up levels as they run out.
    func advance(_ pending: PendingSignal, now: Int) {
        pending.offeredID = nil
        pending.offeredNode = nil
        setOfferHolder(pending, to: nil)
        while true {
            while pending.nextCandidate < pending.candidates.count {
                let candidate = pending.candidates[pending.nextCandidate]
                pending.nextCandidate += 1
                guard let level = pending.level else { continue }
                switch candidate {
                case .local(let handler):
                    guard mayOffer(pending, to: handler, level: level) else { continue }
                    offer(pending, to: handler, level: level, now: now)
                case .remote(let handler):
                    port.offerRemotely(self, pending, to: handler, level: level, now: now)
                }
                return
            }
            pending.levelIndex += 1
            guard let level = pending.level else {
                finish(pending, handledBy: nil, at: nil)
                return
            }
            pending.candidates = port.signalCandidates(self, matching: level)
            pending.nextCandidate = 0
        }
    }

    /// Whether `handler` may be asked at `level`: active, its connection staying, not
    /// locked, and its user allowed to subscribe to the signal's origin (issue 12).
    ///
    /// Why the origin and not the level: the offer carries the origin's name and data, and a
    /// handler's pattern (`app.*`) or a `link` can reach a level above a channel its user is
    /// denied (`app.secret.x`). Checked at every level, links included; a handler refused
    /// here is skipped, neither asked nor counted in `hops`.
    func mayOffer(_ pending: PendingSignal, to handler: Subscription, level: [UInt8]) -> Bool {
        handler.isActive && !handler.session.closeAfterFlush
            && (locks.count == 0 || !isLocked(handler, named: level))
            && maySubscribe(handler.session, to: pending.origin)
    }

    /// Handler subscriptions matching a level, in subscription order (`SingleNodePort`).
    func handlers(matching level: [UInt8]) -> [Subscription] {
        var found: [Subscription] = []
        for target in index.targets(for: level) {
            switch target {
            case .single(let subscription): if subscription.isHandler { found.append(subscription) }
            case .group(let group): found.append(contentsOf: group.members.filter(\.isHandler))
            }
        }
        return found.sorted { $0.serial < $1.serial }
    }

    private func offer(_ pending: PendingSignal, to handler: Subscription, level: [UInt8], now: Int) {
        let session = handler.session
        pending.offeredID = handler.globalID
        setOfferHolder(pending, to: session.id)
        pending.askedConnections.insert(session.id)
        pending.hops += 1
        writeOffer(SignalOfferFrame(level: level, quotedID: pending.quotedID, origin: pending.origin,
                                    quotedFrom: pending.sender.quotedClientID, tag: pending.tag, data: pending.data),
                   to: handler)
        deadlines.schedule(at: now + pending.timeoutMs, kind: .signalOffer, id: pending.id)
    }

    /// Writes an offer frame to a handler here, marking it `last` (and ending it) when it
    /// was the last delivery its `max` allowed. Local and remote signals share it.
    func writeOffer(_ frame: SignalOfferFrame, to handler: Subscription) {
        var isLast = false
        if let remaining = handler.remaining {
            handler.remaining = remaining - 1
            isLast = remaining == 1
        }
        write(handler.session) { out in
            out.appendRaw(#"{"signal":"#)
            out.appendJSONString(frame.level)
            out.appendRaw(#","id":"#)
            out.append(contentsOf: frame.quotedID)
            out.appendRaw(#","sub":"#)
            out.appendJSONString(handler.name)
            out.appendRaw(#","origin":"#)
            out.appendJSONString(frame.origin)
            out.appendRaw(#","from":"#)
            out.append(contentsOf: frame.quotedFrom)
            if let tag = frame.tag {
                out.appendRaw(#","tag":"#)
                out.append(contentsOf: tag)
            }
            out.append(contentsOf: handler.argsFragment)
            if isLast { out.appendRaw(#","last":true"#) }
            if let data = frame.data {
                out.appendRaw(#","data":"#)
                out.append(contentsOf: data)
            }
            out.appendRaw("}\n")
        }
        if isLast { end(handler) }
    }

    /// Sends the sender its one `ok` and forgets the signal.
    func finish(_ pending: PendingSignal, handledBy: [UInt8]?, at level: [UInt8]?) {
        forget(pending)
        pending.sender.signalsInFlight -= 1
        deadlines.cancel(kind: .signalOffer, id: pending.id)
        rememberFinished(pending)
        write(pending.sender) { out in
            out.appendRaw(#"{"ok":"signal""#)
            appendStoredRid(pending.rid, to: &out)
            out.appendRaw(#","id":"#)
            out.append(contentsOf: pending.quotedID)
            out.appendRaw(#","handled_by":"#)
            appendNullable(handledBy, to: &out)
            out.appendRaw(#","at":"#)
            appendNullable(level, to: &out)
            appendCounter(&out, "hops", pending.hops)
            out.appendRaw(#","timeouts":["#)
            for (position, id) in pending.timeouts.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.appendJSONString(id)
            }
            out.appendRaw("]}\n")
        }
        closeIfDrained(pending.sender)
    }

    /// Keeps, per handler connection, the ids of finished signals it was offered, so a late
    /// `handled` is ignored rather than `not_found`. Bounded: the oldest are forgotten. A
    /// connection that has left (gone, or closing and no longer answered) is skipped: its
    /// entry was dropped when it left and nothing would drop it again.
    private func rememberFinished(_ pending: PendingSignal) {
        rememberFinished(pending.id, offeredTo: pending.askedConnections)
    }

    /// Remembers signal `id` as finished for each of `connections` still here.
    func rememberFinished(_ id: Int, offeredTo connections: Set<ConnectionID>) {
        for connection in connections where sessions[connection]?.hasLeft == false {
            var finished = finishedOffers[connection] ?? []
            finished.append(id)
            if finished.count > Broker.finishedOffersKept { finished.removeFirst(finished.count / 2) }
            finishedOffers[connection] = finished
        }
    }

    /// How many finished signal ids are remembered per handler connection.
    static let finishedOffersKept = 1_024

    private func appendNullable(_ bytes: [UInt8]?, to out: inout [UInt8]) {
        if let bytes { out.appendJSONString(bytes) } else { out.appendRaw("null") }
    }

    /// A departing connection: its own signals end silently; offers it holds count as
    /// `pass` (listed in `timeouts`) and move on.
    ///
    /// Costs the connection's own signals and held offers (per-connection indexes), not
    /// every signal under way (issue 12: it sorted all of them per departing connection).
    func releaseSignals(of session: Session, now: Int) {
        finishedOffers[session.id] = nil
        for id in (signalsBySender[session.id] ?? []).sorted() {
            guard let pending = signals[id] else { continue }
            endSilently(pending)
        }
        passHeldOffers(of: session, now: now)
    }

    /// Ends a signal without its `ok`: its sender left or withdrew it (`cancel`). No handler
    /// is offered it again; the one holding the offer is not told, its later `handled` is
    /// ignored and its `callback` is `not_found`, as for a signal that finished.
    func endSilently(_ pending: PendingSignal) {
        forget(pending)
        pending.sender.signalsInFlight -= 1
        deadlines.cancel(kind: .signalOffer, id: pending.id)
        rememberFinished(pending)
    }

    /// Every offer `session` holds counts as `pass` (listed in `timeouts`) and its signal
    /// moves on: the connection leaves, or its peer ended its input and can never answer
    /// `handled` (`Broker+HalfClose`).
    func passHeldOffers(of session: Session, now: Int) {
        for id in (offersHeld[session.id] ?? []).sorted() {
            guard let pending = signals[id], pending.offeredTo == session.id, let handler = pending.offeredID else { continue }
            deadlines.cancel(kind: .signalOffer, id: pending.id)
            pending.timeouts.append(handler)
            advance(pending, now: now)
        }
        offersHeld[session.id] = nil
        port.passRemoteOffers(self, of: session)
    }

    /// Takes a signal out of the table and out of the per-connection indexes.
    private func forget(_ pending: PendingSignal) {
        signals[pending.id] = nil
        port.withdrawRemoteOffers(self, of: pending)
        setOfferHolder(pending, to: nil)
        let sender = pending.sender.id
        signalsBySender[sender]?.remove(pending.id)
        if signalsBySender[sender]?.isEmpty == true { signalsBySender[sender] = nil }
        signalsByRid.remove(pending.id, connection: sender, rid: pending.rid)
    }

    /// Records who holds the signal's offer now, keeping `offersHeld` in step.
    private func setOfferHolder(_ pending: PendingSignal, to holder: ConnectionID?) {
        if let previous = pending.offeredTo {
            offersHeld[previous]?.remove(pending.id)
            if offersHeld[previous]?.isEmpty == true { offersHeld[previous] = nil }
        }
        pending.offeredTo = holder
        if let holder { offersHeld[holder, default: []].insert(pending.id) }
    }

    /// After SIGHUP: an offer `session` holds for a signal whose origin its user may no
    /// longer subscribe to counts as `pass` (listed in `timeouts`) and the signal moves on at
    /// once, as when the handler leaves. Offers it may still see are left alone.
    func revokeSignalOffers(now: Int) {
        port.revokeRemoteOffers(self)
        guard !signals.isEmpty else { return }
        let revoked = signals.values.filter { pending in
            guard let holder = pending.offeredTo, let session = sessions[holder] else { return false }
            return !maySubscribe(session, to: pending.origin)
        }.sorted { $0.id < $1.id }
        for pending in revoked {
            // Moving one signal on can close a sender, which ends its signals: look again.
            guard signals[pending.id] === pending, let holder = pending.offeredTo,
                  let session = sessions[holder], !maySubscribe(session, to: pending.origin),
                  let handler = pending.offeredID else { continue }
            deadlines.cancel(kind: .signalOffer, id: pending.id)
            pending.timeouts.append(handler)
            advance(pending, now: now)
        }
    }
}
