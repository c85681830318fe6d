@testable import Herald
import Testing

/// `IncomingEvent` reads an `event` frame in one pass (`EventFields`): every field must come
/// out as the per-key lookups gave it.
@Suite struct IncomingEventTests {
    private func event(_ line: String) -> IncomingEvent? {
        ServerFrame(Array(line.utf8)).flatMap(IncomingEvent.init(frame:))
    }

    @Test func readsEveryField() throws {
        let line = #"{"event":"a.b","sub":"s1","seq":7,"from":"c2","args":{"x":1},"last":true,"dropped":3,"replay":true,"kind":"splice","rev":9,"reply":"r1","index":2,"remove":1,"insert":[4,5],"data":{"k":"v"}}"#
        let incoming = try #require(event(line))
        let metadata = incoming.metadata
        #expect(metadata.channel.name == "a.b")
        #expect(metadata.subscription == "s1")
        #expect(metadata.seq == 7)
        #expect(metadata.sender == "c2")
        #expect(metadata.args?.description == #"{"x":1}"#)
        #expect(metadata.isLast)
        #expect(metadata.dropped == 3)
        #expect(metadata.isReplay)
        #expect(metadata.kind == "splice")
        #expect(metadata.rev == 9)
        #expect(metadata.replyToken == "r1")
        #expect(metadata.index == 2)
        #expect(metadata.remove == 1)
        #expect(metadata.insert?.description == "[4,5]")
        #expect(incoming.data?.description == #"{"k":"v"}"#)
    }

    @Test func absentWrongAndRepeatedFields() throws {
        let plain = try #require(event(#"{"event":"a","sub":"s1","data":1}"#))
        #expect(plain.metadata.sender == nil && plain.metadata.seq == nil && plain.metadata.args == nil)
        #expect(!plain.metadata.isLast && plain.metadata.dropped == 0 && !plain.metadata.isReplay)
        #expect(plain.metadata.kind == nil && plain.metadata.rev == nil && plain.metadata.replyToken == nil)
        // List fields only for list kinds.
        let set = try #require(event(#"{"event":"a","sub":"s1","kind":"set","index":1,"value":[1]}"#))
        #expect(set.metadata.index == nil)
        // State events carry `value`; `data` wins when both are there.
        #expect(set.data?.description == "[1]")
        #expect(event(#"{"event":"a","sub":"s1","value":1,"data":2}"#)?.data?.description == "2")
        // Wrong types read as absent; the first of a repeated key wins.
        let odd = try #require(event(#"{"event":"a","sub":"s1","seq":"7","last":1,"from":5,"seq":8}"#))
        #expect(odd.metadata.seq == nil && !odd.metadata.isLast && odd.metadata.sender == nil)
        // An escaped key is not the key (the frame reader compares plain bytes only).
        #expect(event(#"{"event":"a","sub":"s1","se\u0071":3}"#)?.metadata.seq == nil)
        // Without `event` or `sub` there is no event.
        #expect(event(#"{"event":"a","data":1}"#) == nil)
        #expect(event(#"{"sub":"s1","data":1}"#) == nil)
        #expect(event(#"{"event":7,"sub":"s1"}"#) == nil)
    }
}

/// `EventFields` compares packed keys written as literals: they must be `FieldKey`'s packing.
@Suite struct EventFieldsTests {
    @Test func literalKeysArePacked() {
        #expect(EventFields.Keys.all.count == 16)
        for (packed, name) in EventFields.Keys.all {
            #expect(FieldKey.packed(Array(name.utf8)) == packed, "\(name)")
        }
    }
}

/// The event path reads `event` lines straight from the read buffer (`EventFields(line:)`):
/// it must find what the general path (`ServerFrame`, then `EventFields(frame)`) finds, and
/// decline every line the general path would report or handle otherwise.
@Suite struct EventLineTests {
    /// The event as the general path reads it, and as the line path does.
    private func both(_ line: String) -> (frame: IncomingEvent?, line: IncomingEvent?) {
        let bytes = Array(line.utf8)
        let viaFrame = ServerFrame(bytes).flatMap(IncomingEvent.init(frame:))
        let viaLine = bytes.withUnsafeBytes { raw in
            var strings = RecentStrings()
            return EventFields(line: raw).flatMap { IncomingEvent(line: raw, fields: $0, strings: &strings) }
        }
        return (viaFrame, viaLine)
    }

    private func same(_ a: IncomingEvent?, _ b: IncomingEvent?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        let (x, y) = (a.metadata, b.metadata)
        return x.channel == y.channel && x.subscription == y.subscription && x.sender == y.sender && x.seq == y.seq
            && x.args == y.args && x.isLast == y.isLast && x.dropped == y.dropped && x.isReplay == y.isReplay
            && x.kind == y.kind && x.rev == y.rev && x.replyToken == y.replyToken && x.index == y.index
            && x.remove == y.remove && x.insert == y.insert && a.data == b.data
    }

