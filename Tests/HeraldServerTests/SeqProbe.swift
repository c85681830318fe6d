import Foundation
import HeraldTestSupport

/// A publisher or a subscriber on one node during failovers (issue 31): the publisher sends
/// receipted `pub`s on `talk` one at a time and records each acknowledged `seq` with its
/// data; the subscriber records every `talk` event's `seq` and data, and whether its
/// connection ended (then it did not stay connected, and missing events are no defect).
final class SeqProbe: @unchecked Sendable {
    /// What it recorded.
    struct Record {
        /// `(seq, data)` of each acknowledged publish or received event, in order.
        var pairs: [(seq: Int, data: String)] = []
        /// Publishes answered `unavailable` (or not at all within the timeout).
        var refused = 0
        /// When the last acknowledgement came.
        var lastOk = Date.distantPast
        /// Whether the subscriber's connection ended (`node_reset`, a close).
        var ended = false
    }

    /// What it recorded so far, read from any thread.
    let record = LockedValue(Record())
    private let thread = StoppableThread()

    /// Publishes on the node at `port`, data `NAME-N`.
    init(publishingTo port: Int, name: String) {
        thread.start { [self] in publish(port, name) }
    }

    private var subscriber: TestClient?

    /// Subscribes on the node at `port` (the `sub` is answered before this returns).
    init(subscribingTo port: Int) throws {
        let client = try TestClient(port: port)
        _ = try client.frame()
        _ = try client.request(#"{"op":"sub","ch":"talk","sub":"t"}"#)
        subscriber = client
        thread.start { [self] in read() }
    }

    /// Stops and waits for the thread.
    func stop() {
        thread.stop()
    }

    private func publish(_ port: Int, _ name: String) {
        var client: TestClient?
        var n = 0
        while !thread.isStopped {
            do {
                let connection = try client ?? TestClient(port: port)
                if client == nil { _ = try connection.frame() }
                client = connection
                n += 1
                let answer = try answer(to: n, on: connection, #"{"op":"pub","ch":"talk","data":"\#(name)-\#(n)","rid":\#(n)}"#)
                if let seq = answer["seq"] as? Int {
                    record.withLock { $0.pairs.append((seq, "\(name)-\(n)")); $0.lastOk = Date() }
                } else {
                    record.withLock { $0.refused += 1 }
                    Thread.sleep(forTimeInterval: 0.02)
                }
            } catch {
                client = nil
                record.withLock { $0.refused += 1 }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Sends `line` and returns the frame answering `rid` (a frame with another `rid`, or
    /// none, such as a notice, is not this request's answer: taking the next frame instead
    /// could pair one publish's `seq` with the next one's data).
    private func answer(to rid: Int, on connection: TestClient, _ line: String) throws -> [String: Any] {
        connection.send(line)
        while true {
            let frame = try connection.frame()
            if frame["rid"] as? Int == rid { return frame }
        }
    }

    private func read() {
        guard let client = subscriber else { return }
        while !thread.isStopped {
            let frame: [String: Any]
            do {
                frame = try client.frame(timeout: 0.3)
            } catch TestClient.ClientError.closed {
                record.withLock { $0.ended = true }
                return
            } catch {
                continue
            }
            if frame["error"] != nil { record.withLock { $0.ended = true }; return }
            guard frame["event"] as? String == "talk", let seq = frame["seq"] as? Int, let data = frame["data"] as? String else { continue }
            record.withLock { $0.pairs.append((seq, data)) }
        }
    }
}
