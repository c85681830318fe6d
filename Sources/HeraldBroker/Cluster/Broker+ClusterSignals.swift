import HeraldWire

/// Signals across nodes (docs/cluster.md, "Signals and links"). The sender's node drives a
/// signal as on one node: at each level it takes the level's handlers from the cluster's
/// handler table (`ClusterHandlerTable`, in registration order) and offers the signal to
/// one at a time; a handler on another node is offered it with a node message `O`, and
/// that node writes the offer frame, relays the handler's `callback`s (`C`) and its
/// `handled` (`V`) back, in order on one channel, so callbacks precede the verdict. Timeouts
/// run on the sender's node; a handler node that is gone (nobody heard the offer, or it was
/// declared down) counts as `pass`, listed in `timeouts`.
extension Broker {
    // MARK: - The sender's node

    /// The level's handlers in the cluster's registration order: this node's as their
    /// subscriptions (skipped when the subscription is gone or replaced since), the other
    /// nodes' as table entries.
    func clusterHandlers(matching level: [UInt8]) -> [SignalCandidate] {
        guard let cluster else { return [] }
        return cluster.handlers.matching(level).compactMap { handler in
            guard handler.node == cluster.nodeIndex else { return .remote(handler) }
            guard let subscription = sessions[handler.owner]?.subscriptions[handler.name], subscription.isHandler,
                  subscription.pattern == handler.pattern else { return nil }
            return .local(subscription)
        }
    }

    /// Offers the signal to a handler on another node; its timeout runs here.
    func offerRemotely(_ pending: PendingSignal, to handler: ClusterHandler, level: [UInt8], now: Int) {
        guard let cluster else { return }
        pending.attempt += 1
        pending.offeredID = handler.globalID
        pending.offeredNode = handler.node
        pending.askedNodes.insert(handler.node)
        pending.hops += 1
        let message = ClusterSignalMessage.offer(
            id: pending.id, attempt: pending.attempt, owner: handler.owner, timeoutMs: pending.timeoutMs,
            name: handler.name, level: level, origin: pending.origin, from: pending.sender.quotedClientID,
            tag: pending.tag, data: pending.data)
        cluster.sendSignalMessage(message, to: handler.node, offer: ClusterState.OfferRef(id: pending.id, attempt: pending.attempt))
        deadlines.schedule(at: now + pending.timeoutMs, kind: .signalOffer, id: pending.id)
    }

    /// A signal message from another node.
    public func clusterSignalMessage(_ payload: [UInt8], now: Int) {
        guard cluster != nil, let message = ClusterSignalMessage.decode(payload) else { return }
        lastNow = max(lastNow, now)
        switch message {
        case .offer(let id, let attempt, let owner, let timeoutMs, let name, let level, let origin, let from, let tag, let data):
            let frame = SignalOfferFrame(level: level, quotedID: PendingSignal.quoted(id), origin: origin,
                                         quotedFrom: from, tag: tag, data: data)
            receiveOffer(id: id, attempt: attempt, owner: owner, name: name, timeoutMs: timeoutMs, frame: frame, now: now)
        case .verdict(let id, let attempt, let verdict):
            remoteVerdict(id: id, attempt: attempt, verdict, now: now)
        case .callback(let id, let owner, let data):
            remoteCallback(id: id, owner: owner, data: data)
        case .withdrawn(let id):
            forgetRemoteOffer(id)
        }
        flushSystemEvents()
    }

    /// No node heard an offer (its node is gone) or Redis could not take it: the handler
    /// counts as gone.
    public func clusterOfferUnheard(id: Int, attempt: Int, now: Int) {
        remoteVerdict(id: id, attempt: attempt, .gone, now: now)
    }

    /// A handler node's answer. One for an earlier offer (it timed out here) is ignored.
    private func remoteVerdict(id: Int, attempt: Int, _ verdict: ClusterSignalMessage.Verdict, now: Int) {
        guard let pending = signals[id], pending.offeredNode != nil, pending.attempt == attempt,
              let handler = pending.offeredID else { return }
        deadlines.cancel(kind: .signalOffer, id: pending.id)
        switch verdict {
        case .stop:
            finish(pending, handledBy: handler, at: pending.level)
        case .pass:
            advance(pending, now: now)
        case .skipped:
            pending.hops -= 1
            advance(pending, now: now)
        case .gone:
            pending.timeouts.append(handler)
            advance(pending, now: now)
        }
    }