    @Test func linesReadAsFramesDo() throws {
        let lines = [
            #"{"event":"a.b","sub":"s1","seq":7,"from":"c2","args":{"x":1},"last":true,"dropped":3,"replay":true,"kind":"splice","rev":9,"reply":"r1","index":2,"remove":1,"insert":[4,5],"data":{"k":"v"}}"#,
            #"{"event":"bench.decode","sub":"h1","seq":12,"from":"c3","data":{"id":1,"symbol":"ACME","price":123.45,"volume":1001,"live":true}}"#,
            // Strings with quotes, backslashes and braces on and across 8-byte boundaries.
            #"{"event":"a","sub":"s","data":{"text":"0123456\"}{][\\","more":["}","{",{"x":"\\\""}],"n":-1.5e3}}"#,
            #"{"event":"a","sub":"s","data":"a long string value \"with\" escapes \\ and } braces {"}"#,
            #"  {  "event" : "a" , "sub" : "s" , "data" : [ 1 , { "b" : [ ] } ] }  "#,
            #"{"event":"a","sub":"s","value":{"v":1}}"#,
            #"{"event":"a","sub":"s1","seq":"7","last":1,"from":5,"seq":8}"#,
            #"{"event":"a","sub":"s1","se\u0071":3}"#,
            #"{"event":"a","data":1}"#,
            #"{"event":7,"sub":"s1"}"#,
            #"{"event":"a","sub":"s","data":{"unterminated":"}"#,
            #"{"event":"a","sub":"s","data":{"x":1}} trailing"#,
            #"{"event":"a","sub":"s","data":{"deep":[[[[{"a":"]]]]"}]]]]}}"#,
            #"{"event":"a","sub":"s","data":-12.5e3}"#,
            #"{"event":"a","sub":"s","data":true }"#,
            #"{"event":"a","sub":"s","data":}"#,
            // The canonical shape (`EventFields.canonical`) and its near misses.
            #"{"event":"a.b","sub":"s1"}"#,
            #"{"event":"a.b","sub":"s1","seq":1}"#,
            #"{"event":"a.b","sub":"s1","from":"c1"}"#,
            #"{"event":"a.b","sub":"s1","data":[]}"#,
            #"{"event":"a.b","sub":"s1","seq":12,"from":"c1","data":"x"}"#,
            #"{"event":"a\u002eb","sub":"s1","seq":12,"from":"c1","data":1}"#,
            #"{"event":"a.b","sub":"s\"1","data":1}"#,
            #"{"event":"a.b","sub":"s1","seq":-3,"data":1}"#,
            #"{"event":"a.b","sub":"s1","seq":1.5,"data":1}"#,
            #"{"event":"a.b","sub":"s1","seq":1,"seq":2}"#,
            #"{"event":"a.b","sub":"s1","sub":"s2"}"#,
            #"{"event":"a.b","sub":"s1","from":"c1","seq":3}"#,
            #"{"event":"a.b","sub":"s1","seq":1} "#,
            #"{"event":"a.b","sub":"s1","seq":1"#,
            #"{"event":"a.b","sub":"é","seq":1}"#,
        ]
        for line in lines {
            let (frame, viaLine) = both(line)
            #expect(same(frame, viaLine), "\(line)")
        }
        #expect(both(lines[1]).line?.data?.description == #"{"id":1,"symbol":"ACME","price":123.45,"volume":1001,"live":true}"#)
        #expect(both(lines[2]).line?.data?.description == #"{"text":"0123456\"}{][\\","more":["}","{",{"x":"\\\""}],"n":-1.5e3}"#)
    }

    /// `data` is the last field of every daemon frame (docs/protocol.md, "Frames"), so the line
    /// path takes it to the closing brace without walking it: a payload that is malformed
    /// inside reaches the event as it came (a typed decode then reports it), while a frame
    /// whose tail does not end the way its `data` starts is left to the general path.
    @Test func theLastFieldIsTakenToTheClosingBraceUnwalked() throws {
        let inside = #"{"event":"a","sub":"s","data":{"x":"1}}"#
        let event = try #require(both(inside).line)
        #expect(event.data?.description == #"{"x":"1}"#)
        #expect(throws: HeraldClientError.self) { try event.decode([String: String].self) }
        #expect(both(inside).frame == nil, "the general path walks it and reports it")
        for declined in [#"{"event":"a","sub":"s","data":{"x":1},"seq":2}"#, #"{"event":"a","sub":"s","data":"x","n":[1]}"#,
                         #"{"event":"a","sub":"s","data":[1,{"a":2}}"#, #"{"event":"a","sub":"s","data":}"#] {
            let present = Array(declined.utf8).withUnsafeBytes { EventFields(line: $0) != nil }
            #expect(!present, "\(declined)")
        }
        #expect(both(#"{"event":"a","sub":"s","data":{"x":1},"seq":2}"#).frame?.metadata.seq == 2)
    }

