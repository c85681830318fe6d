import HeraldWire

extension Broker {
    /// `sub`: registers (or replaces, by name) a subscription and answers with its name.
    func subscribe(_ session: Session) throws(HeraldError) {
        let (pattern, isWildcard) = try requestedPattern()
        let isHandler = try scanner.bool(.handle) ?? false
        let isCompact = try scanner.bool(.compact) ?? false
        if isCompact && isHandler {
            throw HeraldError(.badField, "'compact' is for event subscriptions; a handler (handle:true) gets signal frames")
        }
        let catchUp = try requestedCatchUp(pattern: pattern, isWildcard: isWildcard)
        let max = try requestedMax()
        let group = try scanner.string(.group)
        if let group, group.isEmpty || group.count > 255 {
            throw HeraldError(.badField, "field 'group' must be 1 to 255 bytes")
        }
        let rawArgs = scanner.raw(.args)
        if let rawArgs, rawArgs.count > config.maxArgsBytes {
            // Checked before copying: 1 MiB of args per `sub` must not cost the daemon 1 MiB.
            throw HeraldError(.limit, "field 'args' is " + String(rawArgs.count) + " bytes; max_args_bytes is "
                + String(config.maxArgsBytes))
        }
        let args = rawArgs.map { Array($0) }
        let name = try scanner.string(.sub) ?? assignName(in: session)
        guard !name.isEmpty, name.count <= 255 else {
            throw HeraldError(.badField, "field 'sub' must be 1 to 255 bytes")
        }
        try admitSubscription(named: name, in: session)
        try admitUserSubscription(named: name, in: session)
        try admitArgs(rawArgs?.count ?? 0, replacing: session.subscriptions[name], in: session)
        if let old = session.subscriptions[name] { retire(old) }
        nextSerial += 1
        let subscription = Subscription(
            session: session, name: name, pattern: pattern, isWildcard: isWildcard,
            group: group, args: args, max: max, serial: nextSerial, isCompact: isCompact)
        subscription.isHandler = isHandler
        session.subscriptions[name] = subscription
        chargeArgs(args?.count ?? 0, to: session)
        applyLocks(to: subscription)
        if index.insert(subscription) {
            if !isWildcard { directoryAdd(pattern) }
        }
        presenceSubscribed(subscription)
        port.subscribed(self, subscription)
        session.account?.subscriptions += 1
        // Cluster mode reads `current` and history from Redis: the answer comes then.
        port.answerSubscribe(self, subscription, catchUp: catchUp)
    }

    /// Answers a new subscription and sends its catch-up from this node (`SingleNodePort`;
    /// in cluster mode, a `sub` without `current` or `since`).
    func answerSubscribeLocally(_ subscription: Subscription, catchUp: CatchUp) {
        let pattern = subscription.pattern
        answer(subscription.session, .sub) { out in
            out.appendRaw(#","sub":"#)
            out.append(contentsOf: subscription.quotedName)
            out.appendRaw(#","ch":"#)
            out.appendJSONString(pattern)
            if catchUp.since != nil { out.appendRaw(catchUp.recovered ? #","recovered":true"# : #","recovered":false"#) }
        }
        sendCatchUp(catchUp, to: subscription)
    }

    /// `unsub`: ends subscriptions by name, by pattern, or all of them.
    func unsubscribe(_ session: Session) throws(HeraldError) {
        var removed: [Subscription] = []
        if let name = try scanner.string(.sub) {
            if let subscription = session.subscriptions[name] { removed.append(subscription) }
        } else if let pattern = try scanner.string(.ch) {
            removed = session.subscriptions.values.filter { $0.pattern == pattern }
        } else if try scanner.bool(.all) == true {
            removed = Array(session.subscriptions.values)
        } else {
            throw HeraldError(.missingField, "unsub needs one of 'sub', 'ch' or 'all':true")
        }
        for subscription in removed { end(subscription) }
        answer(session, .unsub) { out in
            out.appendRaw(#","count":"#)
            out.appendInt(removed.count)
        }
    }

    /// Removes a subscription from its session and the index.
    func end(_ subscription: Subscription) {
        subscription.session.subscriptions[subscription.name] = nil
        retire(subscription)
    }

    /// The channel record for a concrete name, created on first use.
    func channel(named name: [UInt8]) -> Channel {
        if let existing = channels[name] { return existing }
        let created = Channel(name: name)
        channels[name] = created
        directoryAdd(name)
        if ChannelName.isReserved(name) { reservedChannelCount += 1 }
        return created
    }

    private func requestedPattern() throws(HeraldError) -> ([UInt8], Bool) {
        guard scanner.isPresent(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        let result = try scanner.withString(.ch) { bytes throws(HeraldError) in
            (Array(bytes), try ChannelName.validatePattern(bytes))
        }
        guard let result else { throw HeraldError(.missingField, "missing field 'ch'") }
        return result
    }

    private func requestedMax() throws(HeraldError) -> Int? {
        let once = try scanner.bool(.once) ?? false
        let max = try scanner.int(.max)
        if let max, max < 1 { throw HeraldError(.badField, "field 'max' must be at least 1") }
        guard once else { return max }
        if let max, max != 1 { throw HeraldError(.badField, "'once':true means 'max':1; got 'max':" + String(max)) }
        return 1
    }


    private func assignName(in session: Session) -> [UInt8] {
        while true {
            var name: [UInt8] = [UInt8(ascii: "s")]
            name.appendInt(session.nextAssignedName)
            session.nextAssignedName += 1
            if session.subscriptions[name] == nil { return name }
        }
    }
}
