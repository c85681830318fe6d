import HeraldWire

extension Broker {
    /// `pub`: gives the event the channel's next `seq` and fans it out.
    ///
    /// The frame parts every subscriber shares are built once per publish; per subscriber
    /// only a cached prefix (`{"event":"CH","sub":"NAME"`) and, when set, `args`, `last`
    /// and `dropped` are added.
    func publish(from session: Session) throws(HeraldError) {
        if session.hasRate { session.rate?.chargePublish(now: lastNow) }
        if scanner.holds(.id) { return try publishOnce(from: session) }
        try port.publish(self, from: session)
    }

    /// `pub` with `id`: delivered unless the channel saw that id within `dedup_window_ms`;
    /// a duplicate's receipt repeats the first one's `seq` and `receivers` with
    /// `"duplicate":true`.
    @inline(never)
    private func publishOnce(from session: Session) throws(HeraldError) {
        // `"id":null` is no id.
        guard scanner.isPresent(.id) else { return try port.publish(self, from: session) }
        guard scanner[.id]?.kind == .string, let id = try scanner.string(.id), !id.isEmpty, id.count <= 64 else {
            throw HeraldError(.badField, "field 'id' must be a string of 1 to 64 bytes")
        }
        // In cluster mode the publish script of the channel's shard remembers the id
        // (docs/cluster.md, "Idempotent publish"), so it holds across nodes.
        if let cluster { return try publishToCluster(cluster, from: session, dedupID: id) }
        let channel = try publishChannel(for: session)
        let key = DedupTable.key(channel: channel.name, id: id)
        if let first = dedup.find(key, now: lastNow) {
            return answerPublish(session, seq: first.seq, receivers: first.receivers, duplicate: true)
        }
        let receivers = publishEvent(on: channel, from: session)
        dedup.insert(key, DedupTable.Entry(seq: channel.seq, receivers: receivers, expiresAt: lastNow + config.dedupWindowMs),
                     cap: config.maxDedupIDs)
        answerPublish(session, seq: channel.seq, receivers: receivers)
    }

