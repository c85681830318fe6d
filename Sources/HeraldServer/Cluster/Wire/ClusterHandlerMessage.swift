import HeraldBroker

/// A change of signal handlers announced on the interest channel (`ClusterHandlerScripts`):
/// `HOPNODE V OWNER` then ` SCORE PATTERN LEN:NAME` per handler (`A`, `S`) or ` LEN:NAME`
/// per name (`R`); `X` carries nothing. Names may hold any byte, hence their lengths.
struct ClusterHandlerMessage {
    /// `A`, `S`, `R` or `X`.
    let op: UInt8
    /// The node the owner is on.
    let node: Int
    /// The interest version of the change.
    let version: Int
    /// The owner's global client id.
    let owner: Int
    /// The handlers of `A` and `S`.
    let handlers: [ClusterHandler]
    /// The names of `R`.
    let names: [[UInt8]]

    /// Whether an interest-channel payload is one of these.
    static func isHandlerMessage(_ payload: [UInt8]) -> Bool { payload.first == UInt8(ascii: "H") }

    /// Parses a message. - Returns: nil when it is malformed.
    init?(_ payload: [UInt8]) {
        guard payload.count > 2, payload[0] == UInt8(ascii: "H") else { return nil }
        let op = payload[1]
        guard [UInt8(ascii: "A"), UInt8(ascii: "S"), UInt8(ascii: "R"), UInt8(ascii: "X")].contains(op) else { return nil }
        var at = 2
        guard let node = ClusterWireNumber.read(payload, at: &at), ClusterWireNumber.skip(32, in: payload, at: &at),
              let version = ClusterWireNumber.read(payload, at: &at), ClusterWireNumber.skip(32, in: payload, at: &at),
              let owner = ClusterWireNumber.read(payload, at: &at) else { return nil }
        var handlers: [ClusterHandler] = []
        var names: [[UInt8]] = []
        while at < payload.count {
            guard ClusterWireNumber.skip(32, in: payload, at: &at) else { return nil }
            var score = 0
            var pattern: [UInt8] = []
            if op != UInt8(ascii: "R") {
                guard let parsed = ClusterWireNumber.read(payload, at: &at), ClusterWireNumber.skip(32, in: payload, at: &at),
                      let end = payload[at...].firstIndex(of: 32) else { return nil }
                score = parsed
                pattern = Array(payload[at..<end])
                at = end + 1
            }
            guard let length = ClusterWireNumber.read(payload, at: &at),
                  ClusterWireNumber.skip(UInt8(ascii: ":"), in: payload, at: &at), length <= payload.count - at else { return nil }
            let name = Array(payload[at..<(at + length)])
            at += length
            if op == UInt8(ascii: "R") {
                names.append(name)
            } else {
                handlers.append(ClusterHandler(owner: owner, name: name, pattern: pattern, score: score))
            }
        }
        guard op != UInt8(ascii: "X") || (handlers.isEmpty && names.isEmpty) else { return nil }
        self.op = op
        self.node = node
        self.version = version
        self.owner = owner
        self.handlers = handlers
        self.names = names
    }
}