    /// The I/O thread reuses the last event's channel, subscription and sender strings while
    /// the next event's bytes are the same, and only then.
    @Test func recentStringsAreReusedOnlyForTheSameBytes() throws {
        var strings = RecentStrings()
        func read(_ line: String) -> EventMetadata? {
            Array(line.utf8).withUnsafeBytes { raw in
                EventFields(line: raw).flatMap { IncomingEvent(line: raw, fields: $0, strings: &strings) }?.metadata
            }
        }
        let lines = [#"{"event":"a.b","sub":"s1","from":"c1","data":1}"#, #"{"event":"a.b","sub":"s1","from":"c1","data":2}"#,
                     #"{"event":"a.c","sub":"s1","from":"c2","data":3}"#, #"{"event":"a.b","sub":"s10","data":4}"#,
                     #"{"event":"a\u002eb","sub":"s1","from":"c2","data":5}"#, #"{"event":"a.b","sub":"s1","from":"c1","data":6}"#]
        let metadata = lines.map(read)
        let expected: [(String, String, String?)] = [("a.b", "s1", "c1"), ("a.b", "s1", "c1"), ("a.c", "s1", "c2"),
                                                     ("a.b", "s10", nil), ("a.b", "s1", "c2"), ("a.b", "s1", "c1")]
        for (got, want) in zip(metadata, expected) {
            #expect(got?.channel.name == want.0 && got?.subscription == want.1 && got?.sender == want.2, "\(String(describing: got))")
        }
        var bad = RecentStrings()
        _ = Array(#"{"event":"a","sub":"s","data":1}"#.utf8).withUnsafeBytes { raw in
            EventFields(line: raw).flatMap { IncomingEvent(line: raw, fields: $0, strings: &bad) }
        }
        let broken = Array(#"{"event":"a","sub":"s\x","data":1}"#.utf8).withUnsafeBytes { raw in
            EventFields(line: raw).flatMap { IncomingEvent(line: raw, fields: $0, strings: &bad) }
        }
        #expect(broken == nil, "a bad escape is not taken for the cached string")
    }

    @Test func otherLinesAreLeftToTheGeneralPath() {
        for line in [#"{"ok":true,"rid":1}"#, #"{"ev\u0065nt":"a","sub":"s"}"#, #"{"sub":"s","event":"a"}"#, "not json", "{}", #"{"event":"a","sub":"s""#] {
            let present = Array(line.utf8).withUnsafeBytes { EventFields(line: $0) != nil }
            #expect(!present, "\(line)")
        }
    }
}

/// Keys of up to 7 plain bytes are packed from one 8-byte load (`JSONCursor.shortKey`); every
/// other key takes the byte-by-byte path: both must pack as `FieldKey.packed` does.
@Suite struct FrameKeyTests {
    @Test func keysPackAsFieldKeyDoes() throws {
        let keys = ["", "a", "ab", "event", "dropped", "abcdefg", "abcdefgh", "abcdefghijk", #"a\"b"#, #"\u0061"#, "sé", "1234567\\\\"]
        for key in keys {
            for tail in [#","z":0}"#, "}", #","longer_tail_key":[1,2,3]}"#] {
                let line = #"{""# + key + #"":1"# + tail
                let frame = try #require(ServerFrame(Array(line.utf8)), "\(line)")
                let contents = Array(key.utf8)
                let expected = contents.contains(UInt8(ascii: "\\")) ? nil : FieldKey.packed(contents)
                #expect(frame.fields.first?.key.packed == expected, "\(line)")
                #expect(frame.fields.first?.range == (contents.count + 4)..<(contents.count + 5), "\(line)")
            }
        }
    }
}

/// Batches come back from the handlers' queue to be freed, and their storage reused, on the
/// I/O thread (`ReturnedBatches`).
@Suite struct ReturnedBatchesTests {
    private final class Token: Sendable {}

    @Test func givenBatchesAreFreedByTheReuserAndTheirStorageKept() throws {
        let returns = ReturnedBatches<Token>()
        #expect(returns.reuse() == nil, "nothing given back yet")
        weak var first: Token?
        weak var second: Token?
        do {
            let a = Token(), b = Token()
            (first, second) = (a, b)
            var batch = [a]
            batch.reserveCapacity(64)
            returns.give(batch)
            returns.give([b])
        }
        #expect(first != nil && second != nil, "held until the reuser takes them")
        let storage = try #require(returns.reuse())
        #expect(storage.isEmpty && storage.capacity >= 1)
        #expect(first == nil && second == nil, "every batch given back is freed by reuse")
        #expect(returns.reuse() == nil, "each batch is taken once")
    }
}
