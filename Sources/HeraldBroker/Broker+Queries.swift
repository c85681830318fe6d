import HeraldWire

extension Broker {
    /// `stats`: the daemon's counters.
    func answerStats(_ session: Session, now: Int) {
        answer(session, .stats) { out in
            for figure in statsFigures(now: now) { appendCounter(&out, figure.name, figure.value) }
        }
    }

    /// `channels`: known channels, optionally filtered by a pattern, sorted by name.
    ///
    /// Without a filter the daemon's `$…` channels are left out, as a `>` filter leaves
    /// them out; `{"ch":"$sys.>"}` lists them.
    func answerChannels(_ session: Session) throws(HeraldError) {
        let filter = try scanner.withString(.ch) { bytes throws(HeraldError) -> [UInt8] in
            _ = try ChannelName.validatePattern(bytes)
            return Array(bytes)
        }
        // A channel is known once it carried an event or was declared (it has a record) or
        // was subscribed to exactly. `$…` channels show only when the filter asks for them.
        var names = Set(channels.keys)
        names.formUnion(index.concretePatterns)
        names.formUnion(links.keys)
        let listed = names
            .filter { name in filter.map { matches($0, name) } ?? !ChannelName.isReserved(name) }
            .sorted { $0.lexicographicallyPrecedes($1) }
        answer(session, .channels) { out in
            out.appendRaw(#","channels":["#)
            for (position, channel) in listed.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.appendRaw(#"{"ch":"#)
                out.appendJSONString(channel)
                appendCounter(&out, "subs", index.matchCount(for: channel))
                out.appendRaw(#","owner":"#)
                appendOwner(of: channel, to: &out)
                out.appendRaw(#","has_value":"#)
                out.appendRaw(store.state(of: channel)?.hasContent == true ? "true" : "false")
                if let link = links[channel] {
                    out.appendRaw(#","link":"#)
                    out.appendJSONString(link.parent)
                }
                appendCounter(&out, "seq", channels[channel]?.seq ?? 0)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    /// `subs`: the caller's own subscriptions, in creation order.
    func answerSubs(_ session: Session) {
        let listed = session.subscriptions.values.sorted { $0.serial < $1.serial }
        answer(session, .subs) { out in
            out.appendRaw(#","subs":["#)
            for (position, subscription) in listed.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                appendDescription(of: subscription, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    private func appendDescription(of subscription: Subscription, to out: inout [UInt8]) {
        out.appendRaw(#"{"sub":"#)
        out.append(contentsOf: subscription.quotedName)
        out.appendRaw(#","ch":"#)
        out.appendJSONString(subscription.pattern)
        if let group = subscription.group {
            out.appendRaw(#","group":"#)
            out.appendJSONString(group)
        }
        if subscription.isHandler { out.appendRaw(#","handle":true"#) }
        if let max = subscription.max { appendCounter(&out, "max", max) }
        if let remaining = subscription.remaining { appendCounter(&out, "remaining", remaining) }
        if let args = subscription.args {
            out.appendRaw(#","args":"#)
            out.append(contentsOf: args)
        }
        out.append(UInt8(ascii: "}"))
    }

    private func matches(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        pattern.withUnsafeBytes { p in name.withUnsafeBytes { ChannelName.matches(pattern: p, channel: $0) } }
    }

    func appendCounter(_ out: inout [UInt8], _ key: String, _ value: Int) {
        out.append(UInt8(ascii: ","))
        out.appendJSONString(key)
        out.append(UInt8(ascii: ":"))
        out.appendInt(value)
    }
}
