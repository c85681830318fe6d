import HeraldWire

/// `req` and `reply`: request/reply over the fan-out, with one deadline per request.
///
/// A request is an event carrying a `reply` token, delivered like a `pub` (queue groups
/// make it load-balanced, locks and `echo` apply). The first `reply` to the token reaches
/// the requester as `{"ok":"req","from":C,"data":…}`; later ones are dropped. Nobody to
/// deliver to is `no_responders` at once; no reply in time is `timeout`. Tokens are 128
/// random bits per request, from the broker's injected source (a CSPRNG by default).
///
/// With auth on a token is not a right to answer (issue 12): a `reply` is accepted only from
/// a connection the request was delivered to whose user may publish on the request's
/// channel; anyone else is `forbidden` and the request keeps waiting for its real answer.
/// With auth off the token is enough, as it always was.
extension Broker {
    /// How long a request waits when it names no `timeout_ms`.
    static let defaultRequestTimeoutMs = 1_000
    /// The longest `timeout_ms` accepted (one hour), so a deadline cannot overflow the clock.
    static let maxRequestTimeoutMs = 3_600_000

    /// A random 64-bit word from the system CSPRNG: the default source of reply tokens.
    public static func secureRandomWord() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }

    /// The earliest pending deadline (monotonic ms), or nil when none is pending; the
    /// server arms its one timer for it after each loop iteration.
    public var nextDeadline: Int? { deadlines.next }

    /// `req {ch, data?, timeout_ms?}`: fans out a request event and waits for a reply.
    func request(from session: Session, now: Int) throws(HeraldError) {
        let timeout = try scanner.int(.timeoutMs) ?? Broker.defaultRequestTimeoutMs
        guard timeout >= 1, timeout <= Broker.maxRequestTimeoutMs else {
            throw HeraldError(.badField, "field 'timeout_ms' must be 1 to " + String(Broker.maxRequestTimeoutMs))
        }
        try admitRequest(from: session)
        try port.request(self, from: session, now: now, timeoutMs: timeout)
    }

    /// An admitted `req` on a node alone (`SingleNodePort`).
    func requestLocally(from session: Session, now: Int, timeoutMs timeout: Int) throws(HeraldError) {
        let channel = try publishChannel(for: session)
        let token = ReplyToken(random: randomWord)
        channel.seq += 1
        var replyField: [UInt8] = []
        replyField.appendRaw(#","reply":""#)
        token.appendHex(to: &replyField)
        replyField.append(UInt8(ascii: "\""))
        buildSharedParts(seq: channel.seq, from: session, data: scanner.raw(.data), middle: replyField)
        let guarded = config.auth.isEnabled
        if guarded { requests.beginCollectingRecipients() }
        let receivers = fanOut(on: channel, from: session)
        let recipients = guarded ? requests.endCollectingRecipients() : nil
        guard receivers > 0 else {
            throw HeraldError(.noResponders, "no subscriber received the request on \""
                + String(decoding: channel.name, as: UTF8.self) + "\"")
        }
        // Delivering can close the requester itself (its own subscription overflowed); a
        // requester that has left must leave nothing behind.
        guard !session.hasLeft else { return }
        let pending = PendingRequest(
            token: token, requester: session, channel: channel, recipients: recipients,
            rid: current.ridRaw.map { Array($0) }, timeoutMs: timeout)
        let id = requests.add(pending)
        deadlines.schedule(at: now + timeout, kind: .request, id: id)
    }

    /// `reply {to, data?}`: answers a request; a token that is unknown, expired or already
    /// answered is ignored. With a `rid` the answer says whether the reply was `delivered`.
    /// - Throws: `forbidden` (auth on) when the request was not delivered to this connection
    ///   or its user may not publish on the request's channel; the request stays pending.
    func reply(from session: Session) throws(HeraldError) {
        try port.reply(self, from: session)
    }

    /// `reply` on a node alone (`SingleNodePort`).
    func replyLocally(from session: Session) throws(HeraldError) {
        guard scanner.isPresent(.to) else { throw HeraldError(.missingField, "missing field 'to'") }
        let found = try scanner.withString(.to) { bytes throws(HeraldError) in
            ReplyToken(hex: bytes).flatMap { requests.id(for: $0) }
        }
        var delivered = false
        if let id = found ?? nil, let pending = requests.request(id) {
            try checkReplyRight(of: session, to: pending)
            _ = requests.take(id)
            deadlines.cancel(kind: .request, id: id)
            delivered = true
            let data = scanner.raw(.data)
            write(pending.requester) { out in
                out.appendRaw(#"{"ok":"req""#)
                appendStoredRid(pending.rid, to: &out)
                out.appendRaw(#","from":"#)
                out.append(contentsOf: session.quotedClientID)
                if let data {
                    out.appendRaw(#","data":"#)
                    out.appendRaw(data)
                }
                out.appendRaw("}\n")
            }
            closeIfDrained(pending.requester)
        }
        guard current.ridRaw != nil else { return }
        answer(session, .reply) { out in
            out.appendRaw(delivered ? #","delivered":true"# : #","delivered":false"#)
        }
    }

    /// With auth on, refuses a reply from a connection the request was not delivered to, or
    /// whose user may not publish on its channel (a request made before auth was turned on
    /// recorded no recipients, so nobody may answer it; it times out).
    private func checkReplyRight(of session: Session, to pending: PendingRequest) throws(HeraldError) {
        guard config.auth.isEnabled else { return }
        guard pending.recipients?.contains(session.id) == true else {
            throw HeraldError(.forbidden, "this connection was not sent the request it replies to")
        }
        guard mayPublish(session, to: pending.channel.name) else {
            throw HeraldError(.forbidden, "no publish permission for \""
                + String(decoding: pending.channel.name, as: UTF8.self) + "\", the request's channel")
        }
    }

    /// After SIGHUP: `session` leaves the recipients of every request on a channel its user
    /// may no longer publish on, so a reply from it is `forbidden` from now on.
    func revokeReplyRights() {
        port.revokeDeliveredRequestRights(self)
        guard requests.count > 0 else { return }
        requests.removeRecipients { request, recipient in
            guard let session = sessions[recipient] else { return true }
            return !mayPublish(session, to: request.channel.name)
        }
    }

    /// Fires every deadline due at `now`: requests without a reply get `timeout`.
    ///
    /// `tick` calls this too; the server may call it alone when its timer was armed for a
    /// deadline rather than a heartbeat tick.
    /// - Parameter now: the monotonic clock in ms.
    public func fireDeadlines(now: Int) {
        lastNow = now
        while let due = deadlines.popDue(now: now) {
            switch due.kind {
            case .request: expireRequest(due.id)
            case .signalOffer: expireSignalOffer(due.id, now: now)
            case .auth: expireAuthentication(of: due.id, now: now)
            case .deliveredRequest, .remoteOffer: port.deadlinePassed(self, due.kind, id: due.id)
            }
        }
        flushSystemEvents()
    }

    /// Forgets every request a departing connection made, with their deadlines.
    func cancelRequests(of session: Session) {
        for id in requests.ids(of: session.id) {
            _ = requests.take(id)
            deadlines.cancel(kind: .request, id: id)
        }
    }

    private func expireRequest(_ id: Int) {
        guard let pending = requests.take(id) else { return }
        write(pending.requester) { out in
            out.appendRaw(#"{"error":"timeout","message":"no reply within "#)
            out.appendInt(pending.timeoutMs)
            out.appendRaw(#" ms","op":"req""#)
            appendStoredRid(pending.rid, to: &out)
            out.appendRaw("}\n")
        }
        closeIfDrained(pending.requester)
    }
}