    /// `pub` on a node alone (`SingleNodePort`).
    func publishLocally(from session: Session) throws(HeraldError) {
        let channel = try publishChannel(for: session)
        channel.seq += 1
        buildSharedParts(seq: channel.seq, from: session, data: scanner.raw(.data))
        recordHistory(on: channel, from: session)
        let receivers = fanOut(on: channel, from: session)
        guard current.ridRaw != nil else { return }
        answer(session, .pub) { out in
            out.appendRaw(#","seq":"#)
            out.appendInt(channel.seq)
            out.appendRaw(#","receivers":"#)
            out.appendInt(receivers)
        }
    }

    /// Gives the request's event the channel's next `seq`, keeps it in history and fans it
    /// out. - Returns: how many subscriptions it reached.
    @inline(__always)
    private func publishEvent(on channel: Channel, from session: Session) -> Int {
        channel.seq += 1
        buildSharedParts(seq: channel.seq, from: session, data: scanner.raw(.data))
        recordHistory(on: channel, from: session)
        return fanOut(on: channel, from: session)
    }

    /// The receipt, when the `pub` carried a `rid`.
    @inline(__always)
    private func answerPublish(_ session: Session, seq: Int, receivers: Int, duplicate: Bool = false) {
        guard current.ridRaw != nil else { return }
        answer(session, .pub) { out in
            out.appendRaw(#","seq":"#)
            out.appendInt(seq)
            out.appendRaw(#","receivers":"#)
            out.appendInt(receivers)
            if duplicate { out.appendRaw(#","duplicate":true"#) }
        }
    }

    /// The channel named by `ch`; a publisher repeating its last channel skips the
    /// validation and the dictionary lookup (it was validated when first seen), and an
    /// existing channel costs one lookup.
    func publishChannel(for session: Session) throws(HeraldError) -> Channel {
        // The common name, one without escapes, skips `withString`'s generic call.
        if let bytes = scanner.unescapedString(.ch) { return try channelToPublish(named: bytes, for: session) }
        guard scanner.isPresent(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        let found = try scanner.withString(.ch) { bytes throws(HeraldError) -> Channel in
            try channelToPublish(named: bytes, for: session)
        }
        guard let found else { throw HeraldError(.missingField, "missing field 'ch'") }
        return found
    }

    /// The channel a publish names: the session's last one, an existing one, or a new one
    /// admitted under the limits.
    @inline(__always)
    private func channelToPublish(named bytes: UnsafeRawBufferPointer, for session: Session) throws(HeraldError) -> Channel {
        if let last = session.lastChannel, !last.isRetired, last.hasName(bytes) { return last }
        if ChannelName.isReserved(bytes) {
            throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
        }
        // A publisher going round many channels: one lookup, no allocation, for one that
        // exists (issue 16, the many-channels shape). A name found in the table is valid
        // (it was checked when the channel was made), so only a miss is validated: the
        // check walked every byte of every publish (a twentieth of that shape).
        if let existing = channels[bytes: bytes] {
            charge(existing, to: session)
            session.lastChannel = existing
            return existing
        }
        try ChannelName.validateConcrete(bytes)
        let name = Array(bytes)
        try admitChannel(named: name)
        try admitUserChannel(named: name, for: session)
        let named = channel(named: name)
        charge(named, to: session)
        session.lastChannel = named
        return named
    }

    /// Builds the shared parts; `middle` (e.g. a request's `,"reply":"…"`) goes before `data`.
    func buildSharedParts(seq: Int, from session: Session, data: UnsafeRawBufferPointer?, middle: [UInt8] = []) {
        buildSharedParts(seq: seq, quotedFrom: session.quotedClientID, data: data, middle: middle)
    }

    /// The same, for a publisher named by its quoted client id (`"c7"`): one on another node.
    func buildSharedParts(seq: Int, quotedFrom: [UInt8], data: UnsafeRawBufferPointer?, middle: [UInt8] = []) {
        eventShared.reset()
        eventShared.append(#","seq":"#)
        eventShared.appendSeq(seq)
        eventFromStart = eventShared.count
        eventShared.append(#","from":"#)
        eventShared.append(quotedFrom)
        eventFromEnd = eventShared.count
        eventShared.append(middle)
        eventSplit = eventShared.count
        if let data {
            eventShared.append(#","data":"#)
            eventShared.append(data)
        }
        eventShared.append("}\n")
    }

    /// Delivers the prepared event to every target of the channel.
    ///
    /// The loop reads unmanaged references and prefix ranges (`Channel.fastTargets`) and
    /// borrows each subscription's session, so a delivery costs no reference counting: local
    /// copies of the cache keep every subscription alive for the whole loop even if a
    /// delivery ends one, and the `sessions` table keeps every session alive (a slow consumer
    /// kicked or a session closed mid-loop is only marked; it leaves the table in
    /// `disconnect`, which cannot run inside a fan-out: `fanOutDepth`).
    /// - Returns: how many subscriptions received it.
    func fanOut(on channel: Channel, from publisher: Session) -> Int {
        fanOut(on: channel, publisherID: publisher.id)
    }

    /// The same, for a publisher named by its global id (it may live on another node).
    @inline(__always)
    func fanOut(on channel: Channel, publisherID publisher: ConnectionID) -> Int {
        fanOut(on: channel, publisherID: publisher, plain: true, pickedGroups: nil)
    }

    /// The one fan-out loop. The channel's targets get the event when `plain`; a queue group
    /// among them picks a member here unless `pickedGroups` is given (cluster mode: Redis
    /// picked the groups whose member on this node gets it, `deliverToPickedGroups`).
    func fanOut(on channel: Channel, publisherID publisher: ConnectionID, plain: Bool, pickedGroups: [[UInt8]]?) -> Int {
        channel.refreshTargets(in: index)
        var receivers = 0
        fanOutDepth += 1
        let picksGroups = pickedGroups == nil
        // The cache is borrowed in place, not copied to locals: three array copies were three
        // retains and three releases per publish (a tenth of a 1→1 message's instructions),
        // and a read-only `withUnsafeBufferPointer` on a class's property still copies. The
        // mutable form borrows without a copy (the channel holds the only reference, so the
        // uniqueness check is a load; nothing in the loop writes these arrays). Safe because
        // nothing replaces the cache while `isFanningOut` is set (`Channel.refreshTargets`
        // returns at once then), so the arrays, and the subscriptions `targets` keeps alive,
        // outlive the loop.
        channel.isFanningOut = true
        defer { channel.isFanningOut = false }
        if plain {
            var sharedFrame = SharedFrame()
            channel.fastTargets.withUnsafeMutableBufferPointer { targets in
                channel.prefixArena.withUnsafeMutableBytes { prefixArena in
                    let prefixes = UnsafeRawBufferPointer(prefixArena)
                    for target in targets {
                        if let plain = target.plainSession {
                            plain._withUnsafeGuaranteedRef { session in
                                let prefix = UnsafeRawBufferPointer(rebasing: prefixes[target.prefix])
                                if deliverPlain(target, to: session, from: publisher, on: channel, prefix: prefix,
                                                shared: &sharedFrame) {
                                    receivers += 1
                                }
                            }
                        } else if let single = target.subscription {
                            single._withUnsafeGuaranteedRef { subscription in
                                subscription.withSession { session in
                                    let prefix = UnsafeRawBufferPointer(rebasing: prefixes[target.prefix])
                                    if accepts(subscription, of: session, from: publisher, on: channel),
                                       deliver(to: subscription, of: session, prefix: prefix) {
                                        receivers += 1
                                    }
                                }
                            }
                        } else if picksGroups, let group = target.group?.takeUnretainedValue(),
                                  let member = group.pick({ !$0.isReplaying && accepts($0, from: publisher, on: channel) }) {
                            groupPrefix.removeAll(keepingCapacity: true)
                            channel.appendPrefix(for: member, to: &groupPrefix)
                            let delivered = groupPrefix.withUnsafeBytes { deliver(to: member, prefix: $0) }
                            if delivered { receivers += 1 }
                        }
                    }
                }
            }
        }
        if let pickedGroups { receivers += deliverToPickedGroups(pickedGroups, on: channel, publisherID: publisher) }
        fanOutDepth -= 1
        return receivers
    }

    /// Whether `subscription` may receive an event of `publisher` on `channel` now (active,
    /// not a handler, `echo`, not closing, not locked).
    func accepts(_ subscription: Subscription, from publisher: ConnectionID, on channel: Channel) -> Bool {
        subscription.withSession { accepts(subscription, of: $0, from: publisher, on: channel) }
    }

    /// The same, with the subscription's session already borrowed by the caller.
    @inline(__always)
    func accepts(_ subscription: Subscription, of session: Session, from publisher: ConnectionID,
                 on channel: Channel) -> Bool {
        guard subscription.isActive, !subscription.isHandler else { return false }
        return !session.closeAfterFlush && (session.echo || session.id != publisher)
            && (locks.count == 0 || !isLocked(subscription, on: channel))
    }

    /// `accepts` and `deliver` for a plain target (`FastTarget.plainSession`), reading the
    /// session and the cache only: the subscription object is touched only on the rare
    /// paths (a lock on the channel, a full queue, events dropped since the cache was built).
    /// - Returns: whether the event was queued.
    @inline(__always)
    func deliverPlain(_ target: FastTarget, to session: Session, from publisher: ConnectionID, on channel: Channel,
                      prefix: UnsafeRawBufferPointer, shared sharedFrame: inout SharedFrame) -> Bool {
        guard !session.closeAfterFlush && (session.echo || session.id != publisher) else { return false }
        guard locks.count == 0 && session.droppedEvents == 0, let subscription = target.subscription else {
            return target.subscription.map { single in
                single._withUnsafeGuaranteedRef { subscription in
                    accepts(subscription, of: session, from: publisher, on: channel)
                        && deliver(to: subscription, of: session, prefix: prefix)
                }
            } ?? false
        }
        let shared = eventShared.count
        if session.pendingBytes + prefix.count + shared + 40 > config.maxPending {
            overflow(subscription.takeUnretainedValue(), of: session)
            return false
        }
        if target.sharesPrefix && session.sharesFrames,
           let span = sharedFrame.span(for: target, prefix: prefix, in: self) {
            session.appendSpan(start: span.start, count: span.count, in: span.arena)
        } else if !target.isCompact, let frame = eventShared.prefixed(prefix, upTo: shared) {
            session.appendEvent(frame)
        } else if target.isCompact, let head = eventShared.prefixed(prefix, upTo: eventFromStart) {
            session.appendEvent(head, eventShared.bytes(eventFromEnd..<shared))
        } else {
            return subscription._withUnsafeGuaranteedRef { deliver(to: $0, of: session, prefix: prefix) }
        }
        markDirty(session)
        notePace(session)
        stats.msgsOut += 1
        if requests.isCollectingRecipients { requests.noteRecipient(session.id) }
        return true
    }

    /// Appends one event frame to a subscriber's queue, applying `max_pending` and `max`.
    /// - Returns: whether the event was queued.
    func deliver(to subscription: Subscription, prefix: UnsafeRawBufferPointer) -> Bool {
        subscription.withSession { deliver(to: subscription, of: $0, prefix: prefix) }
    }

    /// The same, with the subscriber's session borrowed by the caller (`Subscription.withSession`):
    /// `session` is a guaranteed parameter, so the delivery takes no reference to it.
    func deliver(to subscription: Subscription, of session: Session, prefix: UnsafeRawBufferPointer) -> Bool {
        let isLast = subscription.remaining == 1
        let shared = eventShared.count
        let size = prefix.count + shared + subscription.argsFragmentCount + 40
        if session.pendingBytes + size > config.maxPending {
            overflow(subscription, of: session)
            return false
        }
        let hasNoExtras = subscription.argsFragmentCount == 0 && !isLast && subscription.dropped == 0
        if hasNoExtras && !subscription.isCompact, let frame = eventShared.prefixed(prefix, upTo: shared) {
            // One copy of prefix and shared parts together (`FrameScratch.prefixed`), staged
            // when small (`Session.appendEvent`).
            session.appendEvent(frame)
        } else if hasNoExtras, let head = eventShared.prefixed(prefix, upTo: eventFromStart) {
            // Compact: the same without `,"from":"C"`.
            session.appendEvent(head, eventShared.bytes(eventFromEnd..<shared))
        } else {
            session.reserveOutbound(size, limit: config.maxPending - session.inFlight)
            session.outbound.appendRaw(prefix)
            appendMiddle(for: subscription, to: &session.outbound)
            appendExtras(of: subscription, isLast: isLast, to: &session.outbound)
            session.outbound.appendRaw(eventShared.bytes(eventSplit..<shared))
        }
        delivered(to: subscription, of: session, isLast: isLast)
        // A request with auth on remembers who may answer it; for `pub` this is one
        // predictable branch on a flag that stays false.
        if requests.isCollectingRecipients { requests.noteRecipient(session.id) }
        return true
    }

    /// Bookkeeping after a frame was queued: flush, count, and end a used-up `max`.
    /// `session` is the subscription's, borrowed by the caller (no reference taken here).
    @inline(__always)
    func delivered(to subscription: Subscription, of session: Session, isLast: Bool) {
        markDirty(session)
        notePace(session)
        stats.msgsOut += 1
        if let remaining = subscription.remaining {
            subscription.remaining = remaining - 1
            if isLast { end(subscription) }
        }
    }

    /// The shared fields before `data` (`,"seq":S,"from":"C"` and any middle), without
    /// `from` for a compact subscription.
    func appendMiddle(for subscription: Subscription, to out: inout [UInt8]) {
        guard subscription.isCompact else { return out.appendRaw(eventShared.bytes(0..<eventSplit)) }
        out.appendRaw(eventShared.bytes(0..<eventFromStart))
        out.appendRaw(eventShared.bytes(eventFromEnd..<eventSplit))
    }

    /// `args`, `last` and `dropped`: the per-subscription fields before `data`.
    func appendExtras(of subscription: Subscription, isLast: Bool, to out: inout [UInt8]) {
        out.append(contentsOf: subscription.argsFragment)
        if isLast { out.appendRaw(#","last":true"#) }
        if subscription.dropped > 0 {
            out.appendRaw(#","dropped":"#)
            out.appendInt(subscription.dropped)
            subscription.dropped = 0
        }
    }

    /// Applies the slow-consumer policy to one delivery that did not fit `max_pending`.
    ///
    /// Under `disconnect` the session is only marked (`close`): it stays in the `sessions`
    /// table, and so alive, until the edge calls `disconnect` after the fan-out.
    func overflow(_ subscription: Subscription, of session: Session) {
        switch config.overflow {
        case .disconnect:
            disconnectSlowConsumer(session)
        case .drop:
            if subscription.dropped == 0 {
                stats.slowConsumers += 1
                queueSlowConsumerEvent(session, droppingFor: subscription)
            }
            subscription.dropped += 1
            subscription.session.droppedEvents += 1
            stats.dropped += 1
        }
    }
}
