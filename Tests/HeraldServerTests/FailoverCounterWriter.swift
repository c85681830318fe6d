import Foundation
import HeraldTestSupport

/// A client on its own thread incrementing the retained counter `k` with `get` and
/// `set … if_rev` until stopped, recording every acknowledged write (value, rev, when)
/// and every other outcome, for the failover tests. Each request waits at most
/// `answerTimeout`; a request that gets no answer in time counts as a hang.
final class FailoverCounterWriter: @unchecked Sendable {
    /// One acknowledged `set`.
    struct Ack {
        /// The value written.
        let value: Int
        /// The `rev` the answer gave it.
        let rev: Int
        /// When the answer came.
        let at: Date
    }

    /// What happened so far.
    struct Outcomes {
        /// The acknowledged writes, in order.
        var acks: [Ack] = []
        /// When each `get` was answered with the value.
        var reads: [Date] = []
        /// `unavailable` answers (to `get` or `set`).
        var unavailable = 0
        /// When each `unavailable` came.
        var unavailableAt: [Date] = []
        /// `conflict` answers (the other writer got there first).
        var conflicts = 0
        /// Requests not answered within the timeout.
        var hangs = 0
        /// Answers that were none of ok, `conflict`, `unavailable`.
        var unexpected: [String] = []
    }

    /// What happened so far, read from any thread.
    let outcomes = LockedValue(Outcomes())
    private let thread = StoppableThread()
    private let port: Int
    private let answerTimeout: Double

    /// Starts writing through the node listening on `port`.
    init(port: Int, answerTimeout: Double = 8) {
        self.port = port
        self.answerTimeout = answerTimeout
        thread.start { [self] in run() }
    }

    /// Stops and waits for the thread to end (once; later calls return at once).
    func stop() {
        thread.stop()
    }

    private func run() {
        var client: TestClient?
        var rid = 0
        while !thread.isStopped {
            do {
                let connection = try client ?? TestClient(port: port)
                if client == nil { _ = try connection.frame(timeout: answerTimeout) }
                client = connection
                rid += 1
                connection.send(#"{"op":"get","ch":"k","rid":\#(rid)}"#)
                let got = try connection.frame(timeout: answerTimeout)
                guard let rev = got["rev"] as? Int else {
                    note(got)
                    continue
                }
                let value = got["value"] as? Int ?? 0
                outcomes.withLock { $0.reads.append(Date()) }
                rid += 1
                connection.send(#"{"op":"set","ch":"k","value":\#(value + 1),"if_rev":\#(rev),"rid":\#(rid)}"#)
                let put = try connection.frame(timeout: answerTimeout)
                if put["ok"] as? String == "set", let newRev = put["rev"] as? Int, put["rid"] as? Int == rid {
                    outcomes.withLock { $0.acks.append(Ack(value: value + 1, rev: newRev, at: Date())) }
                } else {
                    note(put)
                }
            } catch TestClient.ClientError.timeout {
                outcomes.withLock { $0.hangs += 1 }
                client = nil
            } catch {
                outcomes.withLock { $0.unexpected.append("\(error)") }
                client = nil
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// Counts a refused answer; `unavailable` waits a little before trying again.
    private func note(_ frame: [String: Any]) {
        switch frame["error"] as? String {
        case "conflict": outcomes.withLock { $0.conflicts += 1 }
        case "unavailable":
            outcomes.withLock { outcomes in
                outcomes.unavailable += 1
                outcomes.unavailableAt.append(Date())
            }
            Thread.sleep(forTimeInterval: 0.05)
        default: outcomes.withLock { $0.unexpected.append("\(frame)") }
        }
    }
}
