/// A raw answer to a request: who answered and the raw `data`.
public struct RawReply: Sendable {
    /// The answering connection's id.
    public let from: String?
    /// The reply's `data`; nil when the responder sent none.
    public let data: RawJSON?
}

/// Request/reply (PROTOCOL.md `req`/`reply`).
///
/// UNTESTED against a daemon that implements it: today's heraldd answers `unknown_op`, which
/// these calls throw as `.server(code: "unknown_op", …)` (see `isUnsupportedByDaemon`).
extension HeraldClient {
    /// Sends a request on its home channel and waits for the first reply, typed.
    /// - Parameters:
    ///   - request: the request; its type's `channel` must be concrete.
    ///   - timeout: seconds the daemon waits for a responder (its `timeout_ms`).
    /// - Returns: the decoded reply.
    /// - Throws: `timeout` / `no_responders` from the daemon, `.decoding`, `.notConnected`, ….
    public func request<Request: HeraldRequest>(_ request: Request, timeout: Double = 1) async throws(HeraldClientError) -> Request.Reply {
        try await self.request(request, to: Request.topic, timeout: timeout)
    }

    /// Sends a request on a topic (e.g. an instance channel) and waits for the first reply.
    /// - Parameters:
    ///   - request: the request.
    ///   - topic: a concrete channel carrying `Request`.
    ///   - timeout: seconds the daemon waits for a responder.
    /// - Returns: the decoded reply.
    /// - Throws: the daemon's `timeout` / `no_responders`, `.decoding`, `.notConnected`, ….
    public func request<Request: HeraldRequest>(_ request: Request, to topic: Topic<Request>, timeout: Double = 1) async throws(HeraldClientError) -> Request.Reply {
        let reply = try await self.request(raw: try RawJSON(encoding: request), to: topic.channel, timeout: timeout)
        return try (reply.data ?? .null).decode(as: Request.Reply.self)
    }

    /// Sends a raw request and waits for the first reply.
    /// - Parameters:
    ///   - data: the request's data, or nil.
    ///   - channel: a concrete channel.
    ///   - timeout: seconds the daemon waits for a responder.
    /// - Returns: the raw reply.
    /// - Throws: the daemon's `timeout` / `no_responders` / `unknown_op`, `.notConnected`, ….
    public func request(raw data: RawJSON?, to channel: Channel, timeout: Double = 1) async throws(HeraldClientError) -> RawReply {
        let name = try channel.validatedConcrete().name
        // The daemon times the request out itself; the client's own limit only guards a lost answer.
        let frame = try await ask("req", timeout: timeout + 5) { writer in
            writer.string("ch", name)
            writer.int("timeout_ms", Int(timeout * 1000))
            writer.raw("data", data)
        }
        return RawReply(from: frame.string("from"), data: frame.raw("data"))
    }

    /// Answers requests on a topic: the handler's return value is sent as the reply.
    ///
    /// A handler that throws sends no reply (the requester gets the daemon's `timeout`) and the
    /// error goes to the error handler. Use a `group` in `options` to share the load.
    /// - Parameters:
    ///   - topic: the channel or pattern requests arrive on.
    ///   - options: name, group, delivery.
    ///   - handler: computes the reply.
    /// - Returns: the subscription token (releasing it stops responding).
    /// - Throws: `.badChannel`, `.closed`.
    public func respond<Request: HeraldRequest>(
        to topic: Topic<Request>, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Request, EventMetadata) async throws(HeraldClientError) -> Request.Reply
    ) throws(HeraldClientError) -> Subscription {
        try subscribe(topic, options: options) { [weak self] request, metadata in
            guard let token = metadata.replyToken else { return }
            Task { [weak self] in
                do throws(HeraldClientError) {
                    let reply = try await handler(request, metadata)
                    try self?.reply(to: token, raw: try RawJSON(encoding: reply))
                } catch {
                    self?.report(error)
                }
            }
        }
    }

    /// Sends a reply to a request's token (fire-and-forget; the first reply wins).
    /// - Parameters:
    ///   - token: `EventMetadata.replyToken` of the request.
    ///   - data: the reply's data.
    /// - Throws: `.notConnected`, `.closed`.
    public func reply(to token: String, raw data: RawJSON?) throws(HeraldClientError) {
        var writer = FrameWriter(op: "reply")
        writer.string("to", token)
        writer.raw("data", data)
        try send(writer)
    }
}
