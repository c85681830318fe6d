/// The unguessable token a request event carries in `reply`: 128 random bits, 32 hex digits.
///
/// Why random rather than a counter: with auth off any connection holding the token may send
/// `reply {to}`, so a token must not be derivable from others a subscriber saw. (With auth on
/// the token alone is not enough: see `PendingRequest.recipients`.) Kept as two words so the pending-request
/// table hashes 16 bytes, not an array.
struct ReplyToken: Hashable {
    let high: UInt64
    let low: UInt64

    /// Draws a token from a source of random 64-bit words.
    init(random: () -> UInt64) {
        high = random()
        low = random()
    }

    /// Parses 32 lowercase hex digits. - Returns: nil for anything else.
    init?(hex bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 32 else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        for (position, byte) in bytes.enumerated() {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if position < 16 { words.0 = words.0 << 4 | digit } else { words.1 = words.1 << 4 | digit }
        }
        high = words.0
        low = words.1
    }

    /// Appends the 32 hex digits (no quotes).
    func appendHex(to out: inout [UInt8]) {
        Self.appendHex(high, to: &out)
        Self.appendHex(low, to: &out)
    }

    private static func appendHex(_ word: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 60, through: 0, by: -4) {
            let nibble = UInt8(truncatingIfNeeded: word >> UInt64(shift)) & 0xF
            out.append(nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10)
        }
    }
}

/// A `req` waiting for its first reply.
struct PendingRequest {
    /// The token subscribers answer to.
    let token: ReplyToken
    /// Who asked; answered with the first reply, or `timeout`.
    let requester: Session
    /// The channel it was sent on: a replier must (still) be allowed to publish there.
    let channel: Channel
    /// With auth on, the connections the request was delivered to, the only ones whose
    /// `reply` is accepted (issue 12: seeing a token through a wide subscription is not a
    /// right to answer). Nil when it was sent with auth off: then the token is enough.
    /// Its size follows the request's own fan-out and it goes with the request.
    var recipients: Set<ConnectionID>?
    /// The request's raw `rid`, echoed in the answer.
    let rid: [UInt8]?
    /// How long it waits, for the `timeout` message.
    let timeoutMs: Int
    /// Cluster mode: how many nodes Redis sent it to (nil until the publish script said).
    var routedNodes: Int? = nil
    /// Cluster mode: how many of those reported they delivered it to nobody.
    var unheardNodes = 0
}

/// Requests in flight, by id (for deadlines), by token (for replies), by requester (so
/// a requester that goes leaves nothing behind) and by the requester's `rid` (for `cancel`).
struct PendingRequests {
    private var byID: [Int: PendingRequest] = [:]
    private var byToken: [ReplyToken: Int] = [:]
    private var byRequester: [ConnectionID: Set<Int>] = [:]
    private var byRid = OperationsByRid()
    private var nextID = 0
    /// Set while a request fans out with auth on, so `deliver` notes each recipient.
    private(set) var isCollectingRecipients = false
    /// The recipients noted so far, reused from one request to the next.
    private var collected: [ConnectionID] = []

    /// How many requests wait for a reply.
    var count: Int { byID.count }

    /// Registers a request. - Returns: its id.
    mutating func add(_ request: PendingRequest) -> Int {
        nextID += 1
        byID[nextID] = request
        byToken[request.token] = nextID
        byRequester[request.requester.id, default: []].insert(nextID)
        byRid.insert(nextID, connection: request.requester.id, rid: request.rid)
        return nextID
    }

    /// Whether a request this connection made still waits for its reply or its timeout.
    func hasRequests(of requester: ConnectionID) -> Bool {
        byRequester[requester] != nil
    }

    /// The id of the request with this token, if it still waits.
    func id(for token: ReplyToken) -> Int? {
        byToken[token]
    }

    /// Takes a request out. - Returns: it, when it was pending.
    mutating func take(_ id: Int) -> PendingRequest? {
        guard let request = byID.removeValue(forKey: id) else { return nil }
        byToken[request.token] = nil
        let requester = request.requester.id
        byRequester[requester]?.remove(id)
        if byRequester[requester]?.isEmpty == true { byRequester[requester] = nil }
        byRid.remove(id, connection: requester, rid: request.rid)
        // Dictionaries keep their capacity; a burst of requests should not pin it forever.
        if byID.isEmpty && byID.capacity > 4096 {
            byID = [:]
            byToken = [:]
            byRequester = [:]
        }
        return request
    }

    /// The request with this id, left in place (a refused reply must not take it out).
    func request(_ id: Int) -> PendingRequest? {
        byID[id]
    }

    /// Changes a waiting request in place (cluster mode counts its nodes' reports).
    mutating func update(_ id: Int, _ body: (inout PendingRequest) -> Void) {
        guard var request = byID[id] else { return }
        body(&request)
        byID[id] = request
    }

    /// Starts noting the connections a request is delivered to.
    mutating func beginCollectingRecipients() {
        isCollectingRecipients = true
    }

    /// Notes one delivery (a connection with several matching subscriptions appears again).
    mutating func noteRecipient(_ connection: ConnectionID) {
        collected.append(connection)
    }

    /// Stops noting. - Returns: the distinct connections noted since `begin`.
    mutating func endCollectingRecipients() -> Set<ConnectionID> {
        isCollectingRecipients = false
        let recipients = Set(collected)
        collected.removeAll(keepingCapacity: collected.capacity <= 4096)
        return recipients
    }

    /// Takes out of each request's recipients those for which `isRevoked` says so, so their
    /// `reply` is refused from now on. One walk over every pending request and its recipients
    /// per reload (not per connection): SIGHUP is rare and requests are short-lived, so no
    /// per-recipient index is kept on the request path.
    mutating func removeRecipients(where isRevoked: (PendingRequest, ConnectionID) -> Bool) {
        for (id, request) in byID {
            guard let recipients = request.recipients else { continue }
            let revoked = recipients.filter { isRevoked(request, $0) }
            if revoked.isEmpty { continue }
            byID[id]?.recipients?.subtract(revoked)
        }
    }

    /// How many requests of one requester wait for a reply.
    func count(of requester: ConnectionID) -> Int {
        byRequester[requester]?.count ?? 0
    }

    /// The ids of a requester's pending requests.
    func ids(of requester: ConnectionID) -> Set<Int> {
        byRequester[requester] ?? []
    }

    /// The ids of a requester's pending requests sent with `rid`, oldest first: what its
    /// `cancel {of: rid}` withdraws. Costs those requests, not every pending one.
    func ids(of requester: ConnectionID, rid: [UInt8]) -> [Int] {
        byRid.ids(for: OperationRid(connection: requester, rid: rid))
    }

    /// How many distinct `rid`s of pending requests are indexed (0 when none is pending).
    var ridCount: Int { byRid.count }
}
