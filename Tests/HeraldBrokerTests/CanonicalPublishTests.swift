import Foundation
import Testing
import HeraldBroker

/// A canonical `pub` line (read by the scanner's fast path) and the same request spelled
/// another way (read by the general scanner) must leave the broker in the same state and
/// produce the same frames, byte for byte; near-canonical lines keep their error frames.
@Suite struct CanonicalPublishTests {
    /// Everything a publish produced: the publisher's frames and the subscriber's.
    private struct Result: Equatable {
        var publisher: [String]
        var subscriber: [String]
    }

    /// Publishes `lines` in turn on a fresh broker with one subscriber on `a.>`.
    private static func publish(_ lines: [String]) -> Result {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        harness.subscribe(subscriber, #""ch":"a.>""#)
        let publisher = harness.connect()
        for line in lines { harness.send(publisher, line) }
        return Result(publisher: harness.lines(publisher), subscriber: harness.lines(subscriber))
    }

    /// Canonical lines and the same request with the keys in another order.
    static let pairs: [(canonical: String, reordered: String)] = [
        (#"{"op":"pub","ch":"a.b","data":"xxxxxxxxxxxxxx"}"#, #"{"ch":"a.b","data":"xxxxxxxxxxxxxx","op":"pub"}"#),
        (#"{"op":"pub","ch":"a.b","data":{"k":1}}"#, #"{"data":{"k":1},"op":"pub","ch":"a.b"}"#),
        (#"{"op":"pub","ch":"a.b","data":-1.5e3,"rid":7}"#, #"{"rid":7,"op":"pub","ch":"a.b","data":-1.5e3}"#),
        (#"{"op":"pub","ch":"a.b","data":null,"rid":"r"}"#, #"{"op":"pub","rid":"r","ch":"a.b","data":null}"#),
        (#"{"op":"pub","ch":"a.b","data":true,"rid":null}"#, #"{"op":"pub","ch":"a.b","rid":null,"data":true}"#),
        (#"{"op":"pub","ch":"a.b","data":"caf\u00e9 \"q\""}"#, #"{"data":"caf\u00e9 \"q\"","ch":"a.b","op":"pub"}"#),
        (#"{"op":"pub","ch":"z","data":1,"rid":3}"#, #"{"ch":"z","op":"pub","data":1,"rid":3}"#),
        (#"{"op":"pub","ch":"","data":1,"rid":1}"#, #"{"ch":"","op":"pub","data":1,"rid":1}"#),
        (#"{"op":"pub","ch":"a.*","data":1,"rid":1}"#, #"{"ch":"a.*","op":"pub","data":1,"rid":1}"#),
        (#"{"op":"pub","ch":"$sys.x","data":1,"rid":1}"#, #"{"ch":"$sys.x","op":"pub","data":1,"rid":1}"#),
        (#"{"op":"pub","ch":"a b","data":1,"rid":1}"#, #"{"ch":"a b","op":"pub","data":1,"rid":1}"#),
    ]

    @Test(arguments: pairs)
    func canonicalAndReorderedLinesGiveTheSameFrames(pair: (canonical: String, reordered: String)) {
        // Twice each, so the publisher's repeated-channel shortcut is covered as well.
        let fast = Self.publish([pair.canonical, pair.canonical])
        let general = Self.publish([pair.reordered, pair.reordered])
        #expect(fast == general)
        #expect(!fast.publisher.isEmpty || !fast.subscriber.isEmpty)
    }

    @Test func aCanonicalPublishIsDeliveredAndAcknowledged() {
        let result = Self.publish([#"{"op":"pub","ch":"a.b","data":"hi","rid":5}"#])
        #expect(result.publisher == [#"{"ok":"pub","rid":5,"seq":1,"receivers":1}"#])
        #expect(result.subscriber.count == 1)
        #expect(result.subscriber.first?.contains(#""data":"hi""#) == true)
    }

    /// Near-canonical lines, each with the error code it has always had.
    static let errors: [(line: String, code: String)] = [
        (#"{"op":"pub","ch":"a\u002e","data":1}"#, "bad_channel"),
        (#"{"op":"pub","ch":7,"data":1}"#, "bad_field"),
        (#"{"op":"pub","ch":"a.b","data":1,"rid":{"x":1}}"#, "bad_field"),
        (#"{"op":"pub","ch":"a.b","data":1} x"#, "bad_json"),
        (#"{"op":"pub","ch":"a.b","data":1"#, "bad_json"),
        (#"{"op":"pub","ch":"a.b","data":1,"data":2}"#, "bad_json"),
        (#"{"op":"pub","ch":"a.b","data":1,"rid":1,"rid":2}"#, "bad_json"),
        (#"{"op":"pub","ch":"a.b","data":01}"#, "bad_json"),
        (#"{"op":"pub","ch":"a.b","data":"\q"}"#, "bad_json"),
        (#"{"op":"pub","ch":"a..b","data":1}"#, "bad_channel"),
        (#"{"op":"pub","ch":"$sys.x","data":1}"#, "forbidden"),
    ]

    @Test(arguments: errors)
    func nearCanonicalLinesKeepTheirErrors(entry: (line: String, code: String)) {
        let reference = Self.publish([entry.line])
        #expect(reference.subscriber.isEmpty)
        #expect(reference.publisher.count == 1)
        let frame = reference.publisher.first.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(frame?["error"] as? String == entry.code)
    }

    @Test func hugeCanonicalDataIsForwardedVerbatim() {
        let data = "\"" + String(repeating: "x", count: 200_000) + "\""
        let result = Self.publish([#"{"op":"pub","ch":"a.b","data":"# + data + "}"])
        #expect(result.subscriber.count == 1)
        #expect(result.subscriber.first?.hasSuffix(#""data":"# + data + "}") == true)
    }
}
