import HeraldWire

/// `declare` and `remove`: instance channels that live and die with their owner.
///
/// Removing a channel drops every subscription on exactly that channel, telling each
/// holder `{"removed":CH,"sub":NAME}`; wildcard subscriptions stay. The channel record
/// (its `seq`) goes too, so a channel declared again starts a new life.
extension Broker {
    /// Why a channel was removed, for the `$sys.channel.removed` event.
    enum RemovalReason: String {
        case remove, disconnect
        /// A configuration reload took the owner's right to publish on it.
        case forbidden
    }

    /// `declare {ch}`: makes the caller the owner of a concrete channel.
    ///
    /// Declaring a channel the caller already owns is a no-op answered `ok`; one another
    /// connection owns is `conflict`.
    func declare(_ session: Session) throws(HeraldError) {
        let name = try requestedOwnableChannel()
        if let owner = instances.owner(of: name), owner != session.id {
            throw HeraldError(.conflict, "channel \"" + String(decoding: name, as: UTF8.self)
                + "\" is owned by c" + String(owner))
        }
        try admitChannel(named: name)
        try admitUserChannel(named: name, for: session)
        if instances.owner(of: name) == nil {
            try admitDeclaration(by: session)
            return port.claim(self, name, for: session)
        }
        acceptDeclaration(of: name, by: session)
    }

    /// Records `session` as the owner of `name` and answers `ok`.
    func acceptDeclaration(of name: [UInt8], by session: Session) {
        instances.declare(name, by: session.id)
        charge(channel(named: name), to: session)
        answer(session, .declare) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
        }
    }

    /// `remove {ch}` or `remove {all:true}`: removes the caller's instance channels.
    ///
    /// Answers `{"ok":"remove","count":N}`. A channel that is not declared is `not_found`;
    /// one another connection owns is `forbidden`.
    func remove(_ session: Session) throws(HeraldError) {
        var removed = 0
        if scanner.isPresent(.ch) {
            let name = try requestedOwnableChannel()
            guard let owner = instances.owner(of: name) else {
                throw HeraldError(.notFound, "channel \"" + String(decoding: name, as: UTF8.self) + "\" is not declared")
            }
            guard owner == session.id else {
                throw HeraldError(.forbidden, "channel \"" + String(decoding: name, as: UTF8.self)
                    + "\" is owned by c" + String(owner))
            }
            removeInstance(name, reason: .remove)
            removed = 1
        } else if try scanner.bool(.all) == true {
            removed = removeAllInstances(of: session, leaving: false, reason: .remove)
        } else {
            throw HeraldError(.missingField, "remove needs 'ch' or 'all':true")
        }
        answer(session, .remove) { out in appendCounter(&out, "count", removed) }
    }

    /// Removes every instance channel a departing connection owns.
    func removeOwnedChannels(of session: Session) {
        _ = removeAllInstances(of: session, leaving: true, reason: .disconnect)
    }

    /// After a reload: removes the connection's instance channels its user may no longer
    /// publish on (reason `forbidden`). Costs the connection's own channels.
    func revokeDeclarations(of session: Session) {
        guard let rule = session.user?.publish, !rule.isUnrestricted else { return }
        for name in instances.owned(by: session.id) where !name.withUnsafeBytes({ rule.permits(channel: $0) }) {
            removeInstance(name, reason: .forbidden)
        }
    }

    /// Takes an instance channel away: its ownership, its exact subscriptions, its record.
    func removeInstance(_ name: [UInt8], reason: RemovalReason) {
        let owner = instances.owner(of: name)
        instances.release(name)
        finishRemoval(of: name, owner: owner, ownerSession: nil, reason: reason)
    }

    /// The rest of a removal once ownership is gone: the exact subscriptions (told
    /// `removed`), the record, the `$sys` event. In cluster mode the removal goes through
    /// Redis first (`Broker+ClusterInstances.swift`): the subscriptions here go when it comes
    /// back, after the events published before it, as on every other node.
    func finishRemoval(of name: [UInt8], owner: ConnectionID?, ownerSession: Session?, reason: RemovalReason) {
        port.removeInstanceChannel(self, name, owner: owner, reason: reason)
        channelRemoved(name, owner: owner, ownerSession: ownerSession, reason: reason)
    }

    /// Ends every subscription on exactly `name`, telling each holder `removed`, and drops
    /// the channel's record.
    func dropExactSubscriptions(of name: [UInt8]) {
        let dropped = index.subscriptions(withPattern: name).sorted { $0.serial < $1.serial }
        for subscription in dropped {
            tellRemoved(subscription, name)
            end(subscription)
        }
        dropChannelRecord(name)
    }

    /// `{"removed":CH,"sub":NAME}` to the holder of `subscription`.
    func tellRemoved(_ subscription: Subscription, _ name: [UInt8]) {
        write(subscription.session) { out in
            out.appendRaw(#"{"removed":"#)
            out.appendJSONString(name)
            out.appendRaw(#","sub":"#)
            out.append(contentsOf: subscription.quotedName)
            out.appendRaw("}\n")
        }
    }

    /// The concrete, non-reserved channel named by `ch`.
    private func requestedOwnableChannel() throws(HeraldError) -> [UInt8] {
        guard let name = try scanner.string(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        if ChannelName.isReserved(name) {
            throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
        }
        try ChannelName.validateConcrete(name)
        return name
    }

    /// Appends the owner of a channel as `"cN"`, or `null`.
    func appendOwner(of name: [UInt8], to out: inout [UInt8]) {
        guard let owner = instances.owner(of: name) else {
            out.appendRaw("null")
            return
        }
        out.appendRaw(#""c"#)
        out.appendInt(owner)
        out.append(UInt8(ascii: "\""))
    }
}
