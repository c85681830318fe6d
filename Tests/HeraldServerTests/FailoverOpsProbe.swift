import Foundation
import HeraldTestSupport

/// A client on its own thread sending a round of different ops (`set`, `get`, receipted
/// `pub`, `sub`/`unsub`, `append`) one at a time until stopped, and sorting each answer:
/// ok, `unavailable`, anything else, or none within `answerTimeout` (a hang).
final class FailoverOpsProbe: @unchecked Sendable {
    /// What happened so far.
    struct Outcomes {
        /// Ops answered ok.
        var ok = 0
        /// Ops answered `unavailable`.
        var unavailable = 0
        /// Ops not answered within the timeout.
        var hangs = 0
        /// Answers that were neither ok nor `unavailable`.
        var unexpected: [String] = []
        /// When each ok came, to see service resume.
        var lastOk = Date.distantPast
    }

    /// What happened so far, read from any thread.
    let outcomes = LockedValue(Outcomes())
    private let thread = StoppableThread()
    private let port: Int
    private let name: String
    private let answerTimeout: Double

    /// Starts probing the node listening on `port`; `name` keeps channels apart.
    init(port: Int, name: String, answerTimeout: Double = 8) {
        self.port = port
        self.name = name
        self.answerTimeout = answerTimeout
        thread.start { [self] in run() }
    }

    /// Stops and waits for the thread to end (once; later calls return at once).
    func stop() {
        thread.stop()
    }

    private func run() {
        var client: TestClient?
        var round = 0
        while !thread.isStopped {
            do {
                let connection = try client ?? TestClient(port: port)
                if client == nil { _ = try connection.frame(timeout: answerTimeout) }
                client = connection
                round += 1
                let ops = [
                    #"{"op":"set","ch":"p.\#(name)","value":\#(round),"rid":"s\#(round)"}"#,
                    #"{"op":"get","ch":"p.\#(name)","rid":"g\#(round)"}"#,
                    #"{"op":"pub","ch":"e.\#(name)","data":\#(round),"rid":"p\#(round)"}"#,
                    #"{"op":"sub","ch":"x.\#(name).\#(round)","sub":"s\#(round)","rid":"u\#(round)"}"#,
                    #"{"op":"unsub","sub":"s\#(round)","rid":"v\#(round)"}"#,
                    #"{"op":"append","ch":"l.\#(name)","value":\#(round),"rid":"a\#(round)"}"#,
                ]
                for op in ops {
                    connection.send(op)
                    let answer = try connection.frame(timeout: answerTimeout)
                    outcomes.withLock { outcomes in
                        if answer["ok"] != nil {
                            outcomes.ok += 1
                            outcomes.lastOk = Date()
                        } else if answer["error"] as? String == "unavailable" {
                            outcomes.unavailable += 1
                        } else {
                            outcomes.unexpected.append("\(answer)")
                        }
                    }
                }
                Thread.sleep(forTimeInterval: 0.02)
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
}
