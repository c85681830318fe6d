import Foundation
import Testing
import HeraldBroker

/// `append`, `assign`, `splice`, lists made by `set`, and the list-mirror property (issue 6).
@Suite struct RetainedListTests {
    @Test func appendAssignSpliceBuildTheList() {
        let harness = BrokerHarness()
        let client = harness.connect()
        #expect(harness.lines(sending: client, #"{"op":"append","ch":"l","value":"a"}"#) == [#"{"ok":"append","rev":1,"index":0}"#])
        _ = harness.request(client, #"{"op":"append","ch":"l","value":{"b":1}}"#)
        _ = harness.request(client, #"{"op":"assign","ch":"l","index":0,"value":"A"}"#)
        _ = harness.request(client, #"{"op":"splice","ch":"l","index":1,"remove":1,"insert":[1, [2,3] ,"x,y"]}"#)
        #expect(harness.lines(sending: client, #"{"op":"get","ch":"l"}"#)
            == [#"{"ok":"get","ch":"l","rev":4,"value":["A",1,[2,3],"x,y"]}"#])
    }

    @Test func listEventsCarryIndexOrSpliceFields() {
        let harness = BrokerHarness()
        let subscriber = harness.connect()
        let writer = harness.connect()
        harness.subscribe(subscriber, #""ch":"l""#)
        harness.send(writer, #"{"op":"append","ch":"l","value":5}"#)
        harness.send(writer, #"{"op":"assign","ch":"l","index":0,"value":6}"#)
        harness.send(writer, #"{"op":"splice","ch":"l","index":0,"remove":1,"insert":[7,8]}"#)
        harness.send(writer, #"{"op":"splice","ch":"l","index":2}"#)
        #expect(harness.lines(subscriber) == [
            #"{"event":"l","sub":"s1","seq":1,"from":"c2","kind":"index","rev":1,"index":0,"value":5}"#,
            #"{"event":"l","sub":"s1","seq":2,"from":"c2","kind":"index","rev":2,"index":0,"value":6}"#,
            #"{"event":"l","sub":"s1","seq":3,"from":"c2","kind":"splice","rev":3,"index":0,"remove":1,"insert":[7,8]}"#,
            #"{"event":"l","sub":"s1","seq":4,"from":"c2","kind":"splice","rev":4,"index":2,"remove":0,"insert":[]}"#,
        ])
    }

    @Test func setWithAnArrayMakesAListAndAValueRefusesListOps() {
        let harness = BrokerHarness()
        let client = harness.connect()
        _ = harness.request(client, #"{"op":"set","ch":"l","value":[ 1 , 2 ]}"#)
        #expect(harness.request(client, #"{"op":"append","ch":"l","value":3}"#)["index"] as? Int == 2)
        _ = harness.request(client, #"{"op":"set","ch":"v","value":{"not":"a list"}}"#)
        for line in [#"{"op":"append","ch":"v","value":1}"#, #"{"op":"assign","ch":"v","index":0,"value":1}"#,
                     #"{"op":"splice","ch":"v","index":0}"#] {
            let refused = harness.request(client, line)
            #expect(refused["error"] as? String == "type", "\(line)")
        }
        #expect(harness.request(client, #"{"op":"get","ch":"v"}"#)["rev"] as? Int == 1, "nothing applied")
    }

    @Test(arguments: [
        (#"{"op":"assign","ch":"l","index":2,"value":0}"#, "range"),
        (#"{"op":"assign","ch":"unset","index":0,"value":0}"#, "range"),
        (#"{"op":"assign","ch":"l","index":-1,"value":0}"#, "range"),
        (#"{"op":"splice","ch":"l","index":3}"#, "range"),
        (#"{"op":"splice","ch":"l","index":1,"remove":2}"#, "range"),
        (#"{"op":"splice","ch":"l","index":0,"remove":-1}"#, "bad_field"),
        (#"{"op":"splice","ch":"l","index":0,"insert":5}"#, "bad_field"),
        (#"{"op":"splice","ch":"l"}"#, "missing_field"),
        (#"{"op":"assign","ch":"l","value":1}"#, "missing_field"),
        (#"{"op":"assign","ch":"l","index":0}"#, "missing_field"),
        (#"{"op":"append","ch":"l"}"#, "missing_field"),
        (#"{"op":"append","ch":"l","value":1,"if_rev":7}"#, "conflict"),
        (#"{"op":"append","ch":"l.*","value":1}"#, "bad_channel"),
        (#"{"op":"assign","ch":"l","index":"0","value":1}"#, "bad_field"),
    ])
    func badListRequestGetsErrorCode(line: String, code: String) {
        let harness = BrokerHarness()
        let client = harness.connect()
        _ = harness.request(client, #"{"op":"set","ch":"l","value":["a","b"]}"#)
        #expect(harness.request(client, line)["error"] as? String == code, "\(line)")
        #expect(harness.request(client, #"{"op":"get","ch":"l"}"#)["rev"] as? Int == 1, "nothing applied")
    }

    @Test func appendOnAnUnsetChannelAndSpliceAtZeroCreateTheList() {
        let harness = BrokerHarness()
        let client = harness.connect()
        #expect(harness.request(client, #"{"op":"splice","ch":"s","index":0,"insert":[1]}"#)["rev"] as? Int == 1)
        #expect(harness.request(client, #"{"op":"append","ch":"a","value":null}"#)["rev"] as? Int == 1)
        #expect(harness.request(client, #"{"op":"get","ch":"a"}"#)["value"] as? [Any] != nil)
    }

    /// The property the events exist for: a subscriber that applies them in order to what
    /// `current` gave it holds exactly the daemon's list, whatever the op sequence.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func subscriberMirrorEqualsGetAfterRandomOps(seed: UInt64) throws {
        let harness = BrokerHarness()
        let writer = harness.connect()
        let mirrorClient = harness.connect()
        var random = SplitMix(seed: seed)
        _ = harness.request(writer, #"{"op":"set","ch":"m","value":[0,1,2]}"#)
        harness.send(mirrorClient, #"{"op":"sub","ch":"m","current":true}"#)
        var mirror = ListMirror()
        let first = harness.frames(mirrorClient)
        #expect(first.count == 2 && first[1]["kind"] as? String == "current")
        for frame in first.dropFirst() { try mirror.apply(frame) }
        for step in 0..<300 {
            let count = mirror.elements.count
            let element = #"{"step":\#(step),"s":"a,]\"b"}"#
            let line: String
            switch random.next() % 6 {
            case 0, 1: line = #"{"op":"append","ch":"m","value":\#(element)}"#
            case 2 where count > 0:
                line = #"{"op":"assign","ch":"m","index":\#(random.next() % UInt64(count)),"value":\#(step)}"#
            case 3:
                let index = Int(random.next() % UInt64(count + 1))
                let remove = Int(random.next() % UInt64(count - index + 1))
                let inserts = (0..<Int(random.next() % 3)).map { _ in String(random.next() % 100) }
                line = #"{"op":"splice","ch":"m","index":\#(index),"remove":\#(remove),"insert":[\#(inserts.joined(separator: ", "))]}"#
            case 4 where random.next() % 10 == 0:
                line = #"{"op":"set","ch":"m","value":[\#(step), "x"]}"#
            case 5 where random.next() % 20 == 0:
                line = #"{"op":"del","ch":"m"}"#
            default:
                line = #"{"op":"append","ch":"m","value":[\#(step)]}"#
            }
            harness.send(writer, line)
            let answer = harness.frames(writer)
            #expect(answer.count == 1 && answer[0]["ok"] != nil, "\(line) → \(answer)")
            for frame in harness.frames(mirrorClient) { try mirror.apply(frame) }
        }
        let truth = harness.request(writer, #"{"op":"get","ch":"m"}"#)
        let expected = truth["value"] as? [Any] ?? []
        #expect(try canonical(mirror.elements) == (try canonical(expected)))
        #expect(mirror.rev == truth["rev"] as? Int)
    }

    private func canonical(_ list: [Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: list, options: [.sortedKeys, .fragmentsAllowed])
    }
}

/// A test subscriber's copy of a list, kept by applying events as the protocol describes.
struct ListMirror {
    var elements: [Any] = []
    var rev = 0

    enum MirrorError: Error { case gap(Int, Int), unexpected(String) }

    mutating func apply(_ frame: [String: Any]) throws {
        guard let kind = frame["kind"] as? String, let rev = frame["rev"] as? Int else {
            throw MirrorError.unexpected("\(frame)")
        }
        if kind != "current" && kind != "touch" && rev != self.rev + 1 { throw MirrorError.gap(self.rev, rev) }
        self.rev = rev
        switch kind {
        case "current", "set", "touch": elements = frame["value"] as? [Any] ?? []
        case "del": elements = []
        case "index":
            let index = frame["index"] as? Int ?? -1
            let value = frame["value"] ?? NSNull()
            if index == elements.count { elements.append(value) } else { elements[index] = value }
        case "splice":
            let index = frame["index"] as? Int ?? 0
            let remove = frame["remove"] as? Int ?? 0
            elements.replaceSubrange(index..<(index + remove), with: frame["insert"] as? [Any] ?? [])
        default: throw MirrorError.unexpected(kind)
        }
    }
}

/// A small seeded generator so random sequences are repeatable.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension BrokerHarness {
    /// Sends a line and takes the raw lines it queued for the sender.
    func lines(sending session: Session, _ line: String) -> [String] {
        send(session, line)
        return lines(session)
    }
}
