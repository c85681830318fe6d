import Foundation
import Testing
import HeraldBroker

@Suite struct ErrorFrameTests {
    /// Sends `line` and returns the error frame it produced.
    private func error(_ line: String) -> [String: Any] {
        let harness = BrokerHarness()
        let s = harness.connect()
        return harness.request(s, line)
    }

    @Test(arguments: [
        (#"{"op":"ping""#, "bad_json"),
        (#"not json"#, "bad_json"),
        (#"{"op":"ping",}"#, "bad_json"),
        (#"["op","ping"]"#, "bad_json"),
        (#"{"op":"fly"}"#, "unknown_op"),
        (#"{"ch":"a"}"#, "missing_field"),
        (#"{"op":"sub"}"#, "missing_field"),
        (#"{"op":"pub"}"#, "missing_field"),
        (#"{"op":7}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","max":"3"}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","max":0}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","max":1.5}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","max":99999999999999999999999}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","once":"yes"}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","once":true,"max":2}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","group":""}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","sub":""}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","handle":"yes"}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","current":"yes"}"#, "bad_field"),
        (#"{"op":"sub","ch":"a.*","since":0}"#, "bad_field"),
        (#"{"op":"sub","ch":"a","since":-1}"#, "bad_field"),
        (#"{"op":"sub","ch":5}"#, "bad_field"),
        (#"{"op":"hello","echo":"no"}"#, "bad_field"),
        (#"{"op":"ping","rid":{"a":1}}"#, "bad_field"),
        (#"{"op":"sub","ch":"a..b"}"#, "bad_channel"),
        (#"{"op":"sub","ch":"a.>.b"}"#, "bad_channel"),
        (#"{"op":"pub","ch":"a.*"}"#, "bad_channel"),
        (#"{"op":"pub","ch":""}"#, "bad_channel"),
        (#"{"op":"pub","ch":"$sys.x"}"#, "forbidden"),
        (#"{"op":"channels","ch":"a b"}"#, "bad_channel"),
    ])
    func badRequestGetsErrorCode(line: String, code: String) {
        let frame = error(line)
        #expect(frame["error"] as? String == code, "\(line) → \(frame)")
        #expect((frame["message"] as? String)?.isEmpty == false)
    }

    @Test func opAndRidAreEchoedInErrors() {
        let frame = error(#"{"op":"sub","ch":"a..b","rid":"r-9"}"#)
        #expect(frame["op"] as? String == "sub")
        #expect(frame["rid"] as? String == "r-9")
        let unknown = error(#"{"op":"fly","rid":3}"#)
        #expect(unknown["op"] as? String == "fly")
        #expect(unknown["rid"] as? Int == 3)
    }

    @Test func brokenJSONEchoesNothingItCannotTrust() {
        let frame = error(#"{"op":"sub","rid":1"#)
        #expect(frame["op"] == nil)
        #expect(frame["rid"] == nil)
    }

    @Test func connectionClosesAfterMaxErrorsMalformedFramesInARow() {
        let harness = BrokerHarness(BrokerConfig(maxErrors: 3))
        let s = harness.connect()
        harness.send(s, "nope")
        harness.send(s, "nope")
        #expect(!s.closeAfterFlush)
        harness.send(s, "nope")
        let codes = harness.frames(s).compactMap { $0["error"] as? String }
        #expect(codes == ["bad_json", "bad_json", "bad_json", "too_many_errors"])
        #expect(s.closeAfterFlush)
        harness.send(s, #"{"op":"ping"}"#)
        #expect(harness.lines(s).isEmpty, "a closing connection is not served")
    }

    @Test func goodFrameResetsTheErrorRun() {
        let harness = BrokerHarness(BrokerConfig(maxErrors: 3))
        let s = harness.connect()
        for _ in 0..<10 {
            harness.send(s, "nope")
            harness.send(s, "nope")
            harness.send(s, #"{"op":"ping"}"#)
        }
        #expect(!s.closeAfterFlush)
    }

    @Test func nonProtocolErrorsDoNotCountTowardMaxErrors() {
        let harness = BrokerHarness(BrokerConfig(maxErrors: 2))
        let s = harness.connect()
        for _ in 0..<5 { harness.send(s, #"{"op":"pub","ch":"$sys.x"}"#) }
        #expect(!s.closeAfterFlush)
    }

    @Test func overlongLineIsAnsweredAndCounted() {
        let harness = BrokerHarness(BrokerConfig(maxLine: 100, maxErrors: 2))
        let s = harness.connect()
        harness.broker.lineTooLong(from: s, length: 101, now: 0)
        #expect(harness.frames(s).first?["error"] as? String == "line_too_long")
        harness.broker.lineTooLong(from: s, length: 101, now: 0)
        #expect(s.closeAfterFlush)
    }
}
