import HeraldWire

/// The kind of access an op needs on the channel it names.
public enum ChannelAccess: Sendable, Equatable {
    /// Changing what others see: events, requests, state, signals, ownership, routing, locks.
    case publish
    /// Reading: subscriptions, state, channel listings, lock listings.
    case subscribe
}

extension Op {
    /// The access this op needs on its `ch` (PROTOCOL.md, Auth and permissions); nil for ops
    /// that name no channel or only answer what the connection was sent.
    public var requiredAccess: ChannelAccess? {
        switch self {
        case .pub, .req, .set, .del, .touch, .append, .assign, .splice, .signal, .declare, .remove,
             .link, .unlink, .lock, .unlock:
            return .publish
        case .sub, .get, .channels, .locks, .presence:
            return .subscribe
        case .hello, .ping, .pong, .unsub, .stats, .subs, .reply, .handled, .callback, .cancel, .clients, .kick, .handlers:
            return nil
        }
    }
}

/// Per-user permissions, checked before an op runs so a refused op changes nothing.
extension Broker {
    /// Refuses an op whose channel the user may not reach with `forbidden`.
    ///
    /// A concrete `ch` must be permitted; a pattern (`sub`, `channels`, `lock`) must be
    /// covered whole by one allow pattern and overlap no deny pattern (refused, never
    /// filtered). `channels` without `ch` asks about every channel, as `>`. `link` needs
    /// `publish` on `parent` too. Frames whose `ch` is missing or invalid pass here and get
    /// their usual error from the op itself. Concrete names are checked without copying.
    ///
    /// `stats` names no channel but reports on every connection and channel, the daemon-wide
    /// view `$sys.>` gives, so it needs `subscribe` on `$sys.>` (issue 12).
    func checkPermission(_ op: Op, of user: AuthUser) throws(HeraldError) {
        if op == .stats { return try checkSystemView(user) }
        if op == .clients || op == .kick || op == .handlers {
            guard user.isAdmin else { throw HeraldError(.forbidden, op.rawValue + " is for users with admin: true") }
            return
        }
        guard let access = op.requiredAccess else { return }
        let rule = access == .publish ? user.publish : user.subscribe
        if rule.isUnrestricted { return }
        if op == .channels && !scanner.isPresent(.ch) {
            if !rule.permits(pattern: [UInt8(ascii: ">")]) { throw forbidden(op, [UInt8(ascii: ">")]) }
            return
        }
        if op == .sub, let about = try presenceSubject() {
            // A subscription to `$presence.CH` needs subscribe rights on CH itself.
            let isPattern = (try? ChannelName.validatePattern(about)) ?? false
            let permitted = isPattern ? rule.permits(pattern: about) : about.withUnsafeBytes { rule.permits(channel: $0) }
            if !permitted { throw forbidden(op, about) }
            return
        }
        try checkChannelField(.ch, op, rule)
        if op == .link { try checkChannelField(.parent, op, rule) }
    }

    /// For a `sub` on `$presence.X`: X, the channel or pattern it watches presence of.
    private func presenceSubject() throws(HeraldError) -> [UInt8]? {
        guard scanner[.ch]?.kind == .string, let name = try scanner.string(.ch), Broker.isPresencePattern(name) else { return nil }
        return Array(name.dropFirst(Broker.presencePrefix.count))
    }

    /// The pattern whose `subscribe` permission `stats` needs.
    static let systemViewPattern: [UInt8] = Array("$sys.>".utf8)

    /// Refuses `stats` to a user who may not subscribe to `$sys.>`.
    private func checkSystemView(_ user: AuthUser) throws(HeraldError) {
        guard user.subscribe.permits(pattern: Broker.systemViewPattern) else {
            throw HeraldError(.forbidden, "stats needs subscribe permission for \"$sys.>\"")
        }
    }

    /// Whether `session` may subscribe to the concrete channel `name` now: always with auth
    /// off (no user), else by its user's `subscribe` rule. Checked where the daemon hands a
    /// connection something derived from a channel without a `sub` (a signal offer).
    func maySubscribe(_ session: Session, to name: [UInt8]) -> Bool {
        guard let rule = session.user?.subscribe, !rule.isUnrestricted else { return true }
        return name.withUnsafeBytes { rule.permits(channel: $0) }
    }

    /// Whether `session` may publish on the concrete channel `name` now: always with auth
    /// off (no user), else by its user's `publish` rule. Checked where an op acts on a
    /// channel it does not name (a `reply` answers on the request's channel).
    func mayPublish(_ session: Session, to name: [UInt8]) -> Bool {
        guard let rule = session.user?.publish, !rule.isUnrestricted else { return true }
        return name.withUnsafeBytes { rule.permits(channel: $0) }
    }

    private func checkChannelField(_ field: RequestField, _ op: Op, _ rule: ChannelRule) throws(HeraldError) {
        guard scanner[field]?.kind == .string else { return }
        let refused = try scanner.withString(field) { bytes throws(HeraldError) -> [UInt8]? in
            guard let isPattern = try? ChannelName.validatePattern(bytes) else { return nil }
            if isPattern {
                let pattern = Array(bytes)
                return rule.permits(pattern: pattern) ? nil : pattern
            }
            return rule.permits(channel: bytes) ? nil : Array(bytes)
        }
        if let refused = refused ?? nil { throw forbidden(op, refused) }
    }

    private func forbidden(_ op: Op, _ channel: [UInt8]) -> HeraldError {
        let verb = op.requiredAccess == .publish ? "publish" : "subscribe"
        return HeraldError(.forbidden, "no " + verb + " permission for \"" + String(decoding: channel, as: UTF8.self) + "\"")
    }
}