    /// A callback relayed from a handler on another node, written to the sender while its
    /// signal is under way.
    private func remoteCallback(id: Int, owner: ConnectionID, data: [UInt8]?) {
        guard let pending = signals[id] else { return }
        var client: [UInt8] = [UInt8(ascii: "c")]
        client.appendInt(owner)
        write(pending.sender) { out in
            out.appendRaw(#"{"callback":"#)
            out.append(contentsOf: pending.quotedID)
            out.appendRaw(#","from":"#)
            out.appendJSONString(client)
            if let data {
                out.appendRaw(#","data":"#)
                out.append(contentsOf: data)
            }
            out.appendRaw("}\n")
        }
    }

    /// The signal ended: the other nodes it was offered on forget it.
    func withdrawRemoteOffers(of pending: PendingSignal) {
        guard let cluster, !pending.askedNodes.isEmpty else { return }
        for node in pending.askedNodes.sorted() { cluster.sendSignalMessage(.withdrawn(id: pending.id), to: node) }
        pending.askedNodes = []
    }

    /// A node left or was declared down: an offer it holds counts as gone; its signals
    /// offered here are forgotten. Costs the signals under way and the remote offers here.
    public func clusterSignalNodeGone(_ node: Int, now: Int) {
        guard let cluster else { return }
        let waiting = signals.values.filter { $0.offeredNode == node }.sorted { $0.id < $1.id }
        for pending in waiting where signals[pending.id] === pending && pending.offeredNode == node {
            remoteVerdict(id: pending.id, attempt: pending.attempt, .gone, now: now)
        }
        for id in cluster.remoteOffers.keys.filter({ $0 >> 32 == node }).sorted() { forgetRemoteOffer(id) }
        flushSystemEvents()
    }

    // MARK: - A handler's node

    /// How long after an offer's own timeout this node keeps another node's signal when
    /// that node never says it ended (a message lost with Redis).
    static let remoteOfferGraceMs = 60_000

    /// Another node offers its signal to a handler here: written to the handler as a local
    /// offer would be, or answered `skipped` when the handler may not be asked (gone,
    /// replaced, locked, closing, or its user may not subscribe to the origin).
    private func receiveOffer(id: Int, attempt: Int, owner: ConnectionID, name: [UInt8], timeoutMs: Int,
                              frame: SignalOfferFrame, now: Int) {
        guard let cluster else { return }
        guard let session = sessions[owner], !session.hasLeft, !session.closeAfterFlush,
              let handler = session.subscriptions[name], handler.isHandler, handler.isActive,
              locks.count == 0 || !isLocked(handler, named: frame.level),
              maySubscribe(session, to: frame.origin) else {
            return cluster.sendSignalMessage(.verdict(id: id, attempt: attempt, verdict: .skipped), to: id >> 32)
        }
        let offer = cluster.remoteOffers[id] ?? RemoteOffer(id: id, origin: frame.origin)
        cluster.remoteOffers[id] = offer
        clearRemoteHolder(offer)
        offer.askedConnections.insert(owner)
        offer.holder = owner
        offer.attempt = attempt
        cluster.remoteOffersHeld[owner, default: []].insert(id)
        writeOffer(frame, to: handler)
        deadlines.schedule(at: now + timeoutMs + Broker.remoteOfferGraceMs, kind: .remoteOffer, id: id)
    }

    /// Another node's signal `number` as offered to `session` here, while under way; nil
    /// for this node's own signals and for ones that ended (then the local path answers:
    /// `handled` ignored, `callback` `not_found`).
    func remoteOffer(_ number: Int?, to session: Session) -> RemoteOffer? {
        guard let cluster, let number, number >> 32 != cluster.nodeIndex,
              let offer = cluster.remoteOffers[number], offer.askedConnections.contains(session.id) else { return nil }
        return offer
    }

    /// The handler's `handled` for another node's signal: sent back, unless the offer it
    /// held is over (timed out there and moved on: ignored, as on one node).
    func answerRemoteOffer(_ offer: RemoteOffer, by session: Session, _ verdict: ClusterSignalMessage.Verdict) {
        guard let cluster, offer.holder == session.id else { return }
        clearRemoteHolder(offer)
        cluster.sendSignalMessage(.verdict(id: offer.id, attempt: offer.attempt, verdict: verdict), to: offer.senderNode)
    }

    /// A handler's `callback` for another node's signal, relayed to the sender's node.
    func relayCallback(_ offer: RemoteOffer, from session: Session) throws(HeraldError) {
        guard let cluster else { return }
        guard maySubscribe(session, to: offer.origin) else {
            throw HeraldError(.forbidden, "no subscribe permission for the signal's origin \""
                + String(decoding: offer.origin, as: UTF8.self) + "\"")
        }
        cluster.sendSignalMessage(.callback(id: offer.id, owner: session.id, data: scanner.raw(.data).map { Array($0) }),
                                  to: offer.senderNode)
        if current.ridRaw != nil { answer(session, .callback) { _ in } }
    }

    /// Every remote offer `session` holds counts as gone (it leaves, or can no longer
    /// answer): the sender's node moves on at once.
    func passRemoteOffers(of session: Session) {
        guard let cluster, let held = cluster.remoteOffersHeld[session.id] else { return }
        for id in held.sorted() {
            guard let offer = cluster.remoteOffers[id], offer.holder == session.id else { continue }
            answerRemoteOffer(offer, by: session, .gone)
        }
        cluster.remoteOffersHeld[session.id] = nil
    }

    /// After SIGHUP: remote offers whose origin the holder's user may no longer subscribe
    /// to count as gone.
    func revokeRemoteOffers() {
        guard let cluster, !cluster.remoteOffers.isEmpty else { return }
        for offer in cluster.remoteOffers.values.sorted(by: { $0.id < $1.id }) {
            guard let holder = offer.holder, let session = sessions[holder], !maySubscribe(session, to: offer.origin) else { continue }
            answerRemoteOffer(offer, by: session, .gone)
        }
    }

    /// Another node's signal ended (or its node went, or it was never said to): its offers
    /// here are over; the connections it was offered to remember it, so a late `handled`
    /// is ignored.
    func forgetRemoteOffer(_ id: Int) {
        guard let cluster, let offer = cluster.remoteOffers.removeValue(forKey: id) else { return }
        clearRemoteHolder(offer)
        deadlines.cancel(kind: .remoteOffer, id: id)
        rememberFinished(id, offeredTo: offer.askedConnections)
    }

    private func clearRemoteHolder(_ offer: RemoteOffer) {
        guard let cluster, let holder = offer.holder else { return }
        cluster.remoteOffersHeld[holder]?.remove(offer.id)
        if cluster.remoteOffersHeld[holder]?.isEmpty == true { cluster.remoteOffersHeld[holder] = nil }
        offer.holder = nil
    }
}
