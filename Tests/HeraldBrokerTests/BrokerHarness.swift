import Foundation
import HeraldBroker

/// Drives a `Broker` without sockets: connect sessions, send lines, read the frames queued.
final class BrokerHarness {
    let broker: Broker
    var now = 0

    init(_ config: BrokerConfig = BrokerConfig(epoch: "e1")) {
        broker = Broker(config: config, now: 0, wallClock: { 1_700_000_000_000 })
    }

    /// Drives a broker built by the test (e.g. with an injected token source).
    init(broker: Broker) {
        self.broker = broker
    }

    /// Connects a session and discards its `info` frame.
    func connect(name: String? = nil, echo: Bool = true) -> Session {
        let session = broker.connect(id: nextID, now: now)
        nextID += 1
        _ = frames(session)
        if let name {
            send(session, #"{"op":"hello","name":"\#(name)","echo":\#(echo)}"#)
            _ = frames(session)
        } else if !echo {
            send(session, #"{"op":"hello","echo":false}"#)
            _ = frames(session)
        }
        return session
    }

    private var nextID = 1

    /// Sends one request line.
    func send(_ session: Session, _ line: String) {
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { broker.handleLine(UnsafeRawBufferPointer($0), from: session, now: now) }
    }

    /// Takes the raw lines queued for a session.
    func lines(_ session: Session) -> [String] {
        var taken: [UInt8] = []
        session.takeOutbound(into: &taken)
        return String(decoding: taken, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Takes the frames queued for a session, parsed.
    func frames(_ session: Session) -> [[String: Any]] {
        lines(session).map { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return ["unparsable": line]
            }
            return object
        }
    }

    /// Sends a line and returns the single frame it produced for the sender.
    func request(_ session: Session, _ line: String) -> [String: Any] {
        send(session, line)
        let answer = frames(session)
        return answer.count == 1 ? answer[0] : ["frames": answer]
    }

    /// Subscribes and checks the ok.
    @discardableResult
    func subscribe(_ session: Session, _ fields: String) -> [String: Any] {
        send(session, #"{"op":"sub",\#(fields)}"#)
        grantLeases()
        let answer = frames(session)
        return answer.count == 1 ? answer[0] : ["frames": answer]
    }
}

extension BrokerHarness {
    /// A harness whose broker runs in cluster mode as node `node` (the test plays the engine).
    static func clustered(node: Int, _ config: BrokerConfig = BrokerConfig(epoch: "e1")) -> (BrokerHarness, ClusterState) {
        let cluster = ClusterState(nodeIndex: node)
        let broker = Broker(config: config, now: 0, wallClock: { 1_700_000_000_000 }, cluster: cluster)
        return (BrokerHarness(broker: broker), cluster)
    }
}
