import HeraldWire

extension Broker {
    /// `pub`: gives the event the channel's next `seq` and fans it out.
    ///
    /// The frame parts every subscriber shares are built once per publish; per subscriber
    /// only its name (and `args`, `last`, `dropped` when set) differ.
    func publish(from session: Session) throws(HeraldError) {
        let channel = try publishChannel()
        channel.seq += 1
        buildSharedParts(seq: channel.seq, from: session, data: scanner.raw(.data))
        recordHistory(on: channel)
        let receivers = fanOut(on: channel, from: session)
        guard current.ridRaw != nil else { return }
        answer(session, .pub) { out in
            out.appendRaw(#","seq":"#)
            out.appendInt(channel.seq)
            out.appendRaw(#","receivers":"#)
            out.appendInt(receivers)
        }
    }

    private func publishChannel() throws(HeraldError) -> Channel {
        guard scanner.isPresent(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        let found = try scanner.withString(.ch) { bytes throws(HeraldError) -> Channel in
            if ChannelName.isReserved(bytes) {
                throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
            }
            try ChannelName.validateConcrete(bytes)
            return channel(named: Array(bytes))
        }
        guard let found else { throw HeraldError(.missingField, "missing field 'ch'") }
        return found
    }

    private func buildSharedParts(seq: Int, from session: Session, data: UnsafeRawBufferPointer?) {
        eventMiddle.removeAll(keepingCapacity: true)
        eventMiddle.appendRaw(#","seq":"#)
        eventMiddle.appendInt(seq)
        eventMiddle.appendRaw(#","from":"#)
        eventMiddle.append(contentsOf: session.quotedClientID)
        eventTail.removeAll(keepingCapacity: true)
        if let data {
            eventTail.appendRaw(#","data":"#)
            eventTail.appendRaw(data)
        }
        eventTail.appendRaw("}\n")
    }

    /// Delivers the prepared event to every target of the channel.
    /// - Returns: how many subscriptions received it.
    func fanOut(on channel: Channel, from publisher: Session) -> Int {
        if channel.cacheGeneration != index.generation {
            channel.targets = index.targets(for: channel.name)
            channel.cacheGeneration = index.generation
        }
        let targets = channel.targets
        var receivers = 0
        for target in targets {
            switch target {
            case .single(let subscription):
                if accepts(subscription, from: publisher), deliver(to: subscription, on: channel) {
                    receivers += 1
                }
            case .group(let group):
                if let member = group.pick({ accepts($0, from: publisher) }), deliver(to: member, on: channel) {
                    receivers += 1
                }
            }
        }
        return receivers
    }

    private func accepts(_ subscription: Subscription, from publisher: Session) -> Bool {
        let session = subscription.session
        return subscription.isActive && !session.closeAfterFlush && (session.echo || session !== publisher)
    }

    /// Appends one event frame to a subscriber's queue, applying `max_pending` and `max`.
    /// - Returns: whether the event was queued.
    private func deliver(to subscription: Subscription, on channel: Channel) -> Bool {
        let session = subscription.session
        let isLast = subscription.remaining == 1
        let size = channel.eventHead.count + subscription.quotedName.count + eventMiddle.count
            + subscription.argsFragment.count + eventTail.count + 40
        if session.pendingBytes + size > config.maxPending {
            overflow(subscription)
            return false
        }
        session.outbound.append(contentsOf: channel.eventHead)
        session.outbound.append(contentsOf: subscription.quotedName)
        session.outbound.append(contentsOf: eventMiddle)
        session.outbound.append(contentsOf: subscription.argsFragment)
        if isLast { session.outbound.appendRaw(#","last":true"#) }
        if subscription.dropped > 0 {
            session.outbound.appendRaw(#","dropped":"#)
            session.outbound.appendInt(subscription.dropped)
            subscription.dropped = 0
        }
        session.outbound.append(contentsOf: eventTail)
        markDirty(session)
        stats.msgsOut += 1
        if let remaining = subscription.remaining {
            subscription.remaining = remaining - 1
            if isLast { end(subscription) }
        }
        return true
    }

    private func overflow(_ subscription: Subscription) {
        switch config.overflow {
        case .disconnect:
            disconnectSlowConsumer(subscription.session)
        case .drop:
            if subscription.dropped == 0 { stats.slowConsumers += 1 }
            subscription.dropped += 1
            stats.dropped += 1
        }
    }
}
